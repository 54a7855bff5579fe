/*
 * test_passthrough.c - proxy/passthrough.h end to end on loopback, black-box:
 *
 *   libcurl client --> kwp http_server (port 0) --passthrough_forward--> fake upstream
 *
 * The fake upstream is libmicrohttpd in thread-per-connection mode on 127.0.0.1:0, so its
 * content readers may sleep (slow streams, idle watches). It echoes what it received (method,
 * raw URI from MHD's URI log callback, selected headers, body) and serves fixed statuses,
 * large bodies, timed lines and gzip. Every wait here is bounded; no fixed ports.
 */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <microhttpd.h>
#include <zlib.h>

#include "proxy/http_server.h"
#include "proxy/passthrough.h"
#include "proxy/upstream.h"

#define MIB (1024u * 1024u)

/* One value for every test: Criterion 2.4.1 (BoxFort) leaks a timeout record in the runner
 * when tests with different timeouts run in parallel, which fails the ASan run. */
#define TEST_TIMEOUT_S 60

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* The byte at offset <p> of a /big body. */
static unsigned char big_byte(uint64_t p)
{
    return (unsigned char)(p * 131u + (p >> 13));
}

/* ---- the fake upstream ------------------------------------------------------------------ */

struct fake {
    struct MHD_Daemon *d;
    unsigned port;
    atomic_bool stop;
    atomic_int idle_closed; /* /idle streams that saw the proxy close the connection */
    atomic_int requests;
    unsigned char *gz; /* gzip of gz_plain */
    size_t gz_len;
};

static const char gz_plain[] =
    "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":[{\"name\":\"pods\"},"
    "{\"name\":\"configmaps\"},{\"name\":\"secrets\"},{\"name\":\"services\"}]}\n";

struct fake_req {
    struct fake *f;
    struct MHD_Connection *conn;
    char *uri; /* raw, as received */
    char *body;
    size_t body_len;
    bool started;
    long n; /* route parameters */
    long interval_ms;
    long i; /* lines sent */
};

static void *fake_uri_log(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct fake_req *fr = calloc(1, sizeof(*fr));

    fr->f = cls;
    fr->conn = conn;
    fr->uri = strdup(uri);
    return fr;
}

static void fake_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                           enum MHD_RequestTerminationCode toe)
{
    struct fake_req *fr = *req_cls;

    if (fr) {
        free(fr->uri);
        free(fr->body);
        free(fr);
        *req_cls = NULL;
    }
}

/* Sleeps <ms> in small steps; false when the fake is stopping. */
static bool fake_nap(struct fake *f, long ms)
{
    int64_t end = now_ms() + ms;

    while (now_ms() < end) {
        if (atomic_load(&f->stop)) {
            return false;
        }
        sleep_ms(5);
    }
    return !atomic_load(&f->stop);
}

static ssize_t big_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fake_req *fr = cls;

    if (atomic_load(&fr->f->stop)) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    for (size_t i = 0; i < max; i++) {
        buf[i] = (char)big_byte(pos + i);
    }
    return (ssize_t)max;
}

static ssize_t lines_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fake_req *fr = cls;

    if (fr->i >= fr->n) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (fr->i > 0 && !fake_nap(fr->f, fr->interval_ms)) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    fr->i++;
    return snprintf(buf, max, "{\"type\":\"ADDED\",\"object\":{\"n\":%ld}}\n", fr->i);
}

