/*
 * test_scale.c - the per-connection limits of kwp's HTTP server (issue 5), black-box:
 *
 *   - the connection pool (--conn-memory) holds a request's headers and a stream's write
 *     buffer: big headers still work, or get a 431 that says why; a watch frame many times
 *     the pool arrives whole, in chunks that never split a UTF-8 character;
 *   - streams that end with a close (HTTP/1.0 without chunking, "Connection: close") stream;
 *   - a watch quiet long enough to give its write buffer back (5 s) still delivers intact;
 *   - at the connection cap (--max-connections, or what the open-file limit allows, which
 *     kwp says in its log) new clients wait in the listen queue until a slot frees.
 *
 * Each Test starts its own `kwp sim` and `kwp proxy` on 127.0.0.1:0 (proc_spawn), waits for
 * /readyz with a bounded poll, and stops both, asserting exit status 0. Raw sockets are used
 * where the HTTP framing itself is what is tested. No timing or memory figure is asserted.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cJSON.h>
#include <criterion/criterion.h>

#include "tests/support/http.h"
#include "tests/support/nap.h"
#include "tests/support/proc.h"
#include "tests/support/sock.h"

#define T_TIMEOUT 120 /* one value per file */
#define REQ_MS 15000L
#define READY_MS 30000L
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

struct srv {
    struct proc *p;
    char url[256];
};

/* kwp <cmd> --listen 127.0.0.1:0 [--upstream <up>] <args...>; a proxy is waited ready. */
static void start(struct srv *s, const char *cmd, const char *up, const char *const *args)
{
    const char *upstream[] = {"--upstream", up, NULL};
    uint64_t end;
    long code = 0;

    memset(s, 0, sizeof(*s));
    s->p = proc_spawn_kwp(cmd, up ? upstream : NULL, args, s->url, sizeof(s->url));
    cr_assert_not_null(s->p, "could not start kwp %s", cmd);
    if (!up) {
        return;
    }
    end = http_now_ms() + READY_MS;
    while (code != 200 && http_now_ms() < end) {
        char url[300];
        struct http_resp r;
        snprintf(url, sizeof(url), "%s/readyz", s->url);
        code = http_get(url, 2000, &r) == 0 ? r.code : 0;
        http_resp_free(&r);
        if (code != 200) {
            nap(20);
        }
    }
    cr_assert_eq(code, 200, "proxy %s not ready", s->url);
}

static void stop(struct srv *s, const char *what)
{
    int st = proc_stop(s->p);

    s->p = NULL;
    cr_assert_eq(st, 0, "%s exited with status %d (0 expected after SIGTERM)", what, st);
}

/* GET <base><path> with one extra header line (or none). */
static void get_with(const char *base, const char *path, const char *header, struct http_resp *r)
{
    size_t cap = strlen(base) + strlen(path) + 1;
    char *url = malloc(cap);
    const char *hdrs[] = {"Accept: application/json", header, NULL};
    int rc;

    cr_assert_not_null(url);
    snprintf(url, cap, "%s%s", base, path);
    rc = http_do("GET", url, NULL, NULL, header ? hdrs : NULL, REQ_MS, r);
    cr_assert_eq(rc, 0, "GET %s: no response (%d)", url, rc);
    free(url);
}

/* "Authorization: Bearer aaaa..." with a token of <len> characters (caller frees). */
static char *bearer(size_t len)
{
    char *h = malloc(len + 32);
    int n;

    cr_assert_not_null(h);
    n = snprintf(h, 32, "Authorization: Bearer ");
    memset(h + n, 'a', len);
    h[n + (int)len] = '\0';
    return h;
}

/* POST a ConfigMap named <name> in <ns> whose data.k is <val>; asserts 201. */
static void cm_post(const char *base, const char *ns, const char *name, const char *val)
{
    char url[400];
    size_t cap = strlen(val) + 256;
    char *body = malloc(cap);
    struct http_resp r;

    cr_assert_not_null(body);
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps", base, ns);
    snprintf(body, cap,
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
             "\"data\":{\"k\":\"%s\"}}",
             name, val);
    cr_assert_eq(http_do("POST", url, "application/json", body, NULL, REQ_MS, &r), 0);
    cr_assert_eq(r.code, 201, "create configmap %s: HTTP %ld %.300s", name, r.code, r.body);
    http_resp_free(&r);
    free(body);
}

