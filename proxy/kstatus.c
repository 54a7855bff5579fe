/*
 * kstatus.c - metav1.Status bodies (see kstatus.h).
 *
 * The body is built in one sbuf over the caller's storage, so a short buffer gets a correct
 * prefix and the full length back, as snprintf would; member order and omitempty follow
 * apimachinery's Status struct. No globals, no locks: any thread.
 */
#include "proxy/kstatus.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cache/gotext.h"
#include "cache/sbuf.h"

void kstatus_set(struct kstatus *st, int code, const char *reason, const char *fmt, ...)
{
    va_list ap;

    memset(st, 0, sizeof(*st));
    st->code = code;
    st->reason = reason;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof(st->message), fmt, ap);
    va_end(ap);
}

static bool str_set(const char *s)
{
    return s != NULL && s[0] != '\0';
}

static void put_json_str(struct sbuf *sb, const char *s)
{
    gotext_json_quote(sb, s, strlen(s));
}

/* Appends ,"<key>":<quoted val> (or without the comma for the first member) if val is set. */
static void put_member_str(struct sbuf *sb, bool *first, const char *key, const char *val)
{
    if (!str_set(val)) {
        return;
    }
    sbuf_str(sb, *first ? "\"" : ",\"");
    sbuf_str(sb, key);
    sbuf_str(sb, "\":");
    put_json_str(sb, val);
    *first = false;
}

static void put_details(struct sbuf *sb, const struct kstatus *st)
{
    size_t n_causes = st->n_causes < KSTATUS_MAX_CAUSES ? st->n_causes : KSTATUS_MAX_CAUSES;
    bool first = true;

    sbuf_str(sb, ",\"details\":{");
    put_member_str(sb, &first, "name", st->name);
    put_member_str(sb, &first, "group", st->group);
    put_member_str(sb, &first, "kind", st->kind);
    put_member_str(sb, &first, "uid", st->uid);
    if (n_causes > 0) {
        sbuf_str(sb, first ? "\"causes\":[" : ",\"causes\":[");
        for (size_t i = 0; i < n_causes; i++) {
            bool cfirst = true;

            sbuf_str(sb, i == 0 ? "{" : ",{");
            put_member_str(sb, &cfirst, "reason", st->causes[i].reason);
            put_member_str(sb, &cfirst, "message", st->causes[i].message);
            put_member_str(sb, &cfirst, "field", st->causes[i].field);
            sbuf_str(sb, "}");
        }
        sbuf_str(sb, "]");
        first = false;
    }
    if (st->retry_after != 0) {
        sbuf_str(sb, first ? "" : ",");
        sbuf_printf(sb, "\"retryAfterSeconds\":%d", st->retry_after);
    }
    sbuf_str(sb, "}");
}

size_t kstatus_json(const struct kstatus *st, char *buf, size_t cap)
{
    struct sbuf sb;
    bool first = true;

    sbuf_init_fixed(&sb, buf, cap);
    sbuf_str(&sb, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{");
    put_member_str(&sb, &first, "continue", st->continue_tok);
    sbuf_str(&sb, st->code >= 400 ? "},\"status\":\"Failure\"" : "},\"status\":\"Success\"");
    first = false;
    if (st->message[0] != '\0') {
        sbuf_str(&sb, ",\"message\":");
        gotext_json_quote(&sb, st->message, strnlen(st->message, sizeof(st->message)));
    }
    put_member_str(&sb, &first, "reason", st->reason);
    if (st->name != NULL || st->group != NULL || st->kind != NULL || st->uid != NULL ||
        st->n_causes > 0 || st->retry_after != 0) {
        put_details(&sb, st);
    }
    if (st->code != 0) {
        sbuf_printf(&sb, ",\"code\":%d", st->code);
    }
    sbuf_str(&sb, "}");
    return sbuf_need(&sb);
}

void kstatus_too_large_rv(struct kstatus *st, uint64_t requested, uint64_t current)
{
    kstatus_set(st, 504, "Timeout",
                "Timeout: Too large resource version: %" PRIu64 ", current: %" PRIu64, requested,
                current);
    st->causes[0].reason = "ResourceVersionTooLarge";
    st->causes[0].message = "Too large resource version";
    st->n_causes = 1;
    st->retry_after = 1;
}

void kstatus_too_old(struct kstatus *st, uint64_t rv, uint64_t boundary)
{
    kstatus_set(st, 410, "Expired", "too old resource version: %" PRIu64 " (%" PRIu64 ")", rv,
                boundary);
}

void kstatus_not_found(struct kstatus *st, const char *group, const char *plural, const char *name)
{
    char quoted[sizeof(st->message)];
    struct sbuf sb;

    name = name != NULL ? name : "";
    plural = plural != NULL ? plural : "";
    /* apimachinery NewNotFound: fmt.Sprintf("%s %q not found", qualifiedResource, name). */
    sbuf_init_fixed(&sb, quoted, sizeof(quoted));
    gotext_quote(&sb, name, strlen(name));
    if (str_set(group)) {
        kstatus_set(st, 404, "NotFound", "%s.%s %s not found", plural, group, quoted);
    } else {
        kstatus_set(st, 404, "NotFound", "%s %s not found", plural, quoted);
    }
    st->name = name;
    st->group = str_set(group) ? group : NULL;
    st->kind = plural;
}

void kstatus_not_ready(struct kstatus *st, double seconds_unready)
{
    /* cacher/util.go calculateRetryAfterForUnreadyCache; fmax/fmin also absorb NaN. */
    double ra = fmin(30.0, fmax(1.0, exp(0.06 * seconds_unready)));

    kstatus_set(st, 429, "TooManyRequests", "storage is (re)initializing");
    st->retry_after = (int)ra;
}