/* One line, then nothing; ends when the proxy closes the connection (peeked every 10 ms). */
static ssize_t idle_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fake_req *fr = cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(fr->conn, MHD_CONNECTION_INFO_CONNECTION_FD);

    if (fr->i == 0) {
        fr->i = 1;
        return snprintf(buf, max, "{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n");
    }
    for (;;) {
        char ch;

        if (atomic_load(&fr->f->stop)) {
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (ci && recv(ci->connect_fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
            atomic_fetch_add(&fr->f->idle_closed, 1);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        sleep_ms(10);
    }
}

/* A JSON watch body delivered in pieces that split lines and a UTF-8 character. */
static const char *const split_pieces[] = {
    "{\"type\":\"ADDED\",\"object\":{\"name\":\"caf\xC3",
    "\xA9\"}}\n{\"type\":\"MODIFIED\",",
    "\"object\":{\"name\":\"x\"}}\n{\"type\":\"DELETED\",\"object\":{}}\n",
};

static ssize_t split_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct fake_req *fr = cls;
    size_t len;

    if (fr->i >= 3) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (fr->i > 0 && !fake_nap(fr->f, 150)) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    len = strlen(split_pieces[fr->i]);
    memcpy(buf, split_pieces[fr->i], len);
    fr->i++;
    return (ssize_t)len;
}

static void add_echo_header(char *out, size_t cap, struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    size_t n = strlen(out);

    snprintf(out + n, cap - n, "h.%s=%s\n", name, v ? v : "(none)");
}

static enum MHD_Result fake_queue(struct MHD_Connection *c, unsigned code, struct MHD_Response *r)
{
    enum MHD_Result ret = MHD_queue_response(c, code, r);

    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result fake_access(void *cls, struct MHD_Connection *c, const char *url,
                                   const char *method, const char *version, const char *upload,
                                   size_t *upload_size, void **req_cls)
{
    static const char *const echoed[] = {
        "Accept",          "Accept-Encoding", "User-Agent",   "Audit-ID",
        "Kubectl-Command", "Kubectl-Session", "Content-Type", "If-None-Match",
        "Authorization",   "Expect",          "X-Custom",     "Transfer-Encoding",
    };
    struct fake *f = cls;
    struct fake_req *fr = *req_cls;
    struct MHD_Response *r;

    if (!fr->started) {
        fr->started = true;
        atomic_fetch_add(&f->requests, 1);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        fr->body = realloc(fr->body, fr->body_len + *upload_size + 1);
        memcpy(fr->body + fr->body_len, upload, *upload_size);
        fr->body_len += *upload_size;
        fr->body[fr->body_len] = '\0';
        *upload_size = 0;
        return MHD_YES;
    }
    if (strncmp(url, "/echo", 5) == 0) {
        size_t cap = 16384 + fr->body_len;
        char *out = calloc(1, cap);
        size_t n;

        snprintf(out, cap, "method=%s\nuri=%s\n", method, fr->uri);
        for (size_t i = 0; i < sizeof(echoed) / sizeof(echoed[0]); i++) {
            add_echo_header(out, cap, c, echoed[i]);
        }
        n = strlen(out);
        snprintf(out + n, cap - n, "body=%s", fr->body ? fr->body : "");
        r = MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
        MHD_add_response_header(r, "Audit-Id", "upstream-audit-id");
        MHD_add_response_header(r, "X-Kubernetes-Pf-Flowschema-Uid", "fs-uid");
        MHD_add_response_header(r, "X-Kubernetes-Pf-Prioritylevel-Uid", "pl-uid");
        MHD_add_response_header(r, "Cache-Control", "no-cache, private");
        MHD_add_response_header(r, "ETag", "\"etag-1\"");
        MHD_add_response_header(r, "X-Not-Copied", "nope");
        return fake_queue(c, 200, r);
    }
    if (strncmp(url, "/status/", 8) == 0) {
        long code = strtol(url + 8, NULL, 10);
        char body[512];

        if (code == 204) {
            r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        } else {
            snprintf(body, sizeof(body),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"upstream says %ld \\u003cé\\u003e\",\"reason\":"
                     "\"Custom\",\"details\":{\"name\":\"x\"},\"code\":%ld}\n",
                     code, code);
            r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
            MHD_add_response_header(r, "Content-Type", "application/json");
        }
        MHD_add_response_header(r, "Warning", "299 - \"first warning\"");
        MHD_add_response_header(r, "Warning", "299 - \"second warning\"");
        MHD_add_response_header(r, "Retry-After", "7");
        return fake_queue(c, (unsigned)code, r);
    }
    if (strncmp(url, "/big/", 5) == 0) {
        uint64_t n = strtoull(url + 5, NULL, 10);

        r = MHD_create_response_from_callback(n, 32 * 1024, big_reader, fr, NULL);
        MHD_add_response_header(r, "Content-Type", "application/octet-stream");
        return fake_queue(c, 200, r);
    }
    if (strncmp(url, "/lines/", 7) == 0) {
        char *end = NULL;

        fr->n = strtol(url + 7, &end, 10);
        fr->interval_ms = strtol(end + 1, NULL, 10);
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, lines_reader, fr, NULL);
        MHD_add_response_header(r, "Content-Type", "application/json");
        return fake_queue(c, 200, r);
    }
    if (strcmp(url, "/idle") == 0) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, idle_reader, fr, NULL);
        MHD_add_response_header(r, "Content-Type", "application/json");
        return fake_queue(c, 200, r);
    }
    if (strcmp(url, "/split") == 0) {
        r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, split_reader, fr, NULL);
        MHD_add_response_header(r, "Content-Type", "application/json");
        return fake_queue(c, 200, r);
    }
    if (strcmp(url, "/gzip") == 0) {
        const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");

        if (ae && strstr(ae, "gzip")) {
            r = MHD_create_response_from_buffer(f->gz_len, f->gz, MHD_RESPMEM_PERSISTENT);
            MHD_add_response_header(r, "Content-Encoding", "gzip");
        } else {
            r = MHD_create_response_from_buffer(strlen(gz_plain), (void *)gz_plain,
                                                MHD_RESPMEM_PERSISTENT);
        }
        MHD_add_response_header(r, "Content-Type", "application/json");
        MHD_add_response_header(r, "Vary", "Accept-Encoding");
        return fake_queue(c, 200, r);
    }
    if (strncmp(url, "/slowhead/", 10) == 0) {
        if (!fake_nap(f, strtol(url + 10, NULL, 10))) {
            return MHD_NO;
        }
        r = MHD_create_response_from_buffer(3, (void *)"ok\n", MHD_RESPMEM_PERSISTENT);
        return fake_queue(c, 200, r);
    }
    r = MHD_create_response_from_buffer(10, (void *)"not found\n", MHD_RESPMEM_PERSISTENT);
    return fake_queue(c, 404, r);
}

static void make_gzip(struct fake *f)
{
    z_stream zs;

    memset(&zs, 0, sizeof(zs));
    cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    f->gz = malloc(1024);
    zs.next_in = (unsigned char *)gz_plain;
    zs.avail_in = (uInt)strlen(gz_plain);
    zs.next_out = f->gz;
    zs.avail_out = 1024;
    cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    f->gz_len = zs.total_out;
    deflateEnd(&zs);
}

