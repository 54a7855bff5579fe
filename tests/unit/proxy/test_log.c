/*
 * test_log.c - proxy/log: the record formats, black-box through log.h. stderr is captured in
 * a temporary file; JSON records are parsed back with cJSON (every line must be one valid
 * object with ts, level, src and msg strings), text records are matched as logfmt.
 * Each Test runs in its own process (Criterion), so the process-wide format never leaks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "proxy/log.h"

/* Runs <body> with stderr redirected; leaves what it wrote in <out>. */
#define CAPTURE(out, cap, body)                                                                    \
    do {                                                                                           \
        FILE *f_ = tmpfile();                                                                      \
        int saved_ = dup(STDERR_FILENO);                                                           \
        size_t n_;                                                                                 \
        cr_assert(f_ != NULL && saved_ >= 0);                                                      \
        fflush(stderr);                                                                            \
        dup2(fileno(f_), STDERR_FILENO);                                                           \
        body;                                                                                      \
        dup2(saved_, STDERR_FILENO);                                                               \
        close(saved_);                                                                             \
        rewind(f_);                                                                                \
        n_ = fread((out), 1, (cap)-1, f_);                                                         \
        (out)[n_] = '\0';                                                                          \
        fclose(f_);                                                                                \
    } while (0)

/* Parses line <i> (0-based) of <text> as one JSON object; the caller deletes it. */
static cJSON *json_line(const char *text, int i)
{
    const char *p = text;
    const char *nl;
    cJSON *o;

    for (; i > 0; i--) {
        p = strchr(p, '\n');
        cr_assert(p != NULL, "no line %d in:\n%s", i, text);
        p++;
    }
    nl = strchr(p, '\n');
    cr_assert(nl != NULL, "record not ended by a newline: %s", p);
    o = cJSON_ParseWithLength(p, (size_t)(nl - p));
    cr_assert(o != NULL && cJSON_IsObject(o), "not one JSON object: %.*s", (int)(nl - p), p);
    return o;
}

static const char *member(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    cr_assert(cJSON_IsString(v), "member %s missing or not a string", key);
    return v->valuestring;
}

Test(log, text_records_keep_the_logfmt_line)
{
    char out[4096];

    CAPTURE(out, sizeof(out),
            log_info("reflector", "resource=%s rv=%d msg=\"%s\"", "pods", 12345,
                     "watch closed, relisting"));
    cr_assert(strncmp(out, "ts=", 3) == 0, "%s", out);
    cr_assert(strstr(out, "Z level=info src=reflector resource=pods rv=12345 msg=\"watch "
                          "closed, relisting\"\n") != NULL,
              "%s", out);
}

Test(log, json_records_turn_key_value_pairs_into_members)
{
    char out[4096];
    cJSON *o;

    log_set_format(LOG_FORMAT_JSON);
    CAPTURE(out, sizeof(out),
            log_warn("passthrough", "req=\"GET /api/v1/pods\" err=\"%s\" msg=\"upstream down\"",
                     "Failed to connect to 127.0.0.1 port 1: \"refused\""));
    o = json_line(out, 0);
    cr_assert_str_eq(member(o, "level"), "warn");
    cr_assert_str_eq(member(o, "src"), "passthrough");
    cr_assert_str_eq(member(o, "req"), "GET /api/v1/pods");
    cr_assert_str_eq(member(o, "err"), "Failed to connect to 127.0.0.1 port 1: \"refused\"");
    cr_assert_str_eq(member(o, "msg"), "upstream down");
    cr_assert_eq(strlen(member(o, "ts")), strlen("2026-11-29T20:30:05.123Z"));
    cJSON_Delete(o);
}

Test(log, json_text_that_is_not_pairs_becomes_msg)
{
    char out[4096];
    cJSON *o;

    log_set_format(LOG_FORMAT_JSON);
    CAPTURE(out, sizeof(out), log_error("http", "plain words, no pairs"));
    o = json_line(out, 0);
    cr_assert_str_eq(member(o, "msg"), "plain words, no pairs");
    cJSON_Delete(o);
}

Test(log, json_fields_escape_quotes_controls_and_invalid_utf8)
{
    char out[4096];
    const struct log_field f[] = {
        {"user", "al\"ice\\"},
        {"reason", "line1\nline2\ttab \x01 \xff"},
    };
    cJSON *o;

    log_set_format(LOG_FORMAT_JSON);
    CAPTURE(out, sizeof(out), log_fields(LOG_LEVEL_WARN, "request", f, 2, "request denied"));
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);
    o = json_line(out, 0);
    cr_assert_str_eq(member(o, "user"), "al\"ice\\");
    cr_assert_str_eq(member(o, "reason"), "line1\nline2\ttab \x01 \xef\xbf\xbd");
    cr_assert_str_eq(member(o, "msg"), "request denied");
    cJSON_Delete(o);
}

Test(log, text_fields_quote_what_needs_quotes)
{
    char out[4096];
    const struct log_field f[] = {
        {"user", "system:serviceaccount:kube-system:x"},
        {"namespace", ""},
        {"reason", "Forbidden: no \"rule\""},
    };

    CAPTURE(out, sizeof(out), log_fields(LOG_LEVEL_WARN, "request", f, 3, "request denied"));
    cr_assert(strstr(out, " level=warn src=request user=system:serviceaccount:kube-system:x "
                          "namespace=\"\" reason=\"Forbidden: no \\\"rule\\\"\" "
                          "msg=\"request denied\"\n") != NULL,
              "%s", out);
}

Test(log, ratelimited_json_records_carry_the_suppressed_count)
{
    char out[8192];
    struct log_ratelimit rl = {0};
    cJSON *o;

    log_set_format(LOG_FORMAT_JSON);
    CAPTURE(out, sizeof(out), {
        log_ratelimited(&rl, 1000000, LOG_LEVEL_WARN, "t", "n=1 msg=\"x\"");
        log_ratelimited(&rl, 1000000, LOG_LEVEL_WARN, "t", "n=2 msg=\"x\"");
        log_ratelimited(&rl, 1000000, LOG_LEVEL_WARN, "t", "n=3 msg=\"x\"");
        rl.last_ms = 1; /* long ago: the next one goes out */
        log_ratelimited(&rl, 1000000, LOG_LEVEL_WARN, "t", "n=4 msg=\"x\"");
    });
    o = json_line(out, 1);
    cr_assert_str_eq(member(o, "n"), "4");
    cr_assert_str_eq(member(o, "suppressed"), "2");
    cJSON_Delete(o);
}

Test(log, a_record_too_long_for_json_is_replaced_by_a_short_valid_one)
{
    static char big[20000];
    char out[4096];
    const struct log_field f[] = {{"reason", big}};
    cJSON *o;

    memset(big, 'x', sizeof(big) - 1);
    log_set_format(LOG_FORMAT_JSON);
    CAPTURE(out, sizeof(out), log_fields(LOG_LEVEL_WARN, "request", f, 1, "m"));
    o = json_line(out, 0);
    cr_assert(strstr(member(o, "msg"), "dropped") != NULL);
    cJSON_Delete(o);
}

Test(log, formats_parse_by_name)
{
    enum log_format f;

    cr_assert_eq(log_parse_format("json", &f), 0);
    cr_assert_eq(f, LOG_FORMAT_JSON);
    cr_assert_eq(log_parse_format("text", &f), 0);
    cr_assert_eq(f, LOG_FORMAT_TEXT);
    cr_assert_eq(log_parse_format("JSON", &f), -22);
    cr_assert_eq(log_parse_format("", &f), -22);
}
