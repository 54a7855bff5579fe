/*
 * test_reqstats.c - proxy/reqstats: kube-apiserver's reported verb for a request (computed
 * from its parsed path as endpoints/metrics does), and the three histogram families as /metrics
 * shows them: one series per (verb, resource, code), frames of one write counted with its
 * lag, lag cells of several threads summed, and a full family counting what it drops.
 * Black-box through reqstats.h; the families are process-wide, so each Test (its own process
 * under Criterion) starts empty.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cache/sbuf.h"
#include "proxy/k8s_path.h"
#include "proxy/reqstats.h"

/* The verb of <method> <path>?<query> (query: "k=v&k2=v2", already decoded). */
static const char *verb(const char *method, const char *path, const char *query, const char *ct)
{
    struct k8s_query_kv q[8];
    char buf[512];
    size_t n = 0;
    struct k8s_path kp;
    bool resource = k8s_path_parse(path, &kp) == 0;

    snprintf(buf, sizeof(buf), "%s", query);
    for (char *p = buf, *save = NULL, *kv; (kv = strtok_r(p, "&", &save)) != NULL; p = NULL) {
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = '\0';
        }
        q[n].key = kv;
        q[n].value = eq ? eq + 1 : "";
        n++;
    }
    return reqstats_verb_name(reqstats_verb_of(method, resource ? &kp : NULL, q, n, ct));
}

Test(reqstats, verbs_are_the_ones_kube_apiserver_reports)
{
    cr_assert_str_eq(verb("GET", "/api/v1/pods", "", NULL), "LIST");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces/a/pods", "limit=5", NULL), "LIST");
    cr_assert_str_eq(verb("HEAD", "/api/v1/namespaces/a/pods", "", NULL), "LIST");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces/a/pods/x", "", NULL), "GET");
    cr_assert_str_eq(verb("GET", "/api/v1/pods", "watch=true", NULL), "WATCH");
    cr_assert_str_eq(verb("GET", "/api/v1/pods", "watch=1", NULL), "WATCH");
    cr_assert_str_eq(verb("GET", "/api/v1/pods", "watch=False", NULL), "LIST");
    cr_assert_str_eq(verb("GET", "/api/v1/pods", "watch=0", NULL), "LIST");
    cr_assert_str_eq(verb("GET", "/api/v1/watch/namespaces/a/pods", "", NULL), "WATCH");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces/a/pods/x", "watch=true", NULL), "WATCH");
    cr_assert_str_eq(verb("POST", "/api/v1/namespaces/a/pods", "", NULL), "POST");
    cr_assert_str_eq(verb("PUT", "/api/v1/namespaces/a/pods/x", "", NULL), "PUT");
    cr_assert_str_eq(verb("DELETE", "/api/v1/namespaces/a/pods", "", NULL), "DELETE");
    cr_assert_str_eq(
        verb("PATCH", "/api/v1/namespaces/a/pods/x", "", "application/merge-patch+json"), "PATCH");
    cr_assert_str_eq(
        verb("PATCH", "/api/v1/namespaces/a/pods/x", "", "application/apply-patch+yaml"), "APPLY");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces/a/pods/x/log", "", NULL), "CONNECT");
    cr_assert_str_eq(verb("POST", "/api/v1/namespaces/a/pods/x/exec", "", NULL), "CONNECT");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces/a/pods/x/status", "", NULL), "GET");
    cr_assert_str_eq(verb("GET", "/version", "", NULL), "GET");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces/b", "", NULL), "GET");
    cr_assert_str_eq(verb("GET", "/api/v1/namespaces", "", NULL), "LIST");
    cr_assert_str_eq(verb("GET", "/apis/apps/v1/watch/deployments", "", NULL), "WATCH");
    cr_assert_str_eq(verb("OPTIONS", "/api/v1/pods", "", NULL), "other");
    cr_assert_str_eq(verb("BREW", "/api/v1/pods", "", NULL), "other");
}

static char *exposition(void)
{
    struct sbuf b;

    sbuf_init(&b, 0);
    reqstats_write(&b);
    cr_assert_eq(sbuf_error(&b), 0);
    return sbuf_take(&b);
}