static void fake_start(struct fake *f)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    const union MHD_DaemonInfo *info;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    make_gzip(f);
    f->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL,
        NULL, fake_access, f, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_URI_LOG_CALLBACK, fake_uri_log,
        f, MHD_OPTION_NOTIFY_COMPLETED, fake_completed, f, MHD_OPTION_END);
    cr_assert_not_null(f->d, "fake upstream did not start");
    info = MHD_get_daemon_info(f->d, MHD_DAEMON_INFO_BIND_PORT);
    cr_assert_not_null(info);
    f->port = info->port;
}

static void fake_stop(struct fake *f)
{
    atomic_store(&f->stop, true);
    MHD_stop_daemon(f->d);
    free(f->gz);
}

/* ---- the proxy under test --------------------------------------------------------------- */

struct env {
    struct fake fake;
    struct upstream *up;
    struct passthrough *pt;
    struct http_server *srv;
    char base[128];
    bool stopped;
};

static void app_handle(void *app, struct http_req *req)
{
    struct env *env = app;

    passthrough_forward(env->pt, req);
}

/* A port nothing listens on: bind, read the port, close. */
static unsigned dead_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_neq(fd, -1);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    /* Kept bound but not listening until the test process exits: connections are refused,
     * and no server started meanwhile by a parallel test can take the port (closing it here
     * let one do so, and the "down" upstream then accepted and hung). */
    return ntohs(sa.sin_port);
}

static void env_start(struct env *env, const struct passthrough_opts *o, bool upstream_down)
{
    char url[128];
    char err[256];
    struct upstream_opts uo = {.url = url, .token = "proxy-token"};
    struct http_server_opts so = {.listen = "127.0.0.1:0"};

    memset(env, 0, sizeof(*env));
    fake_start(&env->fake);
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", upstream_down ? dead_port() : env->fake.port);
    env->up = upstream_new(&uo, err, sizeof(err));
    cr_assert_not_null(env->up, "%s", err);
    env->pt = passthrough_new(env->up, o, err, sizeof(err));
    cr_assert_not_null(env->pt, "%s", err);
    env->srv = http_server_start(&so, app_handle, env, err, sizeof(err));
    cr_assert_not_null(env->srv, "%s", err);
    snprintf(env->base, sizeof(env->base), "%s", http_server_url(env->srv));
}

/* The documented shutdown order: stop accepting, end the passthrough, stop the server. */
static void env_stop(struct env *env)
{
    if (!env->stopped) {
        http_server_quiesce(env->srv);
        passthrough_free(env->pt);
        http_server_stop(env->srv);
        env->stopped = true;
    }
    upstream_free(env->up);
    fake_stop(&env->fake);
}

static struct passthrough_stats stats_of(struct env *env)
{
    struct passthrough_stats s;

    passthrough_stats(env->pt, &s);
    return s;
}

/* Waits until no transfer is left (both sides released). */
static bool wait_idle(struct env *env, long timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;

    while (now_ms() < end) {
        if (stats_of(env).active == 0) {
            return true;
        }
        sleep_ms(10);
    }
    return false;
}

/* ---- the client ------------------------------------------------------------------------- */

struct resp {
    long code;
    char *body;
    size_t len;
    size_t cap;
    char hdrs[16384];
    size_t hlen;
    CURLcode rc;
    size_t abort_after; /* >0: the write callback fails once this many bytes arrived */
    int64_t t0;
    int64_t first_line_ms; /* arrival of the first '\n', relative to t0 (-1: none) */
    int64_t end_ms;
    bool verify_big; /* check /big bytes on the fly instead of storing them */
    bool big_ok;
    atomic_bool *first_line_flag;
};

static size_t client_write(char *data, size_t size, size_t nmemb, void *ud)
{
    struct resp *r = ud;
    size_t n = size * nmemb;

    if (r->first_line_ms < 0 && memchr(data, '\n', n)) {
        r->first_line_ms = now_ms() - r->t0;
        if (r->first_line_flag) {
            atomic_store(r->first_line_flag, true);
        }
    }
    if (r->verify_big) {
        for (size_t i = 0; i < n; i++) {
            if ((unsigned char)data[i] != big_byte(r->len + i)) {
                r->big_ok = false;
            }
        }
        r->len += n;
    } else {
        if (r->len + n + 1 > r->cap) {
            r->cap = (r->len + n + 1) * 2;
            r->body = realloc(r->body, r->cap);
        }
        memcpy(r->body + r->len, data, n);
        r->len += n;
        r->body[r->len] = '\0';
    }
    if (r->abort_after > 0 && r->len >= r->abort_after) {
        return 0;
    }
    return n;
}

static size_t client_header(char *data, size_t size, size_t nitems, void *ud)
{
    struct resp *r = ud;
    size_t n = size * nitems;

    if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        r->hlen = 0; /* keep the final response's block only */
    }
    if (r->hlen + n < sizeof(r->hdrs)) {
        memcpy(r->hdrs + r->hlen, data, n);
        r->hlen += n;
        r->hdrs[r->hlen] = '\0';
    }
    return n;
}

static void resp_init(struct resp *r)
{
    memset(r, 0, sizeof(*r));
    r->first_line_ms = -1;
    r->big_ok = true;
}

