/*
 * test_observe.c - what an operator reads from `kwp proxy` (issue 13, "Observability an
 * operator expects"): the /metrics families it adds, checked by an exposition-format checker
 * written here (every line a comment or a sample, each sample of a family declared before it,
 * families contiguous, label values with only the escapes the format allows, histograms with
 * ascending le ending at +Inf, cumulative counts and +Inf == _count), and the request log
 * (--log-format json|text, --log-request-rate) for denied requests and failed forwards.
 *
 * Each Test starts its own `kwp sim` and `kwp proxy` on 127.0.0.1:0 and stops them with
 * srv_stop (exit status 0 asserted). Log records are read from the proxy's stderr log; they are
 * written when a request completes, just after its response, so they are polled for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/api.h"
#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/sock.h"
#include "tests/support/srv.h"

#define REQ_MS 15000L
#define READY_MS 30000L
#define MAX_SERIES 20000
#define MAX_FAMILIES 400

/* ---- an exposition-format checker (text format 0.0.4) ------------------------------------ */

struct sample {
    char name[128];
    char labels[512]; /* the label pairs decoded, "k=v,k=v" in order, le included */
    char le[256];     /* the le label, "" without one */
    char rest[512];   /* the labels other than le, decoded */
    double value;
};

struct family {
    char name[128];
    char type[16];
    bool help;
};

struct expo {
    struct sample s[MAX_SERIES];
    size_t n;
    struct family f[MAX_FAMILIES];
    size_t nf;
};

/* The checker's verdict: CHECK records the first failure and jumps out of expo_check. */
static char check_err[1024];
static jmp_buf check_jmp;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(check_err, sizeof(check_err), __VA_ARGS__);                                   \
            longjmp(check_jmp, 1);                                                                 \
        }                                                                                          \
    } while (0)

static bool name_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
            return false;
        }
    }
    return n > 0;
}

static struct family *family_of(struct expo *e, const char *name)
{
    for (size_t i = 0; i < e->nf; i++) {
        if (strcmp(e->f[i].name, name) == 0) {
            return &e->f[i];
        }
    }
    return NULL;
}

/* The declared family a sample name belongs to (histograms: _bucket, _sum, _count). */
static struct family *owner(struct expo *e, const char *name)
{
    static const char *const sfx[] = {"_bucket", "_sum", "_count"};
    struct family *f = family_of(e, name);
    char base[128];

    if (f != NULL) {
        return f;
    }
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(name), k = strlen(sfx[i]);
        if (n > k && strcmp(name + n - k, sfx[i]) == 0) {
            snprintf(base, sizeof(base), "%.*s", (int)(n - k), name);
            f = family_of(e, base);
            if (f != NULL && strcmp(f->type, "histogram") == 0) {
                return f;
            }
        }
    }
    return NULL;
}

static double parse_value(const char *s, int line)
{
    char *end;
    double v;

    if (strcmp(s, "+Inf") == 0) {
        return INFINITY;
    }
    if (strcmp(s, "-Inf") == 0) {
        return -INFINITY;
    }
    if (strcmp(s, "NaN") == 0) {
        return NAN;
    }
    v = strtod(s, &end);
    CHECK(end != s && *end == '\0', "line %d: bad value \"%s\"", line, s);
    return v;
}