Test(reqstats, one_series_per_verb_resource_and_code)
{
    static const char pods[] = "pods";
    char *t;

    reqstats_request(REQSTATS_LIST, pods, 200, 300000);   /* 0.3 ms */
    reqstats_request(REQSTATS_LIST, pods, 200, 30000000); /* 30 ms */
    reqstats_request(REQSTATS_GET, reqstats_other, 404, 1);
    reqstats_request(REQSTATS_GET, reqstats_none, 200, 1);
    reqstats_upstream(REQSTATS_WATCH, 200, 2000000);
    reqstats_upstream(REQSTATS_LIST, 0, 1000);
    t = exposition();
    cr_assert(strstr(t, "# TYPE kwp_request_duration_seconds histogram\n") != NULL);
    cr_assert(strstr(t, "kwp_request_duration_seconds_bucket{verb=\"LIST\",resource=\"pods\","
                        "code=\"200\",le=\"0.0005\"} 1\n") != NULL,
              "%s", t);
    cr_assert(strstr(t, "kwp_request_duration_seconds_bucket{verb=\"LIST\",resource=\"pods\","
                        "code=\"200\",le=\"0.05\"} 2\n") != NULL);
    cr_assert(strstr(t, "kwp_request_duration_seconds_count{verb=\"LIST\",resource=\"pods\","
                        "code=\"200\"} 2\n") != NULL);
    cr_assert(strstr(t, "kwp_request_duration_seconds_sum{verb=\"LIST\",resource=\"pods\","
                        "code=\"200\"} 0.0303\n") != NULL);
    cr_assert(strstr(t, "kwp_request_duration_seconds_count{verb=\"GET\",resource=\"other\","
                        "code=\"404\"} 1\n") != NULL);
    cr_assert(strstr(t, "kwp_request_duration_seconds_count{verb=\"GET\",resource=\"\","
                        "code=\"200\"} 1\n") != NULL);
    cr_assert(strstr(t, "kwp_upstream_request_duration_seconds_count{verb=\"WATCH\","
                        "code=\"200\"} 1\n") != NULL);
    cr_assert(strstr(t, "kwp_upstream_request_duration_seconds_count{verb=\"LIST\","
                        "code=\"<error>\"} 1\n") != NULL);
    cr_assert(strstr(t, "kwp_metrics_series_dropped_total 0\n") != NULL);
    free(t);
}

Test(reqstats, frames_of_one_write_count_with_its_lag)
{
    char *t;

    reqstats_lag_ms(0, 30);    /* 30 frames within a millisecond */
    reqstats_lag_ms(40, 2);    /* 2 frames 40 ms late */
    reqstats_lag_ms(-3, 1);    /* clock noise counts as 0 */
    reqstats_lag_ms(60000, 1); /* above every bound */
    t = exposition();
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_bucket{le=\"0.001\"} 31\n") != NULL,
              "%s", t);
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_bucket{le=\"0.02\"} 31\n") != NULL);
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_bucket{le=\"0.05\"} 33\n") != NULL);
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_bucket{le=\"30\"} 33\n") != NULL);
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_bucket{le=\"+Inf\"} 34\n") != NULL);
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_sum 60.08\n") != NULL);
    cr_assert(strstr(t, "kwp_watch_event_delivery_lag_seconds_count 34\n") != NULL);
    free(t);
}

static void *lagger(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50000; i++) {
        reqstats_lag_ms(3, 2);
    }
    return NULL;
}

Test(reqstats, every_thread_has_its_own_lag_cell_and_the_scrape_sums_them)
{
    pthread_t t[3];
    char *text;

    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, lagger, NULL), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
    }
    text = exposition();
    cr_assert(strstr(text, "kwp_watch_event_delivery_lag_seconds_bucket{le=\"0.005\"} 300000\n") !=
                  NULL,
              "%s", text);
    cr_assert(strstr(text, "kwp_watch_event_delivery_lag_seconds_sum 900\n") != NULL);
    free(text);
}

Test(reqstats, a_full_family_counts_what_it_drops)
{
    char *t;

    for (int code = 1; code <= REQSTATS_MAX_SERIES + 5; code++) {
        reqstats_request(REQSTATS_GET, reqstats_other, code, 1);
    }
    reqstats_request(REQSTATS_GET, reqstats_other, 7, 1); /* an existing series still counts */
    t = exposition();
    cr_assert(strstr(t, "kwp_metrics_series_dropped_total 5\n") != NULL);
    cr_assert(strstr(t, "kwp_request_duration_seconds_count{verb=\"GET\",resource=\"other\","
                        "code=\"7\"} 2\n") != NULL);
    free(t);
}
