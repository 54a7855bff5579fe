/*
 * test_promtext.c - proxy/promtext: the Prometheus text exposition pieces /metrics is built
 * from, black-box through promtext.h: label value escaping, HELP escaping, number text,
 * histogram lines (cumulative buckets, le="+Inf" equal to _count, _sum), the bucket an
 * observation lands in (a value equal to a bound belongs to that bound: le means <=), and
 * concurrent observers losing no count.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cache/sbuf.h"
#include "proxy/promtext.h"

/* The text <fn> appended, in a static buffer. */
#define TEXT(b) ((b).p ? (b).p : "")

Test(promtext, label_values_escape_backslash_quote_and_newline)
{
    struct sbuf b;

    sbuf_init(&b, 0);
    promtext_escape_label(&b, "a\\b\"c\nd/é\te");
    cr_assert_str_eq(TEXT(b), "a\\\\b\\\"c\\nd/é\te");
    sbuf_free(&b);
    sbuf_init(&b, 0);
    promtext_escape_label(&b, "");
    cr_assert_str_eq(TEXT(b), "");
    sbuf_free(&b);
}

Test(promtext, help_escapes_backslash_and_newline_but_not_quotes)
{
    struct sbuf b;

    sbuf_init(&b, 0);
    promtext_family(&b, "kwp_x", "gauge", "two\nlines \\ and \"quotes\"");
    cr_assert_str_eq(TEXT(b), "# HELP kwp_x two\\nlines \\\\ and \"quotes\"\n"
                              "# TYPE kwp_x gauge\n");
    sbuf_free(&b);
}

Test(promtext, numbers_read_back_exactly)
{
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0, "0"},
        {-0.0, "0"},
        {1, "1"},
        {12509184, "12509184"},
        {0.005, "0.005"},
        {0.0005, "0.0005"},
        {1.25, "1.25"},
        {1796191301.25, "1796191301.25"},
        {0.1 + 0.2, "0.30000000000000004"},
        {1e300, "1e+300"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sbuf b;
        sbuf_init(&b, 0);
        promtext_number(&b, cases[i].v);
        cr_assert_str_eq(TEXT(b), cases[i].text, "%.17g", cases[i].v);
        cr_assert_eq(strtod(TEXT(b), NULL), cases[i].v);
        sbuf_free(&b);
    }
}

Test(promtext, infinities_and_nan_as_the_format_spells_them)
{
    struct sbuf b;

    sbuf_init(&b, 0);
    promtext_number(&b, 1.0 / 0.0);
    sbuf_putc(&b, ' ');
    promtext_number(&b, -1.0 / 0.0);
    sbuf_putc(&b, ' ');
    promtext_number(&b, 0.0 / 0.0);
    cr_assert_str_eq(TEXT(b), "+Inf -Inf NaN");
    sbuf_free(&b);
}

Test(promtext, a_histogram_is_cumulative_ends_at_inf_and_counts_match)
{
    static const double bounds[] = {0.005, 0.1, 1};
    const uint64_t counts[] = {2, 0, 3, 1}; /* per bucket; the last is above 1 */
    const struct promtext_label l[] = {{"verb", "LIST"}, {"resource", "apps/deployments"}};
    struct sbuf b;

    sbuf_init(&b, 0);
    promtext_histogram(&b, "kwp_d_seconds", l, 2, bounds, 3, counts, 7.5);
    cr_assert_str_eq(
        TEXT(b),
        "kwp_d_seconds_bucket{verb=\"LIST\",resource=\"apps/deployments\",le=\"0.005\"} 2\n"
        "kwp_d_seconds_bucket{verb=\"LIST\",resource=\"apps/deployments\",le=\"0.1\"} 2\n"
        "kwp_d_seconds_bucket{verb=\"LIST\",resource=\"apps/deployments\",le=\"1\"} 5\n"
        "kwp_d_seconds_bucket{verb=\"LIST\",resource=\"apps/deployments\",le=\"+Inf\"} 6\n"
        "kwp_d_seconds_sum{verb=\"LIST\",resource=\"apps/deployments\"} 7.5\n"
        "kwp_d_seconds_count{verb=\"LIST\",resource=\"apps/deployments\"} 6\n");
    sbuf_free(&b);
}