/* Parses a sample line into e->s[e->n]. */
static void parse_sample(struct expo *e, char *p, int line, const char *last_family)
{
    struct sample *s = &e->s[e->n];
    struct family *f;
    char *q = p;
    size_t lo = 0, ro = 0;

    CHECK((e->n) < (MAX_SERIES), "too many");
    memset(s, 0, sizeof(*s));
    while (*q && *q != '{' && *q != ' ') {
        q++;
    }
    CHECK(name_ok(p, (size_t)(q - p)), "line %d: bad metric name in \"%s\"", line, p);
    snprintf(s->name, sizeof(s->name), "%.*s", (int)(q - p), p);
    if (*q == '{') {
        q++;
        while (*q != '}') {
            char *k = q, key[64], val[256];
            size_t vn = 0;

            while (*q && *q != '=') {
                q++;
            }
            CHECK(*q == '=' && name_ok(k, (size_t)(q - k)), "line %d: bad label name", line);
            snprintf(key, sizeof(key), "%.*s", (int)(q - k), k);
            q++;
            CHECK(*q == '"', "line %d: label value not quoted", line);
            q++;
            while (*q != '"') {
                CHECK(*q != '\0' && *q != '\n', "line %d: unterminated label value", line);
                if (*q == '\\') {
                    q++;
                    CHECK(*q == '\\' || *q == '"' || *q == 'n',
                          "line %d: escape \\%c is not one the format knows", line, *q);
                    val[vn++] = *q == 'n' ? '\n' : *q;
                } else {
                    val[vn++] = *q;
                }
                q++;
                CHECK((vn) < (sizeof(val) - 1), "too many");
            }
            val[vn] = '\0';
            q++;
            if (strcmp(key, "le") == 0) {
                snprintf(s->le, sizeof(s->le), "%s", val);
            } else {
                ro += (size_t)snprintf(s->rest + ro, sizeof(s->rest) - ro, "%s%s=%s", ro ? "," : "",
                                       key, val);
            }
            lo += (size_t)snprintf(s->labels + lo, sizeof(s->labels) - lo, "%s%s=%s", lo ? "," : "",
                                   key, val);
            if (*q == ',') {
                q++;
            } else {
                CHECK(*q == '}', "line %d: expected , or } after a label", line);
            }
        }
        q++;
    }
    CHECK(*q == ' ', "line %d: no blank before the value", line);
    s->value = parse_value(q + 1, line);
    f = owner(e, s->name);
    CHECK(f != NULL, "line %d: sample %s of no declared family", line, s->name);
    CHECK(strcmp(f->name, last_family) == 0, "line %d: %s outside its family's block", line,
          s->name);
    e->n++;
}

/* Histogram series: le ascending, cumulative, ending at +Inf equal to _count; a _sum. */
static void check_histograms(const struct expo *e)
{
    for (size_t i = 0; i < e->n; i++) {
        const struct sample *b = &e->s[i];
        size_t nl = strlen(b->name);
        char base[128], cname[160], sname[160];
        double prev_le = -INFINITY, prev_v = 0;
        bool inf = false, count = false, sum = false;

        if (nl < 7 || strcmp(b->name + nl - 7, "_bucket") != 0 ||
            (i > 0 && strcmp(e->s[i - 1].name, b->name) == 0 &&
             strcmp(e->s[i - 1].rest, b->rest) == 0)) {
            continue; /* not the first bucket of a series */
        }
        snprintf(base, sizeof(base), "%.*s", (int)(nl - 7), b->name);
        snprintf(cname, sizeof(cname), "%s_count", base);
        snprintf(sname, sizeof(sname), "%s_sum", base);
        for (size_t j = i;
             j < e->n && strcmp(e->s[j].name, b->name) == 0 && strcmp(e->s[j].rest, b->rest) == 0;
             j++) {
            double le = parse_value(e->s[j].le, 0);
            CHECK(le > prev_le, "%s{%s}: le %s not ascending", base, b->rest, e->s[j].le);
            CHECK(e->s[j].value >= prev_v, "%s{%s}: buckets not cumulative", base, b->rest);
            prev_le = le;
            prev_v = e->s[j].value;
            inf = isinf(le);
        }
        CHECK(inf, "%s{%s}: no le=\"+Inf\" bucket", base, b->rest);
        for (size_t j = 0; j < e->n; j++) {
            if (strcmp(e->s[j].rest, b->rest) != 0) {
                continue;
            }
            if (strcmp(e->s[j].name, cname) == 0) {
                count = true;
                CHECK((e->s[j].value) == (prev_v), "%s{%s}: _count %g != +Inf bucket %g", base,
                      b->rest, e->s[j].value, prev_v);
            }
            sum = sum || strcmp(e->s[j].name, sname) == 0;
        }
        CHECK(count && sum, "%s{%s}: _count or _sum missing", base, b->rest);
    }
}