/* One request through the proxy; <r> must be resp_init'ed (options set after that). */
static void client_do(const char *url, const char *method, const char *body, size_t body_len,
                      const char *const *headers, long max_recv_bps, struct resp *r)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = NULL;

    cr_assert_not_null(e);
    for (size_t i = 0; headers && headers[i]; i++) {
        h = curl_slist_append(h, headers[i]);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 25000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, client_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, client_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    if (max_recv_bps > 0) {
        curl_easy_setopt(e, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)max_recv_bps);
    }
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }
    if (body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    }
    r->t0 = now_ms();
    r->rc = curl_easy_perform(e);
    r->end_ms = now_ms() - r->t0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->code);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    if (!r->body) {
        r->body = calloc(1, 1);
    }
}

static void client_get(struct env *env, const char *path, const char *const *headers,
                       struct resp *r)
{
    char url[4096];

    snprintf(url, sizeof(url), "%s%s", env->base, path);
    client_do(url, "GET", NULL, 0, headers, 0, r);
}

/* Occurrences of header <name> in the block, and the value of the first one. */
static int header_count(const struct resp *r, const char *name, char *val, size_t cap)
{
    int count = 0;
    size_t nlen = strlen(name);
    const char *p = r->hdrs;

    if (val && cap) {
        val[0] = '\0';
    }
    while (*p) {
        const char *eol = strstr(p, "\r\n");
        size_t llen = eol ? (size_t)(eol - p) : strlen(p);

        if (llen > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
            if (count == 0 && val) {
                const char *v = p + nlen + 1;
                size_t vlen;

                while (*v == ' ') {
                    v++;
                }
                vlen = llen - (size_t)(v - p);
                if (vlen >= cap) {
                    vlen = cap - 1;
                }
                memcpy(val, v, vlen);
                val[vlen] = '\0';
            }
            count++;
        }
        if (!eol) {
            break;
        }
        p = eol + 2;
    }
    return count;
}

static void resp_free(struct resp *r)
{
    free(r->body);
    r->body = NULL;
}

/* ---- tests ------------------------------------------------------------------------------ */