static void ns_post(const char *base, const char *ns)
{
    char url[300], body[200];
    struct http_resp r;

    snprintf(url, sizeof(url), "%s/api/v1/namespaces", base);
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}", ns);
    cr_assert_eq(http_do("POST", url, "application/json", body, NULL, REQ_MS, &r), 0);
    cr_assert(r.code == 201 || r.code == 409, "create namespace: HTTP %ld", r.code);
    http_resp_free(&r);
}

/* <n> bytes of text mixing 1-, 2-, 3- and 4-byte UTF-8 characters (caller frees). */
static char *utf8_text(size_t n)
{
    static const char *const ch[] = {"a", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e"};
    char *s = malloc(n + 8);
    size_t len = 0;

    cr_assert_not_null(s);
    for (size_t i = 0; len < n; i++) {
        const char *c = ch[i % 4];
        memcpy(s + len, c, strlen(c));
        len += strlen(c);
    }
    s[len] = '\0';
    return s;
}

/* data.k of the object of watch line <line> (caller frees), NULL when absent. */
static char *event_data(const char *line, char *type, size_t type_cap)
{
    cJSON *j = cJSON_Parse(line);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "object");
    const cJSON *k =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "data"), "k");
    char *out = NULL;

    cr_assert_not_null(j, "a watch line that is not JSON: %.200s", line);
    snprintf(type, type_cap, "%s", cJSON_IsString(t) ? t->valuestring : "");
    if (cJSON_IsString(k)) {
        out = strdup(k->valuestring);
    }
    cJSON_Delete(j);
    return out;
}

/* ---- raw HTTP ---------------------------------------------------------------------------- */

/* Connects to <base> (http://127.0.0.1:PORT) and sends <request> whole. */
static int raw_send(const char *base, const char *request)
{
    int fd = sock_connect(base, 0);

    cr_assert(sock_send_all(fd, request, strlen(request)), "send: %s", strerror(errno));
    return fd;
}

/* Reads into <buf> until EOF, <stop> appears, or <ms> pass; returns the bytes read. */
static size_t raw_read(int fd, char *buf, size_t cap, const char *stop, long ms)
{
    uint64_t end = http_now_ms() + (uint64_t)ms;
    size_t len = 0;

    while (len + 1 < cap && http_now_ms() < end) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t k;

        if (poll(&p, 1, 50) <= 0) {
            continue;
        }
        k = recv(fd, buf + len, cap - 1 - len, 0);
        if (k <= 0) {
            break;
        }
        len += (size_t)k;
        buf[len] = '\0';
        if (stop && memmem(buf, len, stop, strlen(stop))) {
            break;
        }
    }
    buf[len] = '\0';
    return len;
}

/* Length of the UTF-8 sequence a lead byte starts, 0 for a continuation byte. */
static size_t utf8_seq_len(unsigned char c)
{
    return c < 0x80             ? 1
           : (c & 0xE0) == 0xC0 ? 2
           : (c & 0xF0) == 0xE0 ? 3
           : (c & 0xF8) == 0xF0 ? 4
                                : 0;
}

/* True when <p>[0..n) starts and ends on character boundaries. */
static bool whole_chars(const unsigned char *p, size_t n)
{
    size_t i = 0;

    while (i < n) {
        size_t l = utf8_seq_len(p[i]);
        if (l == 0 || i + l > n) {
            return false;
        }
        i += l;
    }
    return true;
}

/*
 * Decodes a chunked body starting at <p> (after the header block) into <out>, asserting
 * that every chunk holds whole UTF-8 characters. Returns the number of chunks; *<done> says
 * whether the last (zero) chunk was seen.
 */
static size_t dechunk_checked(const char *p, size_t n, char *out, size_t *out_len, bool *done)
{
    const char *end = p + n;
    size_t chunks = 0;

    *out_len = 0;
    *done = false;
    while (p < end) {
        char *e;
        unsigned long len = strtoul(p, &e, 16);
        const char *data = strstr(e, "\r\n");

        cr_assert_not_null(data, "bad chunk header");
        data += 2;
        if (len == 0) {
            *done = true;
            break;
        }
        cr_assert_leq(data + len + 2, end, "truncated chunk");
        cr_assert(whole_chars((const unsigned char *)data, len),
                  "chunk %zu (%lu bytes) splits a UTF-8 character", chunks, len);
        memcpy(out + *out_len, data, len);
        *out_len += len;
        p = data + len + 2;
        chunks++;
    }
    out[*out_len] = '\0';
    return chunks;
}

/* ---- tests ------------------------------------------------------------------------------- */

/* A 4 KiB token in an 8 KiB pool works for a LIST and a watch; a 7 KB one leaves too little
 * of the pool and gets kwp's 431 Status; one bigger than the pool gets libmicrohttpd's 431. */