/* Checks the whole text and fills <e>. */
static void expo_parse(struct expo *e, char *text)
{
    char last[128] = "";
    int line = 0;

    e->n = e->nf = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        line++;
        if (strncmp(l, "# HELP ", 7) == 0 || strncmp(l, "# TYPE ", 7) == 0) {
            bool help = l[2] == 'H';
            char *name = l + 7, *sp = strchr(name, ' ');
            struct family *f;

            CHECK(sp != NULL, "line %d: %s", line, l);
            *sp = '\0';
            CHECK(name_ok(name, strlen(name)), "line %d: bad family name", line);
            f = family_of(e, name);
            if (f == NULL) {
                CHECK((e->nf) < (MAX_FAMILIES), "too many");
                f = &e->f[e->nf++];
                memset(f, 0, sizeof(*f));
                snprintf(f->name, sizeof(f->name), "%s", name);
            } else {
                CHECK(strcmp(last, name) == 0, "line %d: family %s declared in two places", line,
                      name);
            }
            if (help) {
                CHECK(!(f->help), "line %d: two HELP lines for %s", line, name);
                f->help = true;
            } else {
                const char *t = sp + 1;
                CHECK(strcmp(f->type, "") == 0, "line %d: two TYPE lines for %s", line, name);
                CHECK(strcmp(t, "counter") == 0 || strcmp(t, "gauge") == 0 ||
                          strcmp(t, "histogram") == 0 || strcmp(t, "summary") == 0 ||
                          strcmp(t, "untyped") == 0,
                      "line %d: type %s", line, t);
                snprintf(f->type, sizeof(f->type), "%s", t);
            }
            snprintf(last, sizeof(last), "%s", name);
            continue;
        }
        CHECK(l[0] != '#' && l[0] != ' ', "line %d: neither a comment nor a sample: %s", line, l);
        parse_sample(e, l, line, last);
    }
    check_histograms(e);
}

/* Runs the checker on <text> (modified): NULL when it is a valid exposition, else why not. */
static const char *expo_check(struct expo *e, char *text)
{
    if (setjmp(check_jmp) != 0) {
        return check_err;
    }
    expo_parse(e, text);
    return NULL;
}

/* The value of sample <name> whose labels (decoded, "k=v,...") are <labels>; NAN if none. */
static double expo_get(const struct expo *e, const char *name, const char *labels)
{
    for (size_t i = 0; i < e->n; i++) {
        if (strcmp(e->s[i].name, name) == 0 && strcmp(e->s[i].labels, labels) == 0) {
            return e->s[i].value;
        }
    }
    return NAN;
}

static const struct family *expo_family(struct expo *e, const char *name)
{
    return family_of(e, name);
}

static struct expo *scrape(const char *base)
{
    struct expo *e = calloc(1, sizeof(*e));
    struct http_resp r;
    char url[512];

    cr_assert(e != NULL);
    snprintf(url, sizeof(url), "%s/metrics", base);
    cr_assert_eq(http_get(url, REQ_MS, &r), 0);
    cr_assert_eq(r.code, 200, "/metrics: HTTP %ld", r.code);
    {
        const char *why = expo_check(e, r.body);
        cr_assert(why == NULL, "/metrics is not a valid exposition: %s", why);
    }
    http_resp_free(&r);
    return e;
}

static long get_code(const char *base, const char *path)
{
    struct http_resp r;
    char url[1024];
    long code;

    snprintf(url, sizeof(url), "%s%s", base, path);
    cr_assert_eq(http_get(url, REQ_MS, &r), 0, "GET %s", path);
    code = r.code;
    http_resp_free(&r);
    return code;
}

/* ---- the checker itself ------------------------------------------------------------------ */

Test(observe, the_checker_refuses_broken_expositions)
{
    /* each of these must fail the check: run it in a child and expect a failed assertion */
    static const char *const bad[] = {
        "kwp_x 1\n",                                 /* no TYPE */
        "# TYPE kwp_x gauge\nkwp_x{a=\"b\\t\"} 1\n", /* a bad escape */
        "# TYPE kwp_x gauge\nkwp_x{a=\"b} 1\n",      /* unterminated */
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
        "h_sum 1\nh_count 1\n",                                              /* not cumulative */
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",    /* no +Inf */
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n", /* count */
        "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n", /* a outside its block */
        "# TYPE a gauge\na 1x\n",                          /* a bad value */
    };

    struct expo *e = calloc(1, sizeof(*e));
    char good[] = "# HELP h x\n# TYPE h histogram\nh_bucket{a=\"q\\\"\\n\",le=\"1\"} 1\n"
                  "h_bucket{a=\"q\\\"\\n\",le=\"+Inf\"} 2\nh_sum{a=\"q\\\"\\n\"} 3\n"
                  "h_count{a=\"q\\\"\\n\"} 2\n";
    const char *why;

    cr_assert(e != NULL);
    why = expo_check(e, good);
    cr_assert(why == NULL, "a valid exposition refused: %s", why);
    cr_assert_str_eq(e->s[0].labels, "a=q\"\n,le=1");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *t = strdup(bad[i]);
        cr_assert(expo_check(e, t) != NULL, "accepted broken exposition %zu: %s", i, bad[i]);
        free(t);
    }
    free(e);
}