Test(passthrough, get_with_query_round_trips_path_query_and_headers, .timeout = TEST_TIMEOUT_S)
{
    static const char *const hdrs[] = {
        "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        "Accept-Encoding: gzip",
        "User-Agent: kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07",
        "Audit-ID: 11111111-2222-3333-4444-555555555555",
        "Kubectl-Command: kubectl get",
        "Kubectl-Session: 0f0f0f0f-aaaa-bbbb-cccc-000000000000",
        "If-None-Match: \"etag-0\"",
        "Authorization: Bearer client-token",
        "X-Custom: not-forwarded",
        NULL,
    };
    const char *path = "/echo/api/v1/namespaces/default/pods?labelSelector=app%3Dweb%2Ctier+in+"
                       "%28a%2Cb%29&watch&limit=500&fieldSelector=&x%2By=%C3%A9";
    struct env env;
    struct resp r;
    char v[256];
    char want[1024];

    env_start(&env, NULL, false);
    resp_init(&r);
    client_get(&env, path, hdrs, &r);
    cr_assert_eq(r.rc, CURLE_OK);
    cr_assert_eq(r.code, 200, "code %ld body %s", r.code, r.body);
    cr_expect(strstr(r.body, "method=GET\n") != NULL, "%s", r.body);
    snprintf(want, sizeof(want), "uri=%s\n", path);
    cr_expect(strstr(r.body, want) != NULL, "want %s in\n%s", want, r.body);
    cr_expect(strstr(r.body, "h.Accept=application/json;as=Table;v=v1;g=meta.k8s.io,"
                             "application/json\n") != NULL,
              "%s", r.body);
    cr_expect(strstr(r.body, "h.Accept-Encoding=gzip\n") != NULL, "%s", r.body);
    cr_expect(strstr(r.body, "h.User-Agent=kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07\n"));
    cr_expect(strstr(r.body, "h.Audit-ID=11111111-2222-3333-4444-555555555555\n"));
    cr_expect(strstr(r.body, "h.Kubectl-Command=kubectl get\n"));
    cr_expect(strstr(r.body, "h.Kubectl-Session=0f0f0f0f-aaaa-bbbb-cccc-000000000000\n"));
    cr_expect(strstr(r.body, "h.If-None-Match=\"etag-0\"\n"));
    cr_expect(strstr(r.body, "h.Authorization=Bearer proxy-token\n"), "%s", r.body);
    cr_expect(strstr(r.body, "h.X-Custom=(none)\n"), "%s", r.body);
    cr_expect(strstr(r.body, "h.Expect=(none)\n"), "%s", r.body);
    cr_expect(strstr(r.body, "h.Content-Type=(none)\n"), "%s", r.body);

    /* copied response headers, each exactly once; others dropped */
    cr_expect_eq(header_count(&r, "Audit-Id", v, sizeof(v)), 1, "%s", r.hdrs);
    cr_expect_str_eq(v, "upstream-audit-id");
    cr_expect_eq(header_count(&r, "X-Kubernetes-Pf-Flowschema-Uid", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "fs-uid");
    cr_expect_eq(header_count(&r, "X-Kubernetes-Pf-Prioritylevel-Uid", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "pl-uid");
    cr_expect_eq(header_count(&r, "Cache-Control", v, sizeof(v)), 1, "%s", r.hdrs);
    cr_expect_str_eq(v, "no-cache, private");
    cr_expect_eq(header_count(&r, "ETag", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "\"etag-1\"");
    cr_expect_eq(header_count(&r, "Content-Type", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "text/plain; charset=utf-8");
    cr_expect_eq(header_count(&r, "X-Not-Copied", NULL, 0), 0);
    cr_expect_eq(stats_of(&env).requests, 1);
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, writes_forward_method_body_and_content_type, .timeout = TEST_TIMEOUT_S)
{
    static const char *const methods[] = {"POST", "PUT", "PATCH", "DELETE"};
    static const char *const types[] = {
        "application/json",
        "application/vnd.kubernetes.protobuf",
        "application/merge-patch+json",
        "application/json",
    };
    struct env env;
    char body[3001];

    /* above 1 KiB: curl would send Expect: 100-continue unless told not to */
    for (size_t i = 0; i < sizeof(body) - 1; i++) {
        body[i] = (char)('a' + i % 26);
    }
    body[sizeof(body) - 1] = '\0';
    env_start(&env, NULL, false);
    for (size_t m = 0; m < 4; m++) {
        struct resp r;
        char ct[128];
        char url[256];
        char want[256];
        const char *hdrs[] = {ct, "Expect:", NULL};

        snprintf(ct, sizeof(ct), "Content-Type: %s", types[m]);
        snprintf(url, sizeof(url),
                 "%s/echo/api/v1/namespaces/default/configmaps?fieldManager="
                 "kubectl-client-side-apply",
                 env.base);
        resp_init(&r);
        client_do(url, methods[m], body, strlen(body), hdrs, 0, &r);
        cr_assert_eq(r.rc, CURLE_OK);
        cr_assert_eq(r.code, 200);
        snprintf(want, sizeof(want), "method=%s\n", methods[m]);
        cr_expect(strstr(r.body, want) != NULL, "%s", r.body);
        snprintf(want, sizeof(want), "h.Content-Type=%s\n", types[m]);
        cr_expect(strstr(r.body, want) != NULL, "%s", r.body);
        cr_expect(strstr(r.body, "h.Expect=(none)\n") != NULL, "%s", r.body);
        cr_expect(strstr(r.body, "uri=/echo/api/v1/namespaces/default/configmaps?"
                                 "fieldManager=kubectl-client-side-apply\n") != NULL);
        cr_assert(strstr(r.body, "body=") != NULL);
        cr_expect_str_eq(strstr(r.body, "body=") + 5, body);
        resp_free(&r);
    }
    {
        /* a body without Content-Type gets none upstream (not curl's form default) */
        struct resp r;
        char url[256];
        const char *hdrs[] = {"Content-Type:", NULL};

        snprintf(url, sizeof(url), "%s/echo/x", env.base);
        resp_init(&r);
        client_do(url, "POST", "{}", 2, hdrs, 0, &r);
        cr_assert_eq(r.code, 200);
        cr_expect(strstr(r.body, "h.Content-Type=(none)\n") != NULL, "%s", r.body);
        cr_expect(strstr(r.body, "method=POST\n") != NULL);
        cr_expect_str_eq(strstr(r.body, "body=") + 5, "{}");
        resp_free(&r);
    }
    {
        /* DELETE without a body */
        struct resp r;
        char url[256];

        snprintf(url, sizeof(url), "%s/echo/api/v1/namespaces/default/pods/p1", env.base);
        resp_init(&r);
        client_do(url, "DELETE", NULL, 0, NULL, 0, &r);
        cr_assert_eq(r.code, 200);
        cr_expect(strstr(r.body, "method=DELETE\n") != NULL);
        cr_expect(strstr(r.body, "body=") != NULL && strstr(r.body, "body=")[5] == '\0');
        resp_free(&r);
    }
    env_stop(&env);
}

Test(passthrough, statuses_and_status_bodies_pass_verbatim, .timeout = TEST_TIMEOUT_S)
{
    static const long codes[] = {404, 409, 422, 429, 500, 403, 201};
    struct env env;

    env_start(&env, NULL, false);
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        struct resp r;
        char path[64];
        char want[512];
        char v[256];

        snprintf(path, sizeof(path), "/status/%ld", codes[i]);
        snprintf(want, sizeof(want),
                 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                 "\"Failure\",\"message\":\"upstream says %ld \\u003cé\\u003e\",\"reason\":"
                 "\"Custom\",\"details\":{\"name\":\"x\"},\"code\":%ld}\n",
                 codes[i], codes[i]);
        resp_init(&r);
        client_get(&env, path, NULL, &r);
        cr_assert_eq(r.rc, CURLE_OK);
        cr_expect_eq(r.code, codes[i]);
        cr_expect_str_eq(r.body, want);
        cr_expect_eq(header_count(&r, "Content-Type", v, sizeof(v)), 1);
        cr_expect_str_eq(v, "application/json");
        cr_expect_eq(header_count(&r, "Warning", v, sizeof(v)), 2, "%s", r.hdrs);
        cr_expect_str_eq(v, "299 - \"first warning\"");
        cr_expect_eq(header_count(&r, "Retry-After", v, sizeof(v)), 1);
        cr_expect_str_eq(v, "7");
        cr_expect_eq(header_count(&r, "Audit-Id", NULL, 0), 1); /* the proxy's own */
        resp_free(&r);
    }
    {
        struct resp r;

        resp_init(&r);
        client_get(&env, "/status/204", NULL, &r);
        cr_assert_eq(r.rc, CURLE_OK);
        cr_expect_eq(r.code, 204);
        cr_expect_eq(r.len, 0);
        resp_free(&r);
    }
    {
        struct resp r;
        char url[256];
        char v[64];

        snprintf(url, sizeof(url), "%s/echo/version", env.base);
        resp_init(&r);
        client_do(url, "HEAD", NULL, 0, NULL, 0, &r);
        cr_assert_eq(r.rc, CURLE_OK);
        cr_expect_eq(r.code, 200);
        cr_expect_eq(header_count(&r, "ETag", v, sizeof(v)), 1);
        resp_free(&r);
    }
    {
        struct resp r;

        resp_init(&r);
        client_get(&env, "/no/such/path", NULL, &r);
        cr_expect_eq(r.code, 404);
        cr_expect_str_eq(r.body, "not found\n");
        resp_free(&r);
    }
    env_stop(&env);
}

Test(passthrough, large_body_streams_intact_through_small_buffer, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.buffer_bytes = 64 * 1024};
    struct env env;
    struct resp r;
    struct passthrough_stats s;
    char path[64];

    env_start(&env, &o, false);
    snprintf(path, sizeof(path), "/big/%u", 8 * MIB);
    resp_init(&r);
    r.verify_big = true;
    client_get(&env, path, NULL, &r);
    cr_assert_eq(r.rc, CURLE_OK, "%s", curl_easy_strerror(r.rc));
    cr_assert_eq(r.code, 200);
    cr_expect_eq(r.len, 8 * MIB);
    cr_expect(r.big_ok, "body bytes differ");

    /* a slow reader: the buffer fills, curl pauses, the reader unpauses it */
    {
        struct resp slow;
        char url[256];

        snprintf(url, sizeof(url), "%s/big/%u", env.base, 3 * MIB);
        resp_init(&slow);
        slow.verify_big = true;
        client_do(url, "GET", NULL, 0, NULL, 6 * MIB, &slow);
        cr_assert_eq(slow.rc, CURLE_OK, "%s", curl_easy_strerror(slow.rc));
        cr_expect_eq(slow.len, 3 * MIB);
        cr_expect(slow.big_ok, "slow body bytes differ");
        resp_free(&slow);
    }
    cr_expect(wait_idle(&env, 5000));
    s = stats_of(&env);
    cr_expect_eq(s.bytes_upstream, 11 * MIB);
    cr_expect_eq(s.bytes_client, 11 * MIB);
    cr_expect_eq(s.stream_errors, 0);
    cr_expect_gt(s.pauses, 0, "the slow reader never filled the buffer");
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, slow_stream_lines_arrive_before_the_end, .timeout = TEST_TIMEOUT_S)
{
    struct env env;
    struct resp r;
    char want[1024] = "";

    env_start(&env, NULL, false);
    resp_init(&r);
    client_get(&env, "/lines/5/300", NULL, &r);
    cr_assert_eq(r.rc, CURLE_OK);
    cr_assert_eq(r.code, 200);
    for (int i = 1; i <= 5; i++) {
        size_t n = strlen(want);

        snprintf(want + n, sizeof(want) - n, "{\"type\":\"ADDED\",\"object\":{\"n\":%d}}\n", i);
    }
    cr_expect_str_eq(r.body, want);
    cr_assert_geq(r.first_line_ms, 0);
    /* 4 x 300 ms between lines: the first must not wait for the end */
    cr_expect_lt(r.first_line_ms, 600, "first line after %lld ms", (long long)r.first_line_ms);
    cr_expect_geq(r.end_ms - r.first_line_ms, 900, "first %lld end %lld",
                  (long long)r.first_line_ms, (long long)r.end_ms);
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, upstream_down_answers_503_status, .timeout = TEST_TIMEOUT_S)
{
    struct env env;
    struct resp r;
    char v[256];
    struct passthrough_stats s;

    env_start(&env, NULL, true);
    resp_init(&r);
    client_get(&env, "/api/v1/namespaces/default/pods", NULL, &r);
    cr_assert_eq(r.rc, CURLE_OK);
    cr_expect_eq(r.code, 503);
    cr_expect_eq(header_count(&r, "Content-Type", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "application/json");
    cr_expect(strstr(r.body, "\"kind\":\"Status\"") != NULL, "%s", r.body);
    cr_expect(strstr(r.body, "\"reason\":\"ServiceUnavailable\"") != NULL, "%s", r.body);
    cr_expect(strstr(r.body, "\"message\":\"the upstream kube-apiserver is unavailable: ") != NULL,
              "%s", r.body);
    cr_expect(strstr(r.body, "\"code\":503") != NULL, "%s", r.body);
    cr_expect(wait_idle(&env, 5000));
    s = stats_of(&env);
    cr_expect_eq(s.upstream_errors, 1);
    cr_expect_eq(s.requests, 1);
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, client_gone_from_idle_stream_frees_both_sides, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.sweep_interval_ms = 100};
    struct env env;
    struct resp r;
    int64_t end;

    env_start(&env, &o, false);
    resp_init(&r);
    r.abort_after = 1; /* hang up once the first line is in */
    client_get(&env, "/idle", NULL, &r);
    cr_expect_eq(r.rc, CURLE_WRITE_ERROR);
    cr_expect_eq(r.code, 200);
    /* the stream is idle: only the sweep can notice the client left */
    cr_expect(wait_idle(&env, 5000), "transfer still held");
    end = now_ms() + 5000;
    while (atomic_load(&env.fake.idle_closed) == 0 && now_ms() < end) {
        sleep_ms(10);
    }
    cr_expect_eq(atomic_load(&env.fake.idle_closed), 1, "upstream connection not closed");
    cr_expect_eq(stats_of(&env).client_aborts, 1);
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, client_gone_from_busy_stream_frees_both_sides, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.buffer_bytes = 64 * 1024};
    struct env env;
    struct resp r;

    env_start(&env, &o, false);
    resp_init(&r);
    r.verify_big = true;
    r.abort_after = 2 * MIB;
    client_get(&env, "/big/4294967296", NULL, &r);
    cr_expect_eq(r.rc, CURLE_WRITE_ERROR);
    cr_expect(r.big_ok);
    cr_expect(wait_idle(&env, 5000), "transfer still held");
    cr_expect_eq(stats_of(&env).client_aborts, 1);
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, client_that_stops_reading_is_cut_by_the_stall_timeout, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.buffer_bytes = 64 * 1024, .stall_timeout_s = 1};
    struct env env;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    const char *req = "GET /big/4294967296 HTTP/1.1\r\nHost: x\r\n\r\n";
    int rcvbuf = 4096;
    int fd;

    env_start(&env, &o, false);
    sa.sin_port = htons((uint16_t)strtoul(strrchr(env.base, ':') + 1, NULL, 10));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_neq(fd, -1);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    /* never read: the socket and the transfer buffer fill, the upstream is paused */
    {
        int64_t end = now_ms() + 5000;

        while (stats_of(&env).pauses == 0 && now_ms() < end) {
            sleep_ms(10);
        }
    }
    cr_expect_gt(stats_of(&env).pauses, 0);
    cr_expect(wait_idle(&env, 10000), "a client that reads nothing kept its transfer");
    cr_expect_eq(stats_of(&env).client_aborts, 1);
    close(fd);
    env_stop(&env);
}

