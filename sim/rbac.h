/*
 * rbac.h - the simulator's authorizer (--authorization-rules): an RBAC-like rule file read
 * once, then evaluated for every request, impersonation check and SubjectAccessReview, with
 * RBAC's matching of a PolicyRule and the reasons a SubjectAccessReview carries (the file
 * format and the evaluation order are below).
 * A struct rbac is built once, then only read: any number of threads may evaluate it; no
 * locks. Depends on identity.h and review.h.
 */
#ifndef KWP_SIM_RBAC_H
#define KWP_SIM_RBAC_H

#include <stddef.h>

#include "proxy/identity.h"
#include "proxy/review.h"

struct rbac;

/*
 * The file: one rule per line; blank lines and lines whose first non-blank is '#' are
 * ignored. A rule is `allow` or `deny`, then blank-separated KEY=VALUE fields, each VALUE a
 * comma-separated list without blanks in which `""` stands for the empty string:
 *
 *   allow name=readers groups=devs verbs=get,list,watch apiGroups="",apps resources=pods,pods/log
 *   allow users=alice verbs=get apiGroups="" resources=pods resourceNames=x namespaces=b
 *   allow groups=system:authenticated verbs=get nonResourceURLs=/api*,/version
 *   deny  users=mallory verbs=* apiGroups=* resources=*
 *
 * Keys: name (one value: how reasons name the rule; default "line-N"), users, groups (the
 * subjects: at least one), verbs (required), apiGroups, resources, resourceNames, namespaces,
 * nonResourceURLs. Matching is RBAC's (rbac/v1 PolicyRule): '*' in verbs, apiGroups and
 * resources matches all, "pods/log" names a subresource and "*" + "/log" every resource's, an
 * empty resourceNames matches every name, nonResourceURLs match exactly, "*" matches all and
 * a trailing '*' is a prefix match. A rule with resources needs apiGroups (RBAC's validation).
 * namespaces limits a rule to resource requests in those namespaces (a RoleBinding's reach);
 * without it the rule holds everywhere, cluster scope included (a ClusterRoleBinding's).
 *
 * Evaluation: a member of system:masters is always allowed (kube-apiserver's privileged group,
 * reason ""); else the first matching deny rule denies (an explicit deny, reason
 * `denied by rule "NAME"`); else the first matching allow rule allows (reason
 * `RBAC: allowed by rule "NAME" to User "alice"` or `... to Group "devs"`); else no opinion
 * (reason "", which RBAC gives: the 403 carries no ": REASON").
 */

#define RBAC_MAX_BYTES (1024 * 1024) /* a larger rule file is refused */
#define RBAC_MAX_RULES 10000
#define RBAC_MAX_LINE 8192   /* bytes of one line */
#define RBAC_MAX_VALUES 1024 /* list items of one field */

#define RBAC_PRIVILEGED_GROUP "system:masters"

/*
 * Parses the rule text data[0..len); <name> names the file in errors. Returns a new rule set
 * (the caller owns it: rbac_free), or NULL with "NAME:LINE: what is wrong" in <err>: an
 * unknown keyword or key, a repeated key, a field without '=', an empty list item (write
 * ""), '*' mixed into a list where it has no meaning (users, groups, names, namespaces),
 * a rule without subjects or verbs or without resources or nonResourceURLs, resources
 * without apiGroups, resourceNames without resources, namespaces with nonResourceURLs, a
 * NUL byte, or a cap above exceeded.
 */
struct rbac *rbac_parse(const char *data, size_t len, const char *name, char *err, size_t err_len);

/* Reads and parses file <path> (rbac_parse's contract; an unreadable file is an error). */
struct rbac *rbac_load(const char *path, char *err, size_t err_len);

/* Frees <r>. NULL-safe. */
void rbac_free(struct rbac *r);

/* Number of rules. */
size_t rbac_len(const struct rbac *r);

/*
 * Decides whether <id> may do <a> (see the evaluation above). Sets *reason to a new string
 * (the caller frees it; "" when none). Returns the decision.
 */
enum review_decision rbac_authorize(const struct rbac *r, const struct identity *id,
                                    const struct review_attrs *a, char **reason);

#endif
