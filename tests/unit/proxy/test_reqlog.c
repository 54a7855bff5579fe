/*
 * test_reqlog.c - proxy/reqlog: the request log's token bucket (a burst of one second's
 * worth, refilled at the rate, refused records counted and reported once) and its records
 * (parsed back with cJSON in JSON mode), black-box through reqlog.h. Time is given to the
 * bucket, so no test sleeps.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "proxy/log.h"
#include "proxy/reqlog.h"

#define SEC 1000000000LL

Test(reqlog, a_full_bucket_lets_a_second_worth_through_then_refuses)
{
    struct reqlog_bucket b;
    uint64_t sup = 99;
    int64_t t = 5 * SEC;

    reqlog_bucket_init(&b, 10);
    for (int i = 0; i < 10; i++) {
        cr_assert(reqlog_bucket_take(&b, t, &sup), "record %d refused", i);
        cr_assert_eq(sup, 0);
    }
    cr_assert_not(reqlog_bucket_take(&b, t, &sup));
    cr_assert_not(reqlog_bucket_take(&b, t + SEC / 20, &sup)); /* half a token back */
    /* 100 ms after the burst: one token; the two refused are reported with it */
    cr_assert(reqlog_bucket_take(&b, t + SEC / 10, &sup));
    cr_assert_eq(sup, 2);
    cr_assert_not(reqlog_bucket_take(&b, t + SEC / 10, &sup));
    /* after a quiet minute: a burst of ten again, no more (the bucket holds one second) */
    for (int i = 0; i < 10; i++) {
        cr_assert(reqlog_bucket_take(&b, t + 60 * SEC, &sup));
        cr_assert_eq(sup, i == 0 ? 1 : 0);
    }
    cr_assert_not(reqlog_bucket_take(&b, t + 60 * SEC, &sup));
    reqlog_bucket_fini(&b);
}

Test(reqlog, at_steady_overload_the_rate_holds)
{
    struct reqlog_bucket b;
    uint64_t sup, passed = 0, refused = 0;

    reqlog_bucket_init(&b, 10);
    /* 1,000 records a second for 10 s: 10 a second get through (plus the first burst) */
    for (int64_t i = 0; i < 10000; i++) {
        if (reqlog_bucket_take(&b, SEC + i * (SEC / 1000), &sup)) {
            passed++;
            refused += sup;
        }
    }
    cr_assert_geq(passed, 105);
    cr_assert_leq(passed, 111);
    /* the refused are all reported, but for those after the last record that went out */
    cr_assert_geq(refused + passed + 100, 10000, "passed %llu refused %llu",
                  (unsigned long long)passed, (unsigned long long)refused);
    reqlog_bucket_fini(&b);
}

Test(reqlog, rate_zero_refuses_everything)
{
    struct reqlog_bucket b;
    uint64_t sup;

    reqlog_bucket_init(&b, 0);
    cr_assert_not(reqlog_bucket_take(&b, SEC, &sup));
    cr_assert_not(reqlog_bucket_take(&b, 100 * SEC, &sup));
    reqlog_bucket_fini(&b);
}

struct holder {
    struct reqlog_bucket *b;
    pthread_barrier_t *held, *done;
};

static void *hold(void *arg)
{
    struct holder *h = arg;

    pthread_mutex_lock(&h->b->mu);
    pthread_barrier_wait(h->held);
    pthread_barrier_wait(h->done);
    pthread_mutex_unlock(&h->b->mu);
    return NULL;
}

Test(reqlog, a_busy_bucket_refuses_at_once_and_counts_it)
{
    struct reqlog_bucket b;
    pthread_barrier_t held, done;
    struct holder h = {&b, &held, &done};
    pthread_t t;
    uint64_t sup = 0;

    reqlog_bucket_init(&b, 10);
    pthread_barrier_init(&held, NULL, 2);
    pthread_barrier_init(&done, NULL, 2);
    cr_assert_eq(pthread_create(&t, NULL, hold, &h), 0);
    pthread_barrier_wait(&held);
    cr_assert_not(reqlog_bucket_take(&b, SEC, &sup)); /* returns although the lock is held */
    pthread_barrier_wait(&done);
    pthread_join(t, NULL);
    cr_assert(reqlog_bucket_take(&b, SEC, &sup));
    cr_assert_eq(sup, 1);
    pthread_barrier_destroy(&held);
    pthread_barrier_destroy(&done);
    reqlog_bucket_fini(&b);
}

/* Runs <n> reqlog_request calls with stderr captured into <out>. */
static void log_n(int n, char *out, size_t cap)
{
    const struct reqlog_entry e = {
        .user = "alice",
        .verb = "list",
        .resource = "pods",
        .ns = "default",
        .code = 403,
        .reason = "Forbidden: no rule",
        .msg = "request denied",
    };
    FILE *f = tmpfile();
    int saved = dup(STDERR_FILENO);
    size_t got;

    cr_assert(f != NULL && saved >= 0);
    dup2(fileno(f), STDERR_FILENO);
    for (int i = 0; i < n; i++) {
        reqlog_request(&e);
    }
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(f);
    got = fread(out, 1, cap - 1, f);
    out[got] = '\0';
    fclose(f);
}

Test(reqlog, records_are_json_with_every_field_and_limited_per_second)
{
    char out[16384];
    const char *p;
    int lines = 0;

    log_set_format(LOG_FORMAT_JSON);
    reqlog_set_rate(3);
    log_n(10, out, sizeof(out)); /* well within one second: 3 go out */
    for (p = out; *p; lines++) {
        const char *nl = strchr(p, '\n');
        cJSON *o;

        cr_assert(nl != NULL);
        o = cJSON_ParseWithLength(p, (size_t)(nl - p));
        cr_assert(o != NULL, "not JSON: %.*s", (int)(nl - p), p);
        cr_assert_str_eq(cJSON_GetObjectItem(o, "src")->valuestring, "request");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "level")->valuestring, "warn");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "user")->valuestring, "alice");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "verb")->valuestring, "list");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "resource")->valuestring, "pods");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "namespace")->valuestring, "default");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "code")->valuestring, "403");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "reason")->valuestring, "Forbidden: no rule");
        cr_assert_str_eq(cJSON_GetObjectItem(o, "msg")->valuestring, "request denied");
        cJSON_Delete(o);
        p = nl + 1;
    }
    cr_assert_eq(lines, 3, "%s", out);
}

Test(reqlog, the_next_record_after_a_storm_is_preceded_by_the_suppressed_count)
{
    char out[16384];
    cJSON *o;

    log_set_format(LOG_FORMAT_JSON);
    reqlog_set_rate(1);
    log_n(5, out, sizeof(out)); /* 1 out, 4 refused */
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "%s", out);
    usleep(1100 * 1000); /* the bucket refills from the real clock here */
    log_n(1, out, sizeof(out));
    o = cJSON_ParseWithLength(out, (size_t)(strchr(out, '\n') - out));
    cr_assert(o != NULL, "%s", out);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "suppressed")->valuestring, "4");
    cJSON_Delete(o);
    cr_assert(strstr(strchr(out, '\n') + 1, "\"reason\":\"Forbidden: no rule\"") != NULL, "%s",
              out);
}

Test(reqlog, rate_zero_writes_nothing)
{
    char out[4096];

    reqlog_set_rate(0);
    log_n(5, out, sizeof(out));
    cr_assert_str_eq(out, "");
}
