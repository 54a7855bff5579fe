/*
 * test_evscan.c - load/evscan.h: type, metadata.resourceVersion, the kwp.io/stamp-ns and
 * initial-events-end annotations and an ERROR's code, out of real-shaped watch lines in any
 * member order; list rv from a body prefix; every truncation of a line is -EPROTO, never a
 * read past the end (run under ASan).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/evscan.h"

#define T_TIMEOUT 30

/* A MODIFIED pod as kube-apiserver writes it, with a stamp, and hostile strings around. */
static const char POD_EVENT[] =
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":"
    "{\"name\":\"p-\\\"1}\",\"namespace\":\"default\",\"uid\":\"u\",\"resourceVersion\":\"12345\","
    "\"labels\":{\"app\":\"a\\\\\"},\"annotations\":{\"x\":\"{[\\\"]}\",\"kwp.io/stamp-ns\":"
    "\"1732912345123456789\"},\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:a\":{}}}]},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"args\":[\"}\",\"]\"]}],"
    "\"n\":-1.5e3,\"t\":true,\"z\":null},\"status\":{\"phase\":\"Running\"}}}";

static void scan_ok(const char *line, struct evscan_event *ev)
{
    int rc = evscan_event(line, strlen(line), ev);
    cr_assert_eq(rc, 0, "evscan_event failed (%d) on %s", rc, line);
}

static void expect_rv(const char *line, const struct evscan_event *ev, const char *rv)
{
    cr_assert_eq(ev->rv_len, strlen(rv), "rv length %zu, want %s", ev->rv_len, rv);
    cr_assert_eq(memcmp(line + ev->rv_off, rv, ev->rv_len), 0);
}

Test(evscan, modified_pod_with_stamp, .timeout = T_TIMEOUT)
{
    struct evscan_event ev;

    scan_ok(POD_EVENT, &ev);
    cr_assert_eq(ev.type, EVSCAN_MODIFIED);
    expect_rv(POD_EVENT, &ev, "12345");
    cr_assert_eq(ev.stamp_ns, 1732912345123456789LL);
    cr_assert_not(ev.initial_end);
    cr_assert_eq(ev.code, 0);
}

Test(evscan, every_type_and_no_stamp, .timeout = T_TIMEOUT)
{
    static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

    for (size_t i = 0; i < 5; i++) {
        char line[256];
        struct evscan_event ev;
        snprintf(line, sizeof(line),
                 "{\"type\":\"%s\",\"object\":{\"metadata\":{\"resourceVersion\":\"7\"}}}",
                 types[i]);
        scan_ok(line, &ev);
        cr_assert_eq((int)ev.type, (int)i);
        expect_rv(line, &ev, "7");
        cr_assert_eq(ev.stamp_ns, -1);
    }
}

Test(evscan, type_after_object_and_whitespace, .timeout = T_TIMEOUT)
{
    const char *line = " { \"object\" : { \"spec\" : { \"a\" : [ 1 , 2 ] } , \"metadata\" : { "
                       "\"annotations\" : { \"kwp.io/stamp-ns\" : \"42\" } , "
                       "\"resourceVersion\" : \"99\" } } , \"type\" : \"ADDED\" } ";
    struct evscan_event ev;

    scan_ok(line, &ev);
    cr_assert_eq(ev.type, EVSCAN_ADDED);
    expect_rv(line, &ev, "99");
    cr_assert_eq(ev.stamp_ns, 42);
}

Test(evscan, bookmark_with_initial_events_end, .timeout = T_TIMEOUT)
{
    const char *line = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
                       "\"metadata\":{\"resourceVersion\":\"964\",\"annotations\":"
                       "{\"k8s.io/initial-events-end\":\"true\"}}}}";
    struct evscan_event ev;

    scan_ok(line, &ev);
    cr_assert_eq(ev.type, EVSCAN_BOOKMARK);
    expect_rv(line, &ev, "964");
    cr_assert(ev.initial_end);
}

Test(evscan, error_410_status, .timeout = T_TIMEOUT)
{
    const char *line = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                       "\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource "
                       "version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}}";
    struct evscan_event ev;

    scan_ok(line, &ev);
    cr_assert_eq(ev.type, EVSCAN_ERROR);
    cr_assert_eq(ev.code, 410);
    cr_assert_eq(ev.rv_len, 0);
}