Test(scale, big_request_headers_against_a_small_pool, .timeout = T_TIMEOUT)
{
    struct srv sim, px;
    struct http_resp r;
    char *h;
    cJSON *j;

    start(&sim, "sim", NULL, ARGS("--objects", "3", "--churn", "0"));
    start(&px, "proxy", sim.url, ARGS("--resources", "pods", "--conn-memory", "8Ki"));

    h = bearer(4000);
    get_with(px.url, "/api/v1/pods?resourceVersion=0", h, &r);
    cr_assert_eq(r.code, 200, "LIST with a 4000-byte token: HTTP %ld %.300s", r.code, r.body);
    cr_assert_not_null(strstr(r.body, "\"kind\":\"PodList\""));
    http_resp_free(&r);
    get_with(px.url, "/api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1", h, &r);
    cr_assert_eq(r.code, 200, "watch with a 4000-byte token: HTTP %ld", r.code);
    cr_assert_not_null(strstr(r.body, "{\"type\":\"ADDED\""), "the watch streamed");
    http_resp_free(&r);
    free(h);

    h = bearer(7000);
    get_with(px.url, "/api/v1/pods?watch=1&resourceVersion=0", h, &r);
    cr_assert_eq(r.code, 431, "7000-byte token in an 8 KiB pool: HTTP %ld %.300s", r.code, r.body);
    j = cJSON_Parse(r.body);
    cr_assert_not_null(j, "a Status body: %.300s", r.body);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "kind")->valuestring, "Status");
    cr_assert_eq(cJSON_GetObjectItemCaseSensitive(j, "code")->valuedouble, 431);
    cr_assert_not_null(
        strstr(cJSON_GetObjectItemCaseSensitive(j, "message")->valuestring, "--conn-memory"),
        "the message names the flag: %s", r.body);
    cJSON_Delete(j);
    http_resp_free(&r);
    free(h);

    h = bearer(12000);
    get_with(px.url, "/api/v1/pods?resourceVersion=0", h, &r);
    cr_assert_eq(r.code, 431, "headers bigger than the pool: HTTP %ld", r.code);
    http_resp_free(&r);
    free(h);

    /* the server is fine afterwards */
    get_with(px.url, "/api/v1/pods?resourceVersion=0", NULL, &r);
    cr_assert_eq(r.code, 200);
    http_resp_free(&r);
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}

/* With the smallest pool (4 KiB), 30 KB objects full of multi-byte characters are watched
 * whole, as initial events and as a live one, in chunks that never split a character. */
Test(scale, watch_frames_bigger_than_the_pool, .timeout = T_TIMEOUT)
{
    static char raw[1 << 20], body[1 << 20];
    struct srv sim, px;
    char *text = utf8_text(30000), *text2 = utf8_text(31000), type[32];
    char req[512];
    size_t n, body_len, chunks, lines = 0, added = 0, modified = 0;
    bool done;
    int fd;

    start(&sim, "sim", NULL, ARGS("--objects", "0", "--churn", "0"));
    ns_post(sim.url, "big");
    cm_post(sim.url, "big", "one", text);
    cm_post(sim.url, "big", "two", text);
    start(&px, "proxy", sim.url, ARGS("--resources", "configmaps", "--conn-memory", "4Ki"));

    snprintf(req, sizeof(req),
             "GET /api/v1/namespaces/big/configmaps?watch=1&resourceVersion=0&timeoutSeconds=3 "
             "HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n");
    fd = raw_send(px.url, req);
    n = raw_read(fd, raw, sizeof(raw), "\r\n\r\n", REQ_MS);
    cr_assert_not_null(strstr(raw, "Transfer-Encoding: chunked"), "chunked: %.300s", raw);
    {
        /* a live event while the watch is open */
        char url[300], *patch = malloc(strlen(text2) + 64);
        struct http_resp r;
        cr_assert_not_null(patch);
        snprintf(url, sizeof(url), "%s/api/v1/namespaces/big/configmaps/one", sim.url);
        snprintf(patch, strlen(text2) + 64, "{\"data\":{\"k\":\"%s\"}}", text2);
        cr_assert_eq(http_do("PATCH", url, "application/merge-patch+json", patch, NULL, REQ_MS, &r),
                     0);
        cr_assert_eq(r.code, 200, "patch: HTTP %ld", r.code);
        http_resp_free(&r);
        free(patch);
    }
    n += raw_read(fd, raw + n, sizeof(raw) - n, "\r\n0\r\n\r\n", REQ_MS);
    close(fd);
    chunks =
        dechunk_checked(strstr(raw, "\r\n\r\n") + 4,
                        n - (size_t)(strstr(raw, "\r\n\r\n") + 4 - raw), body, &body_len, &done);
    cr_assert(done, "the stream ended with timeoutSeconds (%zu bytes)", body_len);
    for (char *line = body, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        char *data;
        *nl = '\0';
        data = event_data(line, type, sizeof(type));
        lines++;
        if (strcmp(type, "ADDED") == 0) {
            cr_assert(data && strcmp(data, text) == 0, "an ADDED object arrived altered");
            added++;
        } else if (strcmp(type, "MODIFIED") == 0) {
            cr_assert(data && strcmp(data, text2) == 0, "the MODIFIED object arrived altered");
            modified++;
        }
        free(data);
    }
    cr_assert_eq(added, 2u);
    cr_assert_eq(modified, 1u);
    cr_assert_gt(chunks, 3 * lines,
                 "frames of 30 KB through a 4 KiB pool take many chunks "
                 "(%zu chunks, %zu lines)",
                 chunks, lines);
    free(text);
    free(text2);
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}

