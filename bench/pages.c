/*
 * bench/pages.c - what one LIST page costs under churn, and LIST rv=0 throughput, for one or
 * two kwp binaries side by side in one run (issue 4).
 *
 * For each object count it starts one `kwp sim --churn R` (pods padded to --object-bytes,
 * spread over --namespaces) and one `kwp proxy --resources pods` per binary in front of it.
 * Then, --rounds times and alternating which proxy goes first:
 *   - a paginated LIST of every pod (limit --limit, then continue tokens), pausing --gap-ms
 *     between pages so the simulator's writes land between pages: every continue page is
 *     served at the first page's rv, now older than the cache;
 *   - --full-lists LISTs with resourceVersion=0 (the whole list, from the cache).
 * Each request is timed by the client from send to last byte, on a kept-alive connection.
 * Reported: medians (and p90) of the page times, first pages apart; MB/s of the rv=0 LISTs.
 * Pagination is checked on the way: every page carries the first page's RV, and the page
 * count matches the first page's remainingItemCount.
 *
 * Loopback only; every process is started here, stopped by its PID (TERM, then KILL after
 * 10 s), and dies with this program (PR_SET_PDEATHSIG). Every loop is bounded in count.
 * Usage: kwp_bench_pages --kwp build/kwp [--kwp-before /path/to/main/kwp]
 *          [--objects 10000,100000] [--churn 500] [--limit 500] [--rounds 3] [--gap-ms 5]
 *          [--full-lists 20] [--object-bytes 1024] [--namespaces 10]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#define READY_MS 300000 /* a 100k-object simulator seeds for ~10 s on a busy 2-core box */
#define STOP_MS 10000
#define HEAD_CAP 4096      /* the body's first bytes kept: the list metadata comes first */
#define METRICS_CAP 262144 /* /metrics is kept whole */
#define MAX_PAGES 100000   /* bound on one pagination pass */
#define MAX_SAMPLES 1000000

struct opts {
    const char *kwp[2]; /* [0] after (also runs the simulator), [1] before (optional) */
    const char *label[2];
    long objects[8];
    size_t n_objects;
    long churn, limit, rounds, gap_ms, full_lists, object_bytes, namespaces;
};

struct child {
    pid_t pid;
    int out; /* its stdout: only the "listening on" line is read */
    char url[256];
};

/* ---- processes ------------------------------------------------------------------------- */

static int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* Starts argv (stderr to /dev/null) and waits for "listening on URL" on its stdout. */
static int child_start(struct child *c, char *const argv[])
{
    int fds[2];
    char line[512];
    size_t len = 0;
    int64_t deadline = now_us() + (int64_t)READY_MS * 1000;

    if (pipe(fds) == -1) {
        return -errno;
    }
    c->pid = fork();
    if (c->pid == -1) {
        int e = errno;

        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (c->pid == 0) {
        int null = open("/dev/null", O_RDWR);

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(null, 0);
        dup2(null, 2);
        dup2(fds[1], 1);
        close(fds[0]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    c->out = fds[0];
    while (now_us() < deadline && len < sizeof(line) - 1) {
        struct pollfd p = {c->out, POLLIN, 0};
        ssize_t n;
        char *at;

        if (poll(&p, 1, 200) <= 0) {
            continue;
        }
        n = read(c->out, line + len, sizeof(line) - 1 - len);
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
        line[len] = '\0';
        at = strstr(line, "listening on ");
        if (at != NULL && strchr(at, '\n') != NULL) {
            *strchr(at, '\n') = '\0';
            snprintf(c->url, sizeof(c->url), "%s", at + strlen("listening on "));
            return 0;
        }
    }
    fprintf(stderr, "bench: %s %s did not print its address\n", argv[0], argv[1]);
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    close(c->out);
    return -ETIMEDOUT;
}

/* TERM, up to STOP_MS, then KILL. Returns the wait status. */
static int child_stop(struct child *c)
{
    int64_t deadline = now_us() + (int64_t)STOP_MS * 1000;
    int st = 0;

    kill(c->pid, SIGTERM);
    while (waitpid(c->pid, &st, WNOHANG) == 0) {
        if (now_us() > deadline) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, &st, 0);
            break;
        }
        nap_ms(20);
    }
    close(c->out);
    return st;
}

/* VmRSS of <pid> in MB (from /proc), or -1. */
static double rss_mb(pid_t pid)
{
    char path[64], line[256];
    double mb = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            mb = strtod(line + 6, NULL) / 1024.0;
        }
    }
    fclose(f);
    return mb;
}

/* ---- HTTP ------------------------------------------------------------------------------ */