Test(passthrough, stall_timeout_spares_slow_upstreams_and_idle_streams, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.stall_timeout_s = 1};
    struct env env;
    struct resp r;

    env_start(&env, &o, false);
    /* suspended while waiting: neither the headers nor the gaps count as a stall */
    resp_init(&r);
    client_get(&env, "/slowhead/2500", NULL, &r);
    cr_expect_eq(r.rc, CURLE_OK);
    cr_expect_eq(r.code, 200);
    cr_expect_str_eq(r.body, "ok\n");
    resp_free(&r);
    resp_init(&r);
    client_get(&env, "/lines/3/1600", NULL, &r);
    cr_expect_eq(r.rc, CURLE_OK, "%s", curl_easy_strerror(r.rc));
    cr_expect_eq(r.len, 3 * strlen("{\"type\":\"ADDED\",\"object\":{\"n\":1}}\n"));
    resp_free(&r);
    env_stop(&env);
}

Test(passthrough, gzip_body_and_content_encoding_pass_untouched, .timeout = TEST_TIMEOUT_S)
{
    static const char *const hdrs[] = {"Accept-Encoding: gzip", NULL};
    struct env env;
    struct resp r;
    char v[256];
    unsigned char plain[1024];
    uLongf plain_len = sizeof(plain);
    z_stream zs;

    env_start(&env, NULL, false);
    resp_init(&r);
    client_get(&env, "/gzip", hdrs, &r); /* the client does not decode */
    cr_assert_eq(r.rc, CURLE_OK);
    cr_assert_eq(r.code, 200);
    cr_expect_eq(header_count(&r, "Content-Encoding", v, sizeof(v)), 1, "%s", r.hdrs);
    cr_expect_str_eq(v, "gzip");
    cr_expect_eq(header_count(&r, "Vary", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "Accept-Encoding");
    cr_assert_eq(r.len, env.fake.gz_len);
    cr_expect_eq(memcmp(r.body, env.fake.gz, r.len), 0);
    memset(&zs, 0, sizeof(zs));
    cr_assert_eq(inflateInit2(&zs, 31), Z_OK);
    zs.next_in = (unsigned char *)r.body;
    zs.avail_in = (uInt)r.len;
    zs.next_out = plain;
    zs.avail_out = (uInt)plain_len;
    cr_expect_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
    cr_expect_eq(zs.total_out, strlen(gz_plain));
    cr_expect_eq(memcmp(plain, gz_plain, strlen(gz_plain)), 0);
    inflateEnd(&zs);
    resp_free(&r);

    /* without Accept-Encoding the upstream answers plain, and so does the proxy */
    resp_init(&r);
    client_get(&env, "/gzip", NULL, &r);
    cr_expect_eq(header_count(&r, "Content-Encoding", NULL, 0), 0);
    cr_expect_str_eq(r.body, gz_plain);
    resp_free(&r);
    env_stop(&env);
}

/* Reads a chunked HTTP/1.1 response from a raw socket and checks where chunks end. */
Test(passthrough, json_stream_chunks_end_on_line_boundaries, .timeout = TEST_TIMEOUT_S)
{
    struct env env;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    const char *colon;
    char req[] = "GET /split HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char *buf = calloc(1, 65536);
    size_t len = 0;
    char *p;
    char joined[1024] = "";
    int fd;
    int chunks = 0;
    struct timeval tv = {.tv_sec = 10};

    env_start(&env, NULL, false);
    colon = strrchr(env.base, ':');
    sa.sin_port = htons((uint16_t)strtoul(colon + 1, NULL, 10));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_neq(fd, -1);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    for (;;) {
        ssize_t n = read(fd, buf + len, 65535 - len);

        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    cr_assert(strstr(buf, "HTTP/1.1 200") == buf, "%s", buf);
    cr_assert(strcasestr(buf, "Transfer-Encoding: chunked") != NULL, "%s", buf);
    p = strstr(buf, "\r\n\r\n");
    cr_assert_not_null(p);
    p += 4;
    for (;;) {
        char *end = NULL;
        unsigned long sz = strtoul(p, &end, 16);

        cr_assert(end != p && strncmp(end, "\r\n", 2) == 0, "bad chunk header at %s", p);
        p = end + 2;
        if (sz == 0) {
            break;
        }
        cr_assert_leq((size_t)(p - buf) + sz, len);
        cr_expect_eq(p[sz - 1], '\n', "chunk %d does not end a line: %.*s", chunks, (int)sz, p);
        strncat(joined, p, sz);
        p += sz + 2;
        chunks++;
    }
    cr_expect_geq(chunks, 2);
    {
        char want[1024];

        snprintf(want, sizeof(want), "%s%s%s", split_pieces[0], split_pieces[1], split_pieces[2]);
        cr_expect_str_eq(joined, want);
    }
    free(buf);
    env_stop(&env);
}

struct bg_client {
    pthread_t th;
    char url[256];
    struct resp r;
    atomic_bool got_line;
    atomic_bool done;
};

static void *bg_run(void *arg)
{
    struct bg_client *c = arg;

    client_do(c->url, "GET", NULL, 0, NULL, 0, &c->r);
    atomic_store(&c->done, true);
    return NULL;
}

static void bg_start(struct bg_client *c, struct env *env, const char *path)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->url, sizeof(c->url), "%s%s", env->base, path);
    resp_init(&c->r);
    c->r.first_line_flag = &c->got_line;
    cr_assert_eq(pthread_create(&c->th, NULL, bg_run, c), 0);
}