/* Watches that end by closing the connection: HTTP/1.0 (no chunked encoding: the body is
 * raw lines until the close) and HTTP/1.1 with "Connection: close" (chunked, then closed). */
Test(scale, watches_that_end_with_a_close, .timeout = T_TIMEOUT)
{
    static char raw[1 << 20], body[1 << 20];
    static const char *const heads[] = {"HTTP/1.0\r\n",
                                        "HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"};
    struct srv sim, px;

    start(&sim, "sim", NULL, ARGS("--objects", "5", "--churn", "0"));
    start(&px, "proxy", sim.url, ARGS("--resources", "pods", "--conn-memory", "4Ki"));
    for (size_t i = 0; i < 2; i++) {
        char req[512];
        const char *b;
        size_t lines = 0, n, body_len;
        bool done = false;
        int fd;

        snprintf(req, sizeof(req),
                 "GET /api/v1/pods?watch=1&resourceVersion=0&timeoutSeconds=1 %s"
                 "Accept: application/json\r\n\r\n",
                 heads[i]);
        fd = raw_send(px.url, req);
        n = raw_read(fd, raw, sizeof(raw), NULL, REQ_MS); /* until the server closes */
        close(fd);
        cr_assert_eq(strncmp(strchr(raw, ' ') + 1, "200", 3), 0, "%.200s", raw);
        b = strstr(raw, "\r\n\r\n");
        cr_assert_not_null(b);
        b += 4;
        if (i == 0) {
            cr_assert_null(strstr(raw, "chunked"), "HTTP/1.0 is not chunked: %.300s", raw);
            body_len = n - (size_t)(b - raw);
            memcpy(body, b, body_len + 1);
        } else {
            dechunk_checked(b, n - (size_t)(b - raw), body, &body_len, &done);
            cr_assert(done, "the chunked stream ended before the close");
        }
        for (const char *l = body, *nl; (nl = strchr(l, '\n')) != NULL; l = nl + 1) {
            cr_assert_eq(strncmp(l, "{\"type\":\"ADDED\"", 15), 0, "line %zu: %.100s", lines, l);
            lines++;
        }
        cr_assert_eq(lines, 5u, "%s: the 5 pods as initial events", i ? "HTTP/1.1 close" : "1.0");
    }
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}

/* A watch that sent nothing for more than 5 s gave its write buffer back; the next events,
 * one of them bigger than a page, arrive whole. */
Test(scale, quiet_watch_delivers_after_releasing_its_buffer, .timeout = T_TIMEOUT)
{
    struct srv sim, px;
    struct watch *w;
    char url[400], type[32], *text = utf8_text(20000), *data;

    start(&sim, "sim", NULL, ARGS("--objects", "0", "--churn", "0"));
    ns_post(sim.url, "q");
    cm_post(sim.url, "q", "first", "x");
    start(&px, "proxy", sim.url, ARGS("--resources", "configmaps"));
    snprintf(url, sizeof(url), "%s/api/v1/namespaces/q/configmaps?watch=1&resourceVersion=0",
             px.url);
    w = watch_open(url, 120000);
    cr_assert_eq(watch_wait_status(w, REQ_MS), 200);
    cr_assert_eq(watch_wait_lines(w, 1, REQ_MS), 0, "the initial event");
    nap(6500); /* longer than the 5 s after which a quiet watch releases its buffer */
    cm_post(sim.url, "q", "second", text);
    cm_post(sim.url, "q", "third", "small");
    cr_assert_eq(watch_wait_lines(w, 3, REQ_MS), 0, "two events after the quiet time");
    data = event_data(watch_line(w, 1, NULL), type, sizeof(type));
    cr_assert_str_eq(type, "ADDED");
    cr_assert(data && strcmp(data, text) == 0, "the big event arrived altered");
    free(data);
    data = event_data(watch_line(w, 2, NULL), type, sizeof(type));
    cr_assert(data && strcmp(data, "small") == 0);
    free(data);
    watch_close(w);
    free(text);
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}