Test(promtext, a_histogram_without_labels_has_le_alone_and_bare_sum_and_count)
{
    static const double bounds[] = {0.001};
    const uint64_t counts[] = {4, 0};
    struct sbuf b;

    sbuf_init(&b, 0);
    promtext_histogram(&b, "kwp_lag_seconds", NULL, 0, bounds, 1, counts, 0);
    cr_assert_str_eq(TEXT(b), "kwp_lag_seconds_bucket{le=\"0.001\"} 4\n"
                              "kwp_lag_seconds_bucket{le=\"+Inf\"} 4\n"
                              "kwp_lag_seconds_sum 0\n"
                              "kwp_lag_seconds_count 4\n");
    sbuf_free(&b);
}

Test(promtext, label_values_in_samples_are_escaped)
{
    const struct promtext_label l[] = {{"resource", "we\"ird\\\n"}};
    struct sbuf b;

    sbuf_init(&b, 0);
    promtext_sample(&b, "kwp_g", l, 1, 3);
    cr_assert_str_eq(TEXT(b), "kwp_g{resource=\"we\\\"ird\\\\\\n\"} 3\n");
    sbuf_free(&b);
}

Test(promtext, a_value_on_a_bound_belongs_to_that_bucket)
{
    static const double bounds[] = {0.005, 0.1, 1};

    cr_assert_eq(promtext_bucket(bounds, 3, 0), 0);
    cr_assert_eq(promtext_bucket(bounds, 3, 0.005), 0);
    cr_assert_eq(promtext_bucket(bounds, 3, 0.0051), 1);
    cr_assert_eq(promtext_bucket(bounds, 3, 1), 2);
    cr_assert_eq(promtext_bucket(bounds, 3, 1.5), 3);
}

Test(promtext, observations_land_in_their_buckets_and_the_sum)
{
    static const double bounds[] = {0.001, 0.01};
    struct promtext_histo h;
    struct sbuf b;

    promtext_histo_init(&h, bounds, 2);
    promtext_histo_observe_ns(&h, 1000000);  /* 1 ms: on the first bound */
    promtext_histo_observe_ns(&h, 2000000);  /* 2 ms */
    promtext_histo_observe_ns(&h, 50000000); /* 50 ms: above every bound */
    promtext_histo_observe_ns(&h, -5);       /* counts as 0 */
    sbuf_init(&b, 0);
    promtext_histo_write(&b, "h", NULL, 0, &h);
    cr_assert_str_eq(TEXT(b), "h_bucket{le=\"0.001\"} 2\n"
                              "h_bucket{le=\"0.01\"} 3\n"
                              "h_bucket{le=\"+Inf\"} 4\n"
                              "h_sum 0.053\n"
                              "h_count 4\n");
    sbuf_free(&b);
    promtext_histo_fini(&h);
}

static const double race_bounds[] = {0.5};

static void *observer(void *arg)
{
    struct promtext_histo *h = arg;

    for (int i = 0; i < 100000; i++) {
        promtext_histo_observe_ns(h, i % 2 ? 1 : 1000000000);
    }
    return NULL;
}

Test(promtext, concurrent_observers_lose_no_count)
{
    struct promtext_histo h;
    pthread_t t[4];
    struct sbuf b;

    promtext_histo_init(&h, race_bounds, 1);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_create(&t[i], NULL, observer, &h), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
    }
    sbuf_init(&b, 0);
    promtext_histo_write(&b, "h", NULL, 0, &h);
    cr_assert(strstr(TEXT(b), "h_bucket{le=\"0.5\"} 200000\n") != NULL, "%s", TEXT(b));
    cr_assert(strstr(TEXT(b), "h_count 400000\n") != NULL, "%s", TEXT(b));
    sbuf_free(&b);
    promtext_histo_fini(&h);
}
