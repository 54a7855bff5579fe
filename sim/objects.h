/*
 * objects.h - the simulator's write rules: what it does to an object on a create, an update
 * and a merge patch, as kube-apiserver's generic registry does it, and the kinds table it
 * checks bodies against. kube's create-time defaults are defaults.h's, Service IPs and node
 * ports alloc.h's, generated objects gen.h's.
 *
 * All functions work on cJSON trees the caller owns and are pure (no globals, no I/O): any
 * thread, no locks. The simulator keeps the printed bytes, never the tree (STYLE: cJSON trees
 * are temporary). cJSON holds numbers as double and prints them with %1.15g/%1.17g, so an
 * integer above 2^53 or an unusual number format would change in a round trip; the
 * simulator accepts that for the objects it writes itself.
 *
 * Error codes of the write helpers, and the Status the caller answers with:
 *   -EINVAL  400 BadRequest   (namespace or name mismatch, wrong kind, not an object)
 *   -EDOM    422 Invalid      (validation: missing name and generateName)
 *   -EBUSY   409 Conflict     (stale metadata.resourceVersion on update)
 *   -EIO     500 InternalError, no reason (metadata.resourceVersion set on create: the
 *            apiserver's storage layer refuses it with a plain error)
 * The exact message (the Status "message") is written to <err>.
 */
#ifndef KWP_SIM_OBJECTS_H
#define KWP_SIM_OBJECTS_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "proxy/apires.h"

/* Length of the random suffix a generateName gets, and the longest prefix kept (63 - 5). */
#define OBJECTS_GENERATE_SUFFIX_LEN 5
#define OBJECTS_GENERATE_PREFIX_MAX 58

/* ---- kinds --------------------------------------------------------------------------- */

/*
 * The built-in description (group, version, kind, list kind, scope) of the resource with
 * plural <plural> in any group, from proxy/apires.c's table; NULL when it is not built in.
 */
const struct apires_kind *objects_type(const char *plural);

/* The kind of <plural> ("pods" -> "Pod", "deployments" -> "Deployment"); NULL when unknown.
 * The list kind is objects_type(plural)->list_kind. */
const char *objects_kind(const char *plural);

/* ---- writes ---------------------------------------------------------------------------- */

/*
 * Prepares <obj>, the body of a create of <resource> (a plural), for storage, in the order
 * kube-apiserver checks: the kind (filled in when absent for a built-in resource; another
 * kind is -EINVAL "the object provided is unrecognized (must be of type <Kind>)"), the
 * namespace (<ns> NULL or "", or a built-in cluster-scoped resource, clears metadata.namespace;
 * otherwise
 * an empty one is set to <ns> and a different one is -EINVAL "the namespace of the provided
 * object does not match the namespace sent on the request"), the name (<name_from_url>,
 * when not NULL, must equal metadata.name: -EINVAL "the name of the object (<a>) does not
 * match the name on the URL (<b>)"; with no name a metadata.generateName gets
 * OBJECTS_GENERATE_SUFFIX_LEN characters of kube's alphabet "bcdfghjklmnpqrstvwxz2456789",
 * derived from <uid> and <rv> so a run is reproducible; with neither it is -EDOM
 * "<Kind>[.<group>] "" is invalid: metadata.name: Required value: name or generateName is
 * required"), then a set metadata.resourceVersion (-EIO "resourceVersion should not be set
 * on objects to be created").
 * On success it sets metadata.uid=<uid>, creationTimestamp=<created> (RFC 3339),
 * resourceVersion=<rv> as a decimal string, removes deletionTimestamp,
 * deletionGracePeriodSeconds and selfLink, sets generation 1 when the object has a "spec"
 * (except Namespace, Node and Service, whose strategies never set it; others drop any
 * generation sent) and folds a Secret's stringData into data (base64) as the apiserver does.
 * A key repeated in the body keeps its last value, at every level (Go's rule for maps and
 * unstructured objects; Go merges a repeated typed sub-object such as metadata, this does
 * not), so the stored object never has two members of one name.
 * Then kube's create-time defaults (defaults_apply: a Namespace's strategy, the workload
 * kinds' v1 defaults; a Service's IPs and node ports come from alloc_service afterwards).
 * Update does none of this (a PATCH applies to the defaulted object).
 * Returns 0 or a code from the table above with the message in <err> (err_len bytes, may
 * be 0). <obj> may be partly modified on error. Any thread.
 */
int objects_prepare_create(cJSON *obj, const char *resource, const char *ns,
                           const char *name_from_url, uint64_t rv, const char *uid,
                           const char *created, char *err, size_t err_len);

/*
 * Prepares <new_obj>, the body of an update (PUT, or a patched copy of <old_obj>) of the
 * stored <old_obj>, for storage. <resource> is named as kube names it in errors: the plural,
 * with ".<group>" added from objects_type() for built-in resources outside the core group
 * (pass "widgets.example.com" for others). <ns> and <name> are the request's (NULL: taken
 * from <old_obj>; <ns> "" or a built-in cluster-scoped resource: none); a different
 * metadata.name is -EINVAL "the name of the object (<a>) does not match the name on the URL
 * (<b>)" (an empty one "...(<b> based on URL) was undeterminable: name must be provided"),
 * a different metadata.namespace -EINVAL "the namespace of the object (<a>) does not match
 * the namespace on the request (<b>)" (handlers' checkName); an empty one is filled in.
 * A metadata.resourceVersion that is set and differs from <old_obj>'s is -EBUSY "Operation
 * cannot be fulfilled on <resource> "<name>": the object has been modified; please apply
 * your changes to the latest version and try again" (a non-numeric one always differs);
 * an unset or "0" one is an unconditional update. kind and apiVersion absent are taken from
 * <old_obj>; uid and creationTimestamp are always <old_obj>'s; generation is <old_obj>'s,
 * plus one when "spec" changed (none when <old_obj> has none); resourceVersion becomes
 * <rv>; a Secret's stringData is folded into data. "status" is kept from the request: the
 * simulator has no status subresource, and its churn writes status through here.
 * Repeated keys in <new_obj> keep their last value, as for objects_prepare_create.
 * Returns 0, -EINVAL, -EBUSY, with the message in <err>. Any thread.
 */
int objects_prepare_update(cJSON *new_obj, const cJSON *old_obj, const char *resource,
                           const char *ns, const char *name, uint64_t rv, char *err,
                           size_t err_len);

/*
 * Applies <patch> to <target> in place as an RFC 7386 JSON merge patch: a null member
 * deletes, an object member merges recursively (into {} when the target member is not an
 * object), any other value replaces. Both must be objects (a non-object patch would replace
 * the whole object, which no Kubernetes PATCH allows): -EINVAL. The simulator also applies
 * strategic merge patches (application/strategic-merge-patch+json) with this function;
 * that differs from kube only for lists with a patch merge key (containers, env, ...), which
 * kube merges by key and this replaces, and for $patch/$retainKeys directives, which are
 * kept as ordinary members. Returns 0 or -EINVAL. Any thread.
 */
int objects_merge_patch(cJSON *target, const cJSON *patch);

#endif