/* At --max-connections, a new client is not refused: it waits in the listen queue and is
 * answered as soon as a connection closes. */
Test(scale, connection_cap_queues_new_clients, .timeout = T_TIMEOUT)
{
    enum { CAP = 16 };
    struct srv sim, px;
    struct watch *w[CAP], *late;
    char url[400];

    start(&sim, "sim", NULL, ARGS("--objects", "2", "--churn", "0"));
    start(&px, "proxy", sim.url, ARGS("--resources", "pods", "--max-connections", "16"));
    snprintf(url, sizeof(url), "%s/api/v1/pods?watch=1&resourceVersion=0", px.url);
    for (int i = 0; i < CAP; i++) {
        w[i] = watch_open(url, 120000);
        cr_assert_eq(watch_wait_status(w[i], REQ_MS), 200, "watch %d of %d", i + 1, CAP);
    }
    late = watch_open(url, 120000);
    cr_assert_eq(watch_wait_status(late, 1500), 0, "no answer while all %d slots are taken", CAP);
    cr_assert_not(watch_ended(late, NULL, NULL), "the late client is queued, not refused");
    watch_close(w[0]);
    cr_assert_eq(watch_wait_status(late, REQ_MS), 200, "answered once a slot freed");
    cr_assert_eq(watch_wait_lines(late, 2, REQ_MS), 0);
    watch_close(late);
    for (int i = 1; i < CAP; i++) {
        watch_close(w[i]);
    }
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}

/* Under a hard open-file limit kwp caps its connections below it and says so. */
Test(scale, open_file_limit_caps_connections_and_says_so, .timeout = T_TIMEOUT)
{
    struct rlimit rl = {300, 300};
    struct srv sim, px;
    struct http_resp r;
    char log[65536];
    FILE *f;
    size_t n;

    start(&sim, "sim", NULL, ARGS("--objects", "1", "--churn", "0"));
    /* inherited by the proxy only: this test runs in a process of its own */
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0, "setrlimit: %s", strerror(errno));
    start(&px, "proxy", sim.url, ARGS("--resources", "pods"));
    get_with(px.url, "/api/v1/pods?resourceVersion=0", NULL, &r);
    cr_assert_eq(r.code, 200);
    http_resp_free(&r);
    f = fopen(proc_log_path(px.p), "r");
    cr_assert_not_null(f);
    n = fread(log, 1, sizeof(log) - 1, f);
    fclose(f);
    log[n] = '\0';
    cr_assert_not_null(strstr(log, "max_connections=236 wanted=60000 nofile_soft=300 "
                                   "nofile_hard=300"),
                       "the cap in the log:\n%s", log);
    cr_assert_not_null(strstr(log, "raise the hard limit"));
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}

/* Whether <p>'s log shows <needle> within READY_MS (the log line may trail readiness). */
static bool log_shows(const struct proc *p, const char *needle)
{
    uint64_t end = http_now_ms() + READY_MS;

    while (!proc_log_has(p, needle) && http_now_ms() < end) {
        nap(50);
    }
    return proc_log_has(p, needle);
}

/* The HTTP workers default to one per core the proxy may run on (its affinity mask). */
Test(scale, http_workers_default_to_the_cores_it_may_run_on, .timeout = T_TIMEOUT)
{
    struct srv sim, px;
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(0, &one);
    start(&sim, "sim", NULL, ARGS("--objects", "1", "--churn", "0"));
    /* inherited by the proxy only: this test runs in a process of its own */
    cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0, "sched_setaffinity: %s",
                 strerror(errno));
    start(&px, "proxy", sim.url, ARGS("--resources", "pods"));
    cr_assert(log_shows(px.p, "threads=1 msg=\"proxy ready\""), "one core, one worker");
    stop(&px, "kwp proxy");
    start(&px, "proxy", sim.url, ARGS("--resources", "pods", "--threads", "3"));
    cr_assert(log_shows(px.p, "threads=3 msg=\"proxy ready\""), "--threads wins");
    stop(&px, "kwp proxy");
    stop(&sim, "kwp sim");
}