/* ---- /metrics ------------------------------------------------------------------------------- */

Test(observe, metrics_has_the_operator_families_after_a_few_requests, .timeout = 120)
{
    static const char *const process[] = {
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_start_time_seconds",
        "process_open_fds",
        "process_max_fds",
    };
    struct srv sim, px;
    struct watch *w;
    struct expo *e;
    char url[1024];
    size_t lines;
    double v;

    srv_spawn(&sim, "sim", ARGS("--objects", "20", "--namespaces", "2", "--churn", "40"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, READY_MS);

    cr_assert_eq(get_code(px.url, "/api/v1/pods?resourceVersion=0"), 200);
    cr_assert_eq(get_code(px.url, "/api/v1/pods?resourceVersion=0&limit=5"), 200);
    cr_assert_eq(get_code(px.url, "/api/v1/namespaces/ns-0/pods/no-such-pod"), 404); /* forwarded */
    snprintf(url, sizeof(url), "%s/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=3", px.url);
    w = watch_open(url, REQ_MS);
    cr_assert_eq(watch_wait_status(w, REQ_MS), 200);
    cr_assert_eq(watch_wait_lines(w, 30, REQ_MS), 0, "20 initial events, then churn");
    cr_assert_eq(watch_wait_end(w, REQ_MS), 0);
    lines = watch_line_count(w);
    watch_close(w);

    e = scrape(px.url); /* also runs the format checks */
    for (size_t i = 0; i < sizeof(process) / sizeof(process[0]); i++) {
        const struct family *f = expo_family(e, process[i]);
        cr_assert(f != NULL && f->help, "%s missing", process[i]);
        cr_assert_str_eq(f->type, strstr(process[i], "_total") ? "counter" : "gauge");
    }
    cr_assert_gt(expo_get(e, "process_resident_memory_bytes", ""), 1e6);
    cr_assert_gt(expo_get(e, "process_open_fds", ""), 3);
    cr_assert_geq(expo_get(e, "process_max_fds", ""), expo_get(e, "process_open_fds", ""));
    cr_assert_gt(expo_get(e, "process_start_time_seconds", ""), 1.6e9);

    cr_assert_str_eq(expo_family(e, "kwp_request_duration_seconds")->type, "histogram");
    v = expo_get(e, "kwp_request_duration_seconds_count", "verb=LIST,resource=pods,code=200");
    cr_assert_eq(v, 2, "two LISTs of pods: %g", v);
    v = expo_get(e, "kwp_request_duration_seconds_count", "verb=GET,resource=pods,code=404");
    cr_assert_eq(v, 1, "one GET of a pod: %g", v);
    v = expo_get(e, "kwp_request_duration_seconds_count", "verb=WATCH,resource=pods,code=200");
    cr_assert_eq(v, 1, "the watch, observed when it ended: %g", v);
    /* the watch lasted its 3 s timeout: its whole life is its duration, as in kube-apiserver */
    cr_assert_eq(expo_get(e, "kwp_request_duration_seconds_bucket",
                          "verb=WATCH,resource=pods,code=200,le=2"),
                 0);
    cr_assert_eq(expo_get(e, "kwp_request_duration_seconds_bucket",
                          "verb=WATCH,resource=pods,code=200,le=5"),
                 1);

    cr_assert_str_eq(expo_family(e, "kwp_upstream_request_duration_seconds")->type, "histogram");
    cr_assert_geq(expo_get(e, "kwp_upstream_request_duration_seconds_count", "verb=LIST,code=200"),
                  1, "the reflector's LIST");
    cr_assert_geq(expo_get(e, "kwp_upstream_request_duration_seconds_count", "verb=GET,code=404"),
                  1, "the forwarded GET");

    cr_assert_str_eq(expo_family(e, "kwp_watch_event_delivery_lag_seconds")->type, "histogram");
    v = expo_get(e, "kwp_watch_event_delivery_lag_seconds_count", "");
    cr_assert(v >= 10 && v <= (double)lines - 20,
              "%g frames timed: the churn events the watch got (%zu lines, 20 of them the "
              "initial ADDED events, which did not wait)",
              v, lines);

    cr_assert_str_eq(expo_family(e, "kwp_history_oldest_event_age_seconds")->type, "gauge");
    v = expo_get(e, "kwp_history_oldest_event_age_seconds", "resource=pods");
    cr_assert(v > 0 && v < 600, "history age %g s", v);
    free(e);

    /* the reflector's WATCH shows up once it ends: make the sim end it */
    {
        struct http_resp r;
        char u[512];
        bool ok = false;
        uint64_t end = http_now_ms() + REQ_MS;

        snprintf(u, sizeof(u), "%s/_sim/drop-watches?resource=pods", sim.url);
        cr_assert_eq(http_do("POST", u, NULL, "", NULL, REQ_MS, &r), 0);
        http_resp_free(&r);
        while (!ok && http_now_ms() < end) {
            e = scrape(px.url);
            ok = expo_get(e, "kwp_upstream_request_duration_seconds_count",
                          "verb=WATCH,code=200") >= 1;
            free(e);
            if (!ok) {
                nap(50);
            }
        }
        cr_assert(ok, "the reflector's ended WATCH is observed");
    }
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* Polls /metrics until <name>{<labels>} satisfies <pred> against <than> (or REQ_MS passed);
 * returns the last value read. */
static double wait_metric(const char *base, const char *name, const char *labels, bool above,
                          double than)
{
    uint64_t end = http_now_ms() + REQ_MS;
    double v;

    for (;;) {
        struct expo *e = scrape(base);
        v = expo_get(e, name, labels);
        free(e);
        if ((above ? v > than : v <= than) || http_now_ms() >= end) {
            return v;
        }
        nap(50);
    }
}

/*
 * The pools of closed connections go back to the kernel: 300 watches opened and then closed
 * leave the open connections at well under half of their peak, and kwp gives the heap's free
 * pages back (kwp_malloc_trims_total counts it) within a few seconds. Without it the heap keeps
 * those pages resident (the soak's 105 MB against a 21.5 MB baseline).
 */
Test(observe, closing_many_watches_gives_their_memory_back, .timeout = 120)
{
    enum { N = 300 };
    static const char req[] = "GET /api/v1/pods?watch=1&resourceVersion=0 HTTP/1.1\r\n"
                              "Host: kwp\r\n\r\n";
    struct srv sim, px;
    int fds[N];
    double before, after, heap0, heap1;

    srv_spawn(&sim, "sim", ARGS("--objects", "5", "--namespaces", "1"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, READY_MS);
    heap0 = wait_metric(px.url, "kwp_heap_inuse_bytes", "", false, INFINITY);
    for (int i = 0; i < N; i++) {
        fds[i] = sock_connect(px.url, 0);
        cr_assert(fds[i] >= 0 && sock_send_all(fds[i], req, sizeof(req) - 1));
    }
    cr_assert_geq(wait_metric(px.url, "kwp_watches_open", "resource=pods", true, N - 1), N,
                  "every watch is open");
    nap(1500); /* the acceptor has seen the peak (it looks once a second) */
    before = wait_metric(px.url, "kwp_malloc_trims_total", "", false, INFINITY);
    cr_assert(!isnan(before), "kwp_malloc_trims_total is exported");
    heap1 = wait_metric(px.url, "kwp_heap_inuse_bytes", "", false, INFINITY);
    for (int i = 0; i < N; i++) {
        close(fds[i]);
    }
    after = wait_metric(px.url, "kwp_malloc_trims_total", "", true, before);
    cr_assert_gt(after, before, "a trim after the watches closed");
    cr_assert_leq(wait_metric(px.url, "kwp_watches_open", "resource=pods", false, 0), 0);
    /* glibc's bytes in use (absent from a sanitizer build): up with the watches, down after */
    if (!isnan(heap0)) {
        cr_assert_gt(heap0, 0);
        cr_assert_gt(heap1, heap0, "%d open watches hold heap (%.0f -> %.0f bytes)", N, heap0,
                     heap1);
        cr_assert_lt(wait_metric(px.url, "kwp_heap_inuse_bytes", "", false, heap1 - 1), heap1,
                     "closed watches give their heap back");
    }
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* ---- the request log ---------------------------------------------------------------------- */

/* The proxy's stderr log, whole (at most 1 MiB). Caller frees. */
static char *read_log(const struct srv *s)
{
    FILE *f = fopen(proc_log_path(s->p), "r");
    char *buf = calloc(1, 1 << 20);
    size_t n;

    cr_assert(f != NULL && buf != NULL);
    n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Counts the log's lines holding <needle>. */
static int count_lines(const char *log, const char *needle)
{
    int n = 0;

    for (const char *p = log; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (memmem(p, len, needle, strlen(needle)) != NULL) {
            n++;
        }
        p += len + (nl ? 1 : 0);
    }
    return n;
}

/* Polls the log until <needle> is on at least <want> lines (or REQ_MS passed). */
static int wait_lines(const struct srv *s, const char *needle, int want)
{
    uint64_t end = http_now_ms() + REQ_MS;
    int n;

    for (;;) {
        char *log = read_log(s);
        n = count_lines(log, needle);
        free(log);
        if (n >= want || http_now_ms() >= end) {
            return n;
        }
        nap(20);
    }
}

Test(observe, denied_requests_are_logged_as_json_at_most_n_a_second, .timeout = 120)
{
    struct srv sim, px;
    char *log;
    int records = 0;
    uint64_t t0;

    srv_spawn(&sim, "sim", ARGS("--objects", "0", "--churn", "0"), NULL);
    srv_spawn(&px, "proxy",
              ARGS("--upstream", sim.url, "--resources", "pods", "--auth", "delegated",
                   "--log-format", "json", "--log-request-rate", "1", "--metrics-listen",
                   "127.0.0.1:0"),
              NULL);
    srv_wait_ready(&px, READY_MS);
    t0 = http_now_ms();
    for (int i = 0; i < 6; i++) { /* no credentials: 401 at once, no review */
        cr_assert_eq(get_code(px.url, "/api/v1/namespaces/default/pods"), 401);
    }
    if (http_now_ms() - t0 > 800) {
        cr_skip_test("6 requests took %llu ms: too slow a machine to test a 1/s limit",
                     (unsigned long long)(http_now_ms() - t0));
    }
    cr_assert_eq(wait_lines(&px, "\"src\":\"request\"", 1), 1);
    nap(300);
    cr_assert_eq(wait_lines(&px, "\"src\":\"request\"", 2), 1, "the other 5 are suppressed");
    nap(1000); /* the bucket refills */
    cr_assert_eq(get_code(px.url, "/api/v1/namespaces/default/pods?watch=1"), 401);
    cr_assert_eq(wait_lines(&px, "\"code\":\"401\"", 2), 2);

    /* every line of the log is one JSON object with ts, level, src and msg */
    log = read_log(&px);
    for (char *save = NULL, *l = strtok_r(log, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        cJSON *o = cJSON_Parse(l);
        const cJSON *src;

        cr_assert(o != NULL && cJSON_IsObject(o), "not a JSON object: %s", l);
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(o, "ts")), "%s", l);
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(o, "level")), "%s", l);
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(o, "msg")), "%s", l);
        src = cJSON_GetObjectItem(o, "src");
        cr_assert(cJSON_IsString(src), "%s", l);
        if (strcmp(src->valuestring, "request") == 0 && cJSON_GetObjectItem(o, "code")) {
            const char *verb = records < 1 ? "list" : "watch";
            records++;
            cr_assert_str_eq(cJSON_GetObjectItem(o, "code")->valuestring, "401");
            cr_assert_str_eq(cJSON_GetObjectItem(o, "user")->valuestring, "");
            cr_assert_str_eq(cJSON_GetObjectItem(o, "verb")->valuestring, verb);
            cr_assert_str_eq(cJSON_GetObjectItem(o, "resource")->valuestring, "pods");
            cr_assert_str_eq(cJSON_GetObjectItem(o, "namespace")->valuestring, "default");
            cr_assert_str_eq(cJSON_GetObjectItem(o, "reason")->valuestring,
                             "Unauthorized: no credentials");
            cr_assert_str_eq(cJSON_GetObjectItem(o, "msg")->valuestring, "request denied");
        } else if (strcmp(src->valuestring, "request") == 0) {
            cr_assert_str_eq(cJSON_GetObjectItem(o, "suppressed")->valuestring, "5", "%s", l);
            cr_assert_eq(records, 1, "the summary comes before the second record");
        }
        cJSON_Delete(o);
    }
    cr_assert_eq(records, 2);
    free(log);

    /* the whole /metrics with the auth families passes the checker too */
    {
        char *l = read_log(&px), *m = strstr(l, "\"metrics_url\":\""), *q;
        struct expo *e;

        cr_assert(m != NULL, "no metrics_url in the log");
        m += strlen("\"metrics_url\":\"");
        q = strchr(m, '"');
        cr_assert(q != NULL);
        *q = '\0';
        e = scrape(m);
        cr_assert_eq(expo_get(e, "kwp_authentications_total", "result=failure"), 7);
        cr_assert_eq(
            expo_get(e, "kwp_request_duration_seconds_count", "verb=LIST,resource=pods,code=401"),
            6);
        free(e);
        free(l);
    }
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

Test(observe, a_forward_that_fails_upstream_is_logged_and_measured, .timeout = 120)
{
    struct srv sim, px;
    struct expo *e;
    char *log;

    srv_spawn(&sim, "sim", ARGS("--objects", "0", "--churn", "0"), NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    srv_wait_ready(&px, READY_MS);
    srv_stop(&sim, "kwp sim"); /* the upstream is gone: nothing listens on its port */
    cr_assert_eq(get_code(px.url, "/api/v1/namespaces/default/pods/x"), 503);
    cr_assert_eq(wait_lines(&px, "src=request", 1), 1);
    log = read_log(&px);
    cr_assert(strstr(log, "src=request user=\"\" verb=get resource=pods namespace=default "
                          "code=503 reason=\"upstream unavailable: ") != NULL,
              "%s", log);
    cr_assert(strstr(log, "msg=\"request failed\"\n") != NULL);
    free(log);
    e = scrape(px.url);
    cr_assert_eq(
        expo_get(e, "kwp_request_duration_seconds_count", "verb=GET,resource=pods,code=503"), 1);
    cr_assert_geq(
        expo_get(e, "kwp_upstream_request_duration_seconds_count", "verb=GET,code=<error>"), 1);
    free(e);
    srv_stop(&px, "kwp proxy");
}

/* The resourceVersion of the proxy's cached configmaps LIST (rv "0") in namespace <ns>. */
static uint64_t cache_rv(const char *base, const char *ns)
{
    struct http_resp r;
    char url[512];
    uint64_t v = 0;

    snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps?resourceVersion=0", base, ns);
    cr_assert_eq(http_get(url, REQ_MS, &r), 0);
    if (r.code == 200) {
        cJSON *root = cJSON_Parse(r.body);
        const cJSON *rv =
            cJSON_GetObjectItem(cJSON_GetObjectItem(root, "metadata"), "resourceVersion");
        if (cJSON_IsString(rv)) {
            v = strtoull(rv->valuestring, NULL, 10);
        }
        cJSON_Delete(root);
    }
    http_resp_free(&r);
    return v;
}

/* A relist upstream (its watch broke with writes it never carried, compacted past) ends the
 * downstream watches: each is logged once, with the reason, as a watch ended early. */
Test(observe, a_watch_the_relist_ends_is_logged_with_the_reason, .timeout = 120)
{
    struct srv sim, px;
    struct watch *w;
    struct http_resp r;
    char path[512];
    uint64_t r0, held;
    char *log;

    srv_spawn(&sim, "sim", ARGS("--objects", "0", "--churn", "0", "--compaction-interval", "0"),
              NULL);
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "configmaps"), NULL);
    srv_wait_ready(&px, READY_MS);
    api_make_ns(sim.url, "rl");
    r0 = api_cm_create(sim.url, "rl", "c1", NULL, "1", NULL);
    /* The cache itself at r0 (rv "0" is always the cache's answer; rv r0 may be forwarded),
     * so the reflector's watch is open: frozen before it were, the watch it sends on waking
     * would start after the compaction and carry c2, and nothing would relist. */
    for (uint64_t end = http_now_ms() + REQ_MS; cache_rv(px.url, "rl") < r0;) {
        cr_assert_lt(http_now_ms(), end, "the proxy never reached rv %llu", (unsigned long long)r0);
        nap(20);
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/rl/configmaps?watch=1&resourceVersion=%llu",
             (unsigned long long)r0);
    w = api_watch(px.url, path, 200);

    cr_assert_eq(proc_kill(px.p, SIGSTOP), 0); /* its upstream watch ends while it sleeps */
    snprintf(path, sizeof(path), "%s/_sim/drop-watches?resource=configmaps", sim.url);
    cr_assert_eq(http_do("POST", path, NULL, "", NULL, REQ_MS, &r), 0);
    http_resp_free(&r);
    held = api_cm_create(sim.url, "rl", "c2", NULL, "1", NULL);
    snprintf(path, sizeof(path), "%s/_sim/compact?revision=%llu", sim.url,
             (unsigned long long)held);
    cr_assert_eq(http_do("POST", path, NULL, "", NULL, REQ_MS, &r), 0);
    cr_assert_eq(r.code, 200);
    http_resp_free(&r);
    cr_assert_eq(proc_kill(px.p, SIGCONT), 0);

    cr_assert_eq(watch_wait_end(w, 30000), 0, "the relist ends the watch");
    watch_close(w);
    cr_assert_eq(wait_lines(&px, "msg=\"watch ended early\"", 1), 1);
    log = read_log(&px);
    cr_assert(strstr(log, "src=request user=\"\" verb=watch resource=configmaps namespace=rl "
                          "code=200 reason=\"upstream relist: the cache's history was reset\" "
                          "msg=\"watch ended early\"\n") != NULL,
              "%s", log);
    free(log);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* A client that stops reading is closed after --watch-stall-timeout and logged as stalled. */
Test(observe, a_watch_closed_for_stalling_is_logged, .timeout = 120)
{
    static const char rq[] = "GET /api/v1/namespaces/default/pods?watch=1&resourceVersion=0 "
                             "HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n";
    struct srv sim, px;
    char *log;
    int fd;

    srv_spawn(
        &sim, "sim",
        ARGS("--objects", "40", "--namespaces", "1", "--churn", "300", "--object-bytes", "4096"),
        NULL);
    srv_spawn(&px, "proxy",
              ARGS("--upstream", sim.url, "--resources", "pods", "--watch-stall-timeout", "1s"),
              NULL);
    srv_wait_ready(&px, READY_MS);
    fd = sock_connect(px.url, 4096); /* and never reads: the kernel buffers fill at once */
    cr_assert(sock_send_all(fd, rq, sizeof(rq) - 1));
    cr_assert_eq(wait_lines(&px, "msg=\"watch ended early\"", 1), 1, "no stall logged");
    log = read_log(&px);
    cr_assert(strstr(log, "src=request user=\"\" verb=watch resource=pods namespace=default "
                          "code=200 reason=\"client stalled: it read nothing for "
                          "--watch-stall-timeout while events waited\"") != NULL,
              "%s", log);
    free(log);
    close(fd);
    srv_stop(&px, "kwp proxy");
    srv_stop(&sim, "kwp sim");
}

/* ---- the flags ------------------------------------------------------------------------------- */

/* Runs `kwp proxy <args>` to its end; returns its exit status with its stderr in <err>. */
static int run_proxy(const char *const *args, char *err, size_t cap)
{
    char path[] = "/tmp/kwp-observe-XXXXXX";
    int fd = mkstemp(path);
    const char *argv[16] = {proc_kwp_bin(), "proxy"};
    posix_spawn_file_actions_t fa;
    size_t n = 2;
    pid_t pid;
    int st = 0;
    ssize_t got;

    cr_assert_geq(fd, 0);
    for (; args[n - 2] != NULL; n++) {
        argv[n] = args[n - 2];
    }
    argv[n] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    cr_assert_eq(posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    got = pread(fd, err, cap - 1, 0);
    err[got > 0 ? got : 0] = '\0';
    close(fd);
    unlink(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(observe, log_flags_are_checked, .timeout = 60)
{
    char err[4096];

    cr_assert_eq(run_proxy(ARGS("--log-format", "yaml"), err, sizeof(err)), 2);
    cr_assert(strstr(err, "--log-format must be text or json") != NULL, "%s", err);
    cr_assert_eq(run_proxy(ARGS("--log-request-rate", "-1"), err, sizeof(err)), 2);
    cr_assert_eq(run_proxy(ARGS("--help"), err, sizeof(err)), 0);
}

Test(observe, the_environment_twin_turns_json_on, .timeout = 60)
{
    struct srv sim, px;
    char *log, *nl;
    cJSON *o;

    srv_spawn(&sim, "sim", ARGS("--objects", "0", "--churn", "0"), NULL);
    setenv("KWP_LOG_FORMAT", "json", 1); /* this Test's own process: inherited by the proxy */
    srv_spawn(&px, "proxy", ARGS("--upstream", sim.url, "--resources", "pods"), NULL);
    unsetenv("KWP_LOG_FORMAT");
    srv_wait_ready(&px, READY_MS);
    log = read_log(&px);
    srv_stop(&px, "kwp proxy");
    nl = strchr(log, '\n');
    cr_assert(nl != NULL, "no log line");
    *nl = '\0';
    o = cJSON_Parse(log);
    cr_assert(o != NULL, "first line not JSON: %s", log);
    cJSON_Delete(o);
    free(log);
    srv_stop(&sim, "kwp sim");
}
