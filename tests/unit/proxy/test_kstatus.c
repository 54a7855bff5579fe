/*
 * test_kstatus.c - byte-exact metav1.Status bodies (SEMANTICS 1.4, 2.4, 3.5, 4, 5): the
 * ready-made constructors, omitempty, escaping of every string, snprintf semantics.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/kstatus.h"

static char *status_body(const struct kstatus *st)
{
    size_t need = kstatus_json(st, NULL, 0);
    char *buf = malloc(need + 1);

    cr_assert_eq(kstatus_json(st, buf, need + 1), need);
    cr_assert_eq(strlen(buf), need);
    return buf;
}

static void expect_status(const struct kstatus *st, const char *want)
{
    char *got = status_body(st);

    cr_expect_str_eq(got, want);
    free(got);
}

/* ---- Status bodies (SEMANTICS 1.4, 2.4, 3.5, 4, 5) -------------------------------------- */

Test(kstatus, status_504_too_large_rv)
{
    struct kstatus st;

    kstatus_too_large_rv(&st, 250, 200);
    cr_expect_eq(st.code, 504);
    cr_expect_eq(st.retry_after, 1);
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"Timeout: Too large resource version: 250, "
                       "current: 200\",\"reason\":\"Timeout\",\"details\":{\"causes\":[{"
                       "\"reason\":\"ResourceVersionTooLarge\",\"message\":\"Too large "
                       "resource version\"}],\"retryAfterSeconds\":1},\"code\":504}");
}

Test(kstatus, status_410_watch_too_old)
{
    struct kstatus st;

    kstatus_too_old(&st, 98, 99);
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"too old resource version: 98 (99)\","
                       "\"reason\":\"Expired\",\"code\":410}");
}

Test(kstatus, status_404_core_pods)
{
    struct kstatus st;

    kstatus_not_found(&st, "", "pods", "zzz");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"pods \\\"zzz\\\" not found\",\"reason\":"
                       "\"NotFound\",\"details\":{\"name\":\"zzz\",\"kind\":\"pods\"},"
                       "\"code\":404}");
    kstatus_not_found(&st, NULL, "pods", "zzz");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"pods \\\"zzz\\\" not found\",\"reason\":"
                       "\"NotFound\",\"details\":{\"name\":\"zzz\",\"kind\":\"pods\"},"
                       "\"code\":404}");
}

Test(kstatus, status_404_grouped_resource)
{
    struct kstatus st;

    kstatus_not_found(&st, "apps", "deployments", "x");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"deployments.apps \\\"x\\\" not found\","
                       "\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"group\":\"apps\","
                       "\"kind\":\"deployments\"},\"code\":404}");
}

Test(kstatus, status_404_name_quoted_like_go_percent_q)
{
    struct kstatus st;

    /* %q escapes quotes, backslashes and controls; JSON then escapes them again. */
    kstatus_not_found(&st, "", "pods", "a\"b\\c\x01\xff");
    cr_expect_str_eq(st.message, "pods \"a\\\"b\\\\c\\x01\\xff\" not found");
    kstatus_not_found(&st, "", "pods", "caf\xc3\xa9\xc2\xa0");
    cr_expect_str_eq(st.message, "pods \"caf\xc3\xa9\\u00a0\" not found");
    /* kube_json.c's own IsPrint table called U+08E2 printable; Go's does not */
    kstatus_not_found(&st, "", "pods", "\xe0\xa3\xa2");
    cr_expect_str_eq(st.message, "pods \"\\u08e2\" not found");
}

Test(kstatus, status_429_not_ready)
{
    struct kstatus st;

    kstatus_not_ready(&st, 5.0);
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"storage is (re)initializing\",\"reason\":"
                       "\"TooManyRequests\",\"details\":{\"retryAfterSeconds\":1},"
                       "\"code\":429}");
}