Test(evscan, unusable_stamps_are_minus_one, .timeout = T_TIMEOUT)
{
    static const char *const stamps[] = {
        "\"\"", "\"12a\"", "\"-5\"", "17", "\"9223372036854775808\"", "\"12345678901234567890\"",
        "{}"};

    for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++) {
        char line[256];
        struct evscan_event ev;
        snprintf(line, sizeof(line),
                 "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"annotations\":"
                 "{\"kwp.io/stamp-ns\":%s}}}}",
                 stamps[i]);
        scan_ok(line, &ev);
        cr_assert_eq(ev.stamp_ns, -1, "stamp %s read as %lld", stamps[i], (long long)ev.stamp_ns);
    }
}

Test(evscan, refuses_non_events, .timeout = T_TIMEOUT)
{
    static const char *const bad[] = {
        "",
        "[]",
        "\"x\"",
        "{}",
        "{\"type\":\"ADDED\"}",
        "{\"object\":{}}",
        "{\"type\":\"UPDATED\",\"object\":{}}",
        "{\"type\":1,\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":[]}",
        "{\"type\":\"ADDED\" \"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":{\"spec\":{\"a\":1}",
        "{\"type\":\"ADDED\",,\"object\":{}}",
        "{\"type\":\"ADDED\",\"object\":{\"spec\":@}}",
    };
    struct evscan_event ev;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cr_assert_eq(evscan_event(bad[i], strlen(bad[i]), &ev), -EPROTO, "accepted %s", bad[i]);
    }
}

Test(evscan, every_truncation_is_refused_without_overread, .timeout = T_TIMEOUT)
{
    size_t len = strlen(POD_EVENT);

    /* the scan stops after metadata, so prefixes that end after it may be accepted; a prefix
     * that cuts the metadata must not be. Each prefix is copied to an exact-size buffer so
     * ASan catches any read beyond it. */
    const char *after_meta = strstr(POD_EVENT, ",\"spec\"");
    size_t meta_end = (size_t)(after_meta - POD_EVENT);
    for (size_t n = 0; n < len; n++) {
        char *p = malloc(n ? n : 1);
        struct evscan_event ev;
        int rc;
        memcpy(p, POD_EVENT, n);
        rc = evscan_event(p, n, &ev);
        if (n < meta_end) {
            cr_assert_eq(rc, -EPROTO, "prefix of %zu bytes accepted", n);
        } else {
            cr_assert(rc == 0 || rc == -EPROTO);
        }
        free(p);
    }
}

Test(evscan, list_rv_from_a_prefix, .timeout = T_TIMEOUT)
{
    const char *body =
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\""
        ":\"5012\",\"continue\":\"x\"},\"items\":[{\"metadata\":{\"name\":\"a\"}}";
    size_t off, len;

    cr_assert_eq(evscan_list_rv(body, strlen(body), &off, &len), 0);
    cr_assert_eq(len, 4);
    cr_assert_eq(memcmp(body + off, "5012", 4), 0);
    /* cut before the value: more bytes are needed */
    for (size_t n = 0; n < (size_t)(strstr(body, "5012\"") - body) + 5; n++) {
        cr_assert_eq(evscan_list_rv(body, n, &off, &len), -EAGAIN, "prefix %zu", n);
    }
}

Test(evscan, list_rv_missing_or_malformed, .timeout = T_TIMEOUT)
{
    size_t off, len;
    const char *no_rv = "{\"kind\":\"PodList\",\"metadata\":{},\"items\":[]}";
    const char *no_meta = "{\"kind\":\"PodList\",\"items\":[]}";
    const char *items_first =
        "{\"items\":[{\"a\":\"}\"}],\"metadata\":{\"resourceVersion\":\"8\"}}";

    cr_assert_eq(evscan_list_rv(no_rv, strlen(no_rv), &off, &len), -ENOENT);
    cr_assert_eq(evscan_list_rv(no_meta, strlen(no_meta), &off, &len), -ENOENT);
    cr_assert_eq(evscan_list_rv("[1]", 3, &off, &len), -EPROTO);
    cr_assert_eq(evscan_list_rv(items_first, strlen(items_first), &off, &len), 0);
    cr_assert_eq(memcmp(items_first + off, "8", 1), 0);
}