struct body {
    char *head; /* the first <cap> bytes, NUL-terminated */
    size_t cap;
    size_t head_len;
    size_t bytes;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ctx)
{
    struct body *b = ctx;
    size_t len = sz * n;
    size_t room = b->cap - b->head_len;

    if (room > 0) {
        size_t take = len < room ? len : room;

        memcpy(b->head + b->head_len, p, take);
        b->head_len += take;
        b->head[b->head_len] = '\0';
    }
    b->bytes += len;
    return len;
}

/*
 * GETs <url> on <h>'s kept-alive connection, keeping the body's first <cap> bytes in <buf>
 * (cap + 1 bytes); returns the status or -1, and the time.
 */
static long get_into(CURL *h, const char *url, struct body *b, char *buf, size_t cap, int64_t *us)
{
    long code = -1;
    int64_t t0;
    CURLcode rc;

    memset(b, 0, sizeof(*b));
    b->head = buf;
    b->cap = cap;
    buf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kwp-bench"); /* not curl/: no pretty printing */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    t0 = now_us();
    rc = curl_easy_perform(h);
    *us = now_us() - t0;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    }
    return code;
}

static long get(CURL *h, const char *url, struct body *b, int64_t *us)
{
    static char buf[HEAD_CAP + 1]; /* one thread */

    return get_into(h, url, b, buf, HEAD_CAP, us);
}

/* Copies the JSON string value of "<key>": from the body's head into <out>; false if absent. */
static bool head_str(const struct body *b, const char *key, char *out, size_t cap)
{
    char pat[64];
    const char *at, *end;

    snprintf(pat, sizeof(pat), "\"%s\":\"", key);
    at = strstr(b->head, pat);
    if (at == NULL) {
        return false;
    }
    at += strlen(pat);
    end = strchr(at, '"');
    if (end == NULL || (size_t)(end - at) >= cap) {
        return false;
    }
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = '\0';
    return true;
}

static long head_num(const struct body *b, const char *key)
{
    char pat[64];
    const char *at;

    snprintf(pat, sizeof(pat), "\"%s\":", key);
    at = strstr(b->head, pat);
    return at != NULL ? strtol(at + strlen(pat), NULL, 10) : -1;
}

/* ---- measurements ---------------------------------------------------------------------- */

struct samples {
    double *v;
    size_t n;
};