Test(kstatus, not_ready_retry_after_curve)
{
    static const struct {
        double t;
        int want;
    } cases[] = {
        {0, 1},    {-5, 1},   {11.5, 1},  {11.6, 2},  {18.2, 2}, {18.4, 3},
        {23.0, 3}, {23.2, 4}, {56.6, 29}, {56.7, 30}, {60, 30},  {1e9, 30},
    };
    struct kstatus st;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kstatus_not_ready(&st, cases[i].t);
        cr_expect_eq(st.retry_after, cases[i].want, "t=%g got %d", cases[i].t, st.retry_after);
    }
    kstatus_not_ready(&st, NAN);
    cr_expect_eq(st.retry_after, 1);
    kstatus_not_ready(&st, INFINITY);
    cr_expect_eq(st.retry_after, 30);
}

Test(kstatus, status_422_invalid_list_options)
{
    static const char msg[] = "Forbidden: resourceVersionMatch is forbidden unless "
                              "resourceVersion is provided";
    struct kstatus st;

    kstatus_set(&st, 422, "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: "
                "resourceVersionMatch: %s",
                msg);
    st.group = "meta.k8s.io";
    st.kind = "ListOptions";
    st.causes[0] = (struct kstatus_cause){"FieldValueForbidden", msg, "resourceVersionMatch"};
    st.n_causes = 1;
    expect_status(&st,
                  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                  "\"Failure\",\"message\":\"ListOptions.meta.k8s.io \\\"\\\" is invalid: "
                  "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                  "resourceVersion is provided\",\"reason\":\"Invalid\",\"details\":{\"group\":"
                  "\"meta.k8s.io\",\"kind\":\"ListOptions\",\"causes\":[{\"reason\":"
                  "\"FieldValueForbidden\",\"message\":\"Forbidden: resourceVersionMatch is "
                  "forbidden unless resourceVersion is provided\",\"field\":"
                  "\"resourceVersionMatch\"}]},\"code\":422}");
}

Test(kstatus, status_500_invalid_rv_has_no_reason)
{
    struct kstatus st;

    kstatus_set(&st, 500, NULL,
                "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: "
                "parsing \"abc\": invalid syntax");
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Failure\",\"message\":\"resourceVersion: Invalid value: \\\"abc\\\": "
                       "strconv.ParseUint: parsing \\\"abc\\\": invalid syntax\",\"code\":500}");
}

Test(kstatus, status_continue_in_metadata_and_omitempty)
{
    struct kstatus st;

    kstatus_set(&st, 410, "Expired", "The provided continue parameter is too old.");
    st.continue_tok = "eyJ2Ijo";
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":"
                       "\"eyJ2Ijo\"},\"status\":\"Failure\",\"message\":\"The provided continue "
                       "parameter is too old.\",\"reason\":\"Expired\",\"code\":410}");
    /* Empty strings, zero code and cause members are omitted; details {} when only "set". */
    kstatus_set(&st, 0, "", "%s", "");
    st.name = "";
    st.causes[0] = (struct kstatus_cause){"R", NULL, ""};
    st.n_causes = 1;
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                       "\"Success\",\"details\":{\"causes\":[{\"reason\":\"R\"}]}}");
}

Test(kstatus, status_escapes_every_string)
{
    struct kstatus st;

    kstatus_set(&st, 400, "Bad<Request>", "a&b\n");
    st.name = "n\"";
    st.continue_tok = "<";
    expect_status(&st, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":"
                       "\"\\u003c\"},\"status\":\"Failure\",\"message\":\"a\\u0026b\\n\","
                       "\"reason\":\"Bad\\u003cRequest\\u003e\",\"details\":{\"name\":"
                       "\"n\\\"\"},\"code\":400}");
}

Test(kstatus, status_snprintf_semantics)
{
    struct kstatus st;
    char small[16];
    char *full;
    size_t need;

    kstatus_too_old(&st, 1, 2);
    full = status_body(&st);
    memset(small, 'X', sizeof(small));
    need = kstatus_json(&st, small, sizeof(small));
    cr_expect_eq(need, strlen(full));
    cr_expect_eq(small[15], '\0');
    cr_expect_eq(strncmp(small, full, 15), 0);
    cr_expect_eq(kstatus_json(&st, small, 0), need);
    free(full);
}