static bool wait_flag(atomic_bool *flag, long timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;

    while (!atomic_load(flag)) {
        if (now_ms() >= end) {
            return false;
        }
        sleep_ms(5);
    }
    return true;
}

Test(passthrough, free_ends_open_streams_and_pending_requests, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.shutdown_wait_ms = 3000};
    struct env env;
    struct bg_client watch;
    struct bg_client pending;
    int64_t t0;

    env_start(&env, &o, false);
    bg_start(&watch, &env, "/idle");
    bg_start(&pending, &env, "/slowhead/20000");
    cr_assert(wait_flag(&watch.got_line, 5000), "watch did not start");
    /* both are suspended in the passthrough now (or about to be) */
    t0 = now_ms();
    while (stats_of(&env).requests < 2 && now_ms() - t0 < 5000) {
        sleep_ms(5);
    }
    cr_assert_eq(stats_of(&env).requests, 2);
    t0 = now_ms();
    http_server_quiesce(env.srv);
    passthrough_free(env.pt);
    cr_expect_lt(now_ms() - t0, 2500, "passthrough_free took %lld ms", (long long)(now_ms() - t0));
    cr_expect(wait_flag(&watch.done, 5000));
    cr_expect(wait_flag(&pending.done, 5000));
    http_server_stop(env.srv);
    env.stopped = true;
    pthread_join(watch.th, NULL);
    pthread_join(pending.th, NULL);
    cr_expect_neq(watch.r.rc, CURLE_OK, "the cut stream must not look complete");
    cr_expect_eq(pending.r.code, 503);
    cr_expect(strstr(pending.r.body, "shutting down") != NULL, "%s", pending.r.body);
    resp_free(&watch.r);
    resp_free(&pending.r);
    env_stop(&env);
}

Test(passthrough, max_transfers_answers_429, .timeout = TEST_TIMEOUT_S)
{
    struct passthrough_opts o = {.max_transfers = 1, .sweep_interval_ms = 100};
    struct env env;
    struct bg_client watch;
    struct resp r;
    char v[64];

    env_start(&env, &o, false);
    bg_start(&watch, &env, "/idle");
    cr_assert(wait_flag(&watch.got_line, 5000));
    resp_init(&r);
    client_get(&env, "/echo/x", NULL, &r);
    cr_expect_eq(r.code, 429);
    cr_expect(strstr(r.body, "\"reason\":\"TooManyRequests\"") != NULL, "%s", r.body);
    cr_expect_eq(header_count(&r, "Retry-After", v, sizeof(v)), 1);
    cr_expect_str_eq(v, "1");
    cr_expect_eq(stats_of(&env).rejected, 1);
    resp_free(&r);
    env_stop(&env); /* also ends the watch */
    pthread_join(watch.th, NULL);
    resp_free(&watch.r);
}