static void add(struct samples *s, double x)
{
    if (s->n < MAX_SAMPLES) {
        s->v[s->n++] = x;
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double pct(struct samples *s, double p)
{
    if (s->n == 0) {
        return 0;
    }
    qsort(s->v, s->n, sizeof(double), cmp_d);
    return s->v[(size_t)(p * (double)(s->n - 1) + 0.5)];
}

struct result {
    struct samples first, next, mbs, full_ms;
    long passes_ok, passes;
};

/* One paginated LIST of every pod; page times go to <r>. Returns 0 or -1 (reported). */
static int paginate(CURL *h, const char *base, const struct opts *o, struct result *r)
{
    char url[8192], tok[4096] = "", rv[32] = "", prv[32];
    long expect_pages = -1, pages = 0;
    struct body b;

    for (;;) {
        int64_t us;
        long code;

        if (pages == 0) {
            snprintf(url, sizeof(url), "%s/api/v1/pods?limit=%ld", base, o->limit);
        } else {
            snprintf(url, sizeof(url), "%s/api/v1/pods?limit=%ld&continue=%s", base, o->limit, tok);
        }
        code = get(h, url, &b, &us);
        if (code != 200) {
            fprintf(stderr, "bench: page %ld of %s: HTTP %ld %.200s\n", pages, base, code, b.head);
            return -1;
        }
        add(pages == 0 ? &r->first : &r->next, (double)us / 1000.0);
        if (!head_str(&b, "resourceVersion", prv, sizeof(prv))) {
            fprintf(stderr, "bench: page %ld without a resourceVersion\n", pages);
            return -1;
        }
        if (pages == 0) {
            long remaining = head_num(&b, "remainingItemCount");

            snprintf(rv, sizeof(rv), "%s", prv);
            expect_pages = remaining < 0 ? 1 : 1 + (remaining + o->limit - 1) / o->limit;
        } else if (strcmp(prv, rv) != 0) {
            fprintf(stderr, "bench: page %ld at rv %s, first page at %s\n", pages, prv, rv);
            return -1;
        }
        pages++;
        if (!head_str(&b, "continue", tok, sizeof(tok))) {
            break;
        }
        if (pages >= MAX_PAGES) {
            return -1;
        }
        nap_ms(o->gap_ms); /* writes land here */
    }
    if (pages != expect_pages) {
        fprintf(stderr, "bench: %ld pages, remainingItemCount promised %ld\n", pages, expect_pages);
        return -1;
    }
    return 0;
}

static void full_list(CURL *h, const char *base, struct result *r)
{
    char url[512];
    struct body b;
    int64_t us;

    snprintf(url, sizeof(url), "%s/api/v1/pods?resourceVersion=0", base);
    if (get(h, url, &b, &us) == 200 && us > 0) {
        add(&r->mbs, (double)b.bytes / (double)us); /* bytes/us = MB/s */
        add(&r->full_ms, (double)us / 1000.0);
    }
}

static bool ready(CURL *h, const char *base)
{
    char url[512];
    struct body b;
    int64_t us;

    snprintf(url, sizeof(url), "%s/readyz", base);
    return get(h, url, &b, &us) == 200;
}

/* The value of `<name>{resource="pods"}` in <base>'s /metrics, or -1. */
static double metric(CURL *h, const char *base, const char *name)
{
    static char buf[METRICS_CAP + 1];
    char url[512], key[128];
    struct body b;
    const char *at;
    int64_t us;

    snprintf(url, sizeof(url), "%s/metrics", base);
    snprintf(key, sizeof(key), "\n%s{resource=\"pods\"} ", name);
    if (get_into(h, url, &b, buf, METRICS_CAP, &us) != 200) {
        return -1;
    }
    at = strstr(b.head, key);
    return at != NULL ? strtod(at + strlen(key), NULL) : -1;
}

/* ---- one object count ------------------------------------------------------------------ */

static int run(const struct opts *o, long objects, size_t n_bins)
{
    char s_obj[32], s_churn[32], s_bytes[32], s_ns[32];
    struct child sim, px[2];
    struct result res[2];
    CURL *h[2] = {NULL, NULL};
    int rc = -1;

    memset(res, 0, sizeof(res));
    snprintf(s_obj, sizeof(s_obj), "%ld", objects);
    snprintf(s_churn, sizeof(s_churn), "%ld", o->churn);
    snprintf(s_bytes, sizeof(s_bytes), "%ld", o->object_bytes);
    snprintf(s_ns, sizeof(s_ns), "%ld", o->namespaces);
    {
        char *argv[] = {
            (char *)o->kwp[0],       "sim", "--listen", "127.0.0.1:0", "--objects",      s_obj,
            "--namespaces",          s_ns,  "--churn",  s_churn,       "--object-bytes", s_bytes,
            "--compaction-interval", "0",   NULL};

        if (child_start(&sim, argv) != 0) {
            return -1;
        }
    }
    for (size_t k = 0; k < n_bins; k++) {
        char *argv[] = {(char *)o->kwp[k], "proxy",       "--listen", "127.0.0.1:0", "--upstream",
                        sim.url,           "--resources", "pods",     NULL};
        int64_t deadline = now_us() + (int64_t)READY_MS * 1000;

        if (child_start(&px[k], argv) != 0) {
            for (size_t j = 0; j < k; j++) {
                child_stop(&px[j]);
                curl_easy_cleanup(h[j]);
            }
            child_stop(&sim);
            return -1;
        }
        h[k] = curl_easy_init();
        res[k].first.v = calloc(MAX_SAMPLES, sizeof(double));
        res[k].next.v = calloc(MAX_SAMPLES, sizeof(double));
        res[k].mbs.v = calloc(MAX_SAMPLES, sizeof(double));
        res[k].full_ms.v = calloc(MAX_SAMPLES, sizeof(double));
        while (!ready(h[k], px[k].url) && now_us() < deadline) {
            nap_ms(100);
        }
    }
    for (long round = 0; round < o->rounds; round++) {
        for (size_t i = 0; i < n_bins; i++) {
            size_t k = (i + (size_t)round) % n_bins; /* alternate who goes first */

            res[k].passes++;
            if (paginate(h[k], px[k].url, o, &res[k]) == 0) {
                res[k].passes_ok++;
            }
        }
        for (long i = 0; i < o->full_lists; i++) {
            for (size_t j = 0; j < n_bins; j++) {
                size_t k = (j + (size_t)i) % n_bins;

                full_list(h[k], px[k].url, &res[k]);
            }
        }
    }
    printf("\n%ld objects (%ld B each, %ld namespaces), %ld writes/s, limit=%ld, %ld ms between "
           "pages, %ld rounds\n",
           objects, o->object_bytes, o->namespaces, o->churn, o->limit, o->gap_ms, o->rounds);
    printf("| binary | passes ok | continue pages | page ms p50 | page ms p90 | first page ms p50 "
           "| rv=0 LIST MB/s p50 | rv=0 LIST ms p50 | proxy RSS MB | history events |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    rc = 0;
    for (size_t k = 0; k < n_bins; k++) {
        struct result *r = &res[k];

        printf("| %s | %ld/%ld | %zu | %.2f | %.2f | %.2f | %.0f | %.1f | %.0f | %.0f |\n",
               o->label[k], r->passes_ok, r->passes, r->next.n, pct(&r->next, 0.5),
               pct(&r->next, 0.9), pct(&r->first, 0.5), pct(&r->mbs, 0.5), pct(&r->full_ms, 0.5),
               rss_mb(px[k].pid), metric(h[k], px[k].url, "kwp_history_events"));
        if (r->passes_ok != r->passes) {
            rc = -1;
        }
        free(r->first.v);
        free(r->next.v);
        free(r->mbs.v);
        free(r->full_ms.v);
        curl_easy_cleanup(h[k]);
        child_stop(&px[k]);
    }
    fflush(stdout);
    child_stop(&sim);
    return rc;
}

/* ---- flags ----------------------------------------------------------------------------- */

static long num(const char *flag, const char *v, long lo, long hi)
{
    char *end;
    long x;

    errno = 0;
    x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
        fprintf(stderr, "bench: %s wants a number in [%ld, %ld], got %s\n", flag, lo, hi, v);
        exit(2);
    }
    return x;
}

static void parse(int argc, char **argv, struct opts *o)
{
    const char *objects = "10000,100000";

    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (v == NULL) {
            fprintf(stderr, "bench: %s needs a value\n", f);
            exit(2);
        }
        i++;
        if (strcmp(f, "--kwp") == 0) {
            o->kwp[0] = v;
        } else if (strcmp(f, "--kwp-before") == 0) {
            o->kwp[1] = v;
        } else if (strcmp(f, "--objects") == 0) {
            objects = v;
        } else if (strcmp(f, "--churn") == 0) {
            o->churn = num(f, v, 0, 100000);
        } else if (strcmp(f, "--limit") == 0) {
            o->limit = num(f, v, 1, 100000);
        } else if (strcmp(f, "--rounds") == 0) {
            o->rounds = num(f, v, 1, 1000);
        } else if (strcmp(f, "--gap-ms") == 0) {
            o->gap_ms = num(f, v, 0, 10000);
        } else if (strcmp(f, "--full-lists") == 0) {
            o->full_lists = num(f, v, 0, 10000);
        } else if (strcmp(f, "--object-bytes") == 0) {
            o->object_bytes = num(f, v, 0, 1 << 20);
        } else if (strcmp(f, "--namespaces") == 0) {
            o->namespaces = num(f, v, 1, 10000);
        } else {
            fprintf(stderr, "bench: unknown flag %s (see the comment atop bench/pages.c)\n", f);
            exit(2);
        }
    }
    if (o->kwp[0] == NULL) {
        fprintf(stderr, "usage: kwp_bench_pages --kwp PATH [--kwp-before PATH] [flags]\n");
        exit(2);
    }
    for (const char *p = objects; *p != '\0' && o->n_objects < 8;) {
        char *end;
        long x = strtol(p, &end, 10);

        if (end == p || x < 1 || x > 10000000) {
            fprintf(stderr, "bench: --objects wants numbers separated by commas\n");
            exit(2);
        }
        o->objects[o->n_objects++] = x;
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') {
            fprintf(stderr, "bench: --objects wants numbers separated by commas\n");
            exit(2);
        }
    }
}

int main(int argc, char **argv)
{
    struct opts o = {.label = {"after (--kwp)", "before (--kwp-before)"},
                     .churn = 500,
                     .limit = 500,
                     .rounds = 3,
                     .gap_ms = 5,
                     .full_lists = 20,
                     .object_bytes = 1024,
                     .namespaces = 10};
    size_t n_bins;
    int rc = 0;

    parse(argc, argv, &o);
    n_bins = o.kwp[1] != NULL ? 2 : 1;
    signal(SIGPIPE, SIG_IGN);
    /* the proxies stopped between runs exit at once (the flag's environment twin, which a
     * binary older than --shutdown-delay ignores) */
    setenv("KWP_SHUTDOWN_DELAY", "0", 0);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("kwp_bench_pages: after=%s before=%s\n", o.kwp[0], o.kwp[1] ? o.kwp[1] : "(none)");
    for (size_t i = 0; i < o.n_objects; i++) {
        if (run(&o, o.objects[i], n_bins) != 0) {
            rc = 1;
        }
    }
    curl_global_cleanup();
    return rc;
}
