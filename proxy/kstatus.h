/*
 * kstatus.h - metav1.Status bodies, the one place kwp writes them (SEMANTICS 5).
 *
 * A struct kstatus says what kube-apiserver would answer (code, reason, message, details);
 * kstatus_json writes it byte for byte as the apiserver's encoding/json does, and the ready-
 * made constructors below fill the texts SEMANTICS fixes. http_server.c maps return codes to
 * the HTTP status and sends the body. Pure functions of their arguments; any thread.
 */
#ifndef KWP_PROXY_KSTATUS_H
#define KWP_PROXY_KSTATUS_H

#include <stddef.h>
#include <stdint.h>

struct kstatus_cause {
    const char *reason; /* "FieldValueForbidden", "ResourceVersionTooLarge", ... */
    const char *message;
    const char *field; /* NULL = omitted */
};

#define KSTATUS_MAX_CAUSES 8

/* A metav1.Status. NULL or empty strings and zero numbers are omitted as Go's omitempty would;
 * "details" appears when name, group, kind or uid is non-NULL, or there are causes or a retry.
 * The const char * members are borrowed: they must outlive every kstatus_json call. */
struct kstatus {
    int code;                 /* HTTP code, also "code" in the body */
    const char *reason;       /* NULL = no "reason" member (the 500 invalid-rv case) */
    char message[1024];       /* "message" */
    const char *continue_tok; /* metadata.continue, NULL = metadata is {} */
    /* details: present when any of these is set */
    const char *name;
    const char *group;
    const char *kind;
    const char *uid;
    struct kstatus_cause causes[KSTATUS_MAX_CAUSES];
    size_t n_causes;
    int retry_after; /* details.retryAfterSeconds (and the Retry-After header); 0 = none */
};

/* Clears <st> and fills code, reason and message (printf-style, truncated to fit). */
void kstatus_set(struct kstatus *st, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Writes the Status as compact JSON with key order kind, apiVersion, metadata, status,
 * message, reason, details, code (no trailing newline). "status" is "Failure" for code >= 400,
 * else "Success"; strings are escaped as encoding/json does (gotext_json_quote). Returns the
 * length that the full body needs; writes at most cap-1 bytes plus a NUL (snprintf semantics;
 * <buf> may be NULL when cap is 0).
 */
size_t kstatus_json(const struct kstatus *st, char *buf, size_t cap);

/* Ready-made bodies from SEMANTICS: */
/* 504 Too large resource version (with cause and retryAfterSeconds 1). */
void kstatus_too_large_rv(struct kstatus *st, uint64_t requested, uint64_t current);
/* 410 watch too old: "too old resource version: <rv> (<boundary>)", reason Expired. */
void kstatus_too_old(struct kstatus *st, uint64_t rv, uint64_t boundary);
/* 404: `<plural>[.<group>] "<name>" not found` (name quoted like Go's %q) with details name,
 * group, kind=<plural>. <st> borrows <group>, <plural> and <name>. */
void kstatus_not_found(struct kstatus *st, const char *group, const char *plural, const char *name);
/* 429 storage is (re)initializing, retryAfter from seconds since the state changed
 * (int(min(30, max(1, e^(0.06 t))))). */
void kstatus_not_ready(struct kstatus *st, double seconds_unready);

#endif
