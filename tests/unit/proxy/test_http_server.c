/*
 * test_http_server.c - proxy/http_server: what the server reads from a request and what every
 * reply carries. The pure parsing functions (query slots and decoding, header tokens) are
 * tested directly; the rest through a real server on 127.0.0.1 port 0 in this process, driven
 * with raw HTTP/1.x bytes so each test controls exactly what is sent: the decoded query and
 * header lookups a handler sees, the body and its cap (413), the query pair limit (400), the
 * connection pool guard (431), Status bodies with Retry-After, Audit-Id, Cache-Control and
 * nosniff, the 500 for a handler that did not answer, chunked streams on HTTP/1.1 only, and
 * the listen address and TLS option checks of http_server_start.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "proxy/http_server.h"

#define RESP_CAP (256 * 1024)

/* ---- pure parsing ------------------------------------------------------------------ */

Test(http_server, has_token_finds_a_comma_separated_element)
{
    cr_assert(http_server_has_token("close", "close"));
    cr_assert(http_server_has_token("Close", "close"));
    cr_assert(http_server_has_token("keep-alive, close", "close"));
    cr_assert(http_server_has_token(" \tclose\t ,x", "close"));
    cr_assert(http_server_has_token("x,,CLOSE", "close"));
    cr_assert(http_server_has_token("Upgrade, keep-alive", "upgrade"));
    cr_assert_not(http_server_has_token(NULL, "close"));
    cr_assert_not(http_server_has_token("", "close"));
    cr_assert_not(http_server_has_token("closed", "close"));
    cr_assert_not(http_server_has_token("clo", "close"));
    cr_assert_not(http_server_has_token("not-close", "close"));
    cr_assert_not(http_server_has_token("close-ish, keep-alive", "close"));
    cr_assert_not(http_server_has_token("cl ose", "close"));
}

/* The trim rule: enough gone, and at most 1/ratio of the peak left. */
Test(http_server, trim_is_due_once_most_of_a_peak_is_gone)
{
    cr_assert(http_trim_due(5000, 0, 256, 2));
    cr_assert(http_trim_due(5000, 2500, 256, 2));
    cr_assert_not(http_trim_due(5000, 2501, 256, 2), "more than half left");
    cr_assert_not(http_trim_due(300, 100, 256, 2), "fewer than 256 gone");
    cr_assert(http_trim_due(356, 100, 256, 2));
    cr_assert_not(http_trim_due(0, 0, 256, 2));
    cr_assert_not(http_trim_due(100, 200, 0, 2), "grown, not shrunk");
    cr_assert(http_trim_due(64, 8, 0, 8));
    cr_assert_not(http_trim_due(64, 9, 0, 8));
    cr_assert(http_trim_due(4000000000u, 0, 256, 8), "no overflow");
}

Test(http_server, query_slots_are_one_per_ampersand_plus_one_capped)
{
    char raw[4096];

    cr_assert_eq(http_server_query_slots(""), 1);
    cr_assert_eq(http_server_query_slots("a=1"), 1);
    cr_assert_eq(http_server_query_slots("a=1&b"), 2);
    cr_assert_eq(http_server_query_slots("&&"), 3);
    memset(raw, '&', 63);
    raw[63] = '\0';
    cr_assert_eq(http_server_query_slots(raw), 64);
    memset(raw, '&', 1000);
    raw[1000] = '\0';
    cr_assert_eq(http_server_query_slots(raw), HTTP_MAX_QUERY);
}

Test(http_server, query_decode_keeps_pairs_in_order_as_go_does)
{
    char raw[] = "b=2&a=1&a=3&flag&sp=a+b%20c&bad=%zz&semi=x;y&&empty=&%41=%42";
    struct k8s_query_kv kv[16];
    bool overflow = true;
    size_t n = http_server_query_decode(raw, kv, 16, &overflow);

    cr_assert_not(overflow);
    cr_assert_eq(n, 7);
    cr_assert_str_eq(kv[0].key, "b");
    cr_assert_str_eq(kv[0].value, "2");
    cr_assert_str_eq(kv[1].key, "a");
    cr_assert_str_eq(kv[1].value, "1");
    cr_assert_str_eq(kv[2].key, "a");
    cr_assert_str_eq(kv[2].value, "3");
    cr_assert_str_eq(kv[3].key, "flag");
    cr_assert_null(kv[3].value);
    cr_assert_str_eq(kv[4].key, "sp");
    cr_assert_str_eq(kv[4].value, "a b c");
    cr_assert_str_eq(kv[5].key, "empty");
    cr_assert_str_eq(kv[5].value, "");
    cr_assert_str_eq(kv[6].key, "A");
    cr_assert_str_eq(kv[6].value, "B");
    /* decoded in place: the pairs point into the buffer */
    cr_assert(kv[0].key >= raw && kv[0].key < raw + sizeof(raw));
}

Test(http_server, query_decode_reports_more_pairs_than_room)
{
    char raw[] = "a=1&b=2&c=3";
    struct k8s_query_kv kv[2];
    bool overflow = false;

    cr_assert_eq(http_server_query_decode(raw, kv, 2, &overflow), 2);
    cr_assert(overflow);
    cr_assert_str_eq(kv[1].key, "b");
    {
        char fits[] = "a=1&&&;x&b=2"; /* five '&' but two pairs kept: they fit in two */
        cr_assert_eq(http_server_query_decode(fits, kv, 2, &overflow), 2);
        cr_assert_not(overflow);
    }
}

/* ---- a live server ------------------------------------------------------------------ */

static ssize_t stream_once(void *ctx, char *buf, size_t max)
{
    int *calls = ctx;

    if ((*calls)++ > 0) {
        return HTTP_STREAM_END;
    }
    cr_assert_geq(max, 6);
    memcpy(buf, "chunk\n", 6);
    return 6;
}

static void free_calls(void *state)
{
    free(state);
}

/* Appends printf output to <b> (capacity <cap>, length *<len>). */
__attribute__((format(printf, 4, 5))) static void put(char *b, size_t cap, size_t *len,
                                                      const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(b + *len, cap - *len, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < cap - *len);
    *len += (size_t)n;
}

/*
 * The handler: /echo answers what the request looked like to the app (one line per query
 * pair, a few lookups, headers, the body); /status a 503 Status with Retry-After; /silent
 * nothing at all; /headers sets its own Cache-Control and Audit-Id; /stream a streamed body,
 * /stream-headers one with two headers of the app's.
 */
static void handle(void *app, struct http_req *req)
{
    const char *path = http_req_path(req);
    (void)app;

    if (strcmp(path, "/echo") == 0) {
        char *out = malloc(RESP_CAP);
        size_t len = 0, n = 0, blen = 0;
        const struct k8s_query_kv *q = http_req_query(req, &n);
        const char *body = http_req_body(req, &blen);
        const char *a = http_req_arg(req, "a");
        const char *flag = http_req_arg(req, "flag");
        const char *none = http_req_arg(req, "none");
        const char *h = http_req_header(req, "X-Test");

        cr_assert_not_null(out);

        put(out, RESP_CAP, &len, "%s %s\n", http_req_method(req), path);
        for (size_t i = 0; i < n; i++) {
            put(out, RESP_CAP, &len, "q %s=%s\n", q[i].key, q[i].value ? q[i].value : "(null)");
        }
        put(out, RESP_CAP, &len, "arg a=%s flag=%s none=%s\n", a ? a : "(absent)",
            flag ? flag : "(absent)", none ? none : "(absent)");
        put(out, RESP_CAP, &len, "header x-test=%s\n", h ? h : "(absent)");
        put(out, RESP_CAP, &len, "body %zu %.*s\n", blen, (int)(blen < 64 ? blen : 64), body);
        http_reply(req, 200, "text/plain", out, len);
        free(out);
    } else if (strcmp(path, "/status") == 0) {
        struct kstatus st;
        kstatus_set(&st, 503, "ServiceUnavailable", "try %s", "later");
        st.retry_after = 7;
        http_reply_status(req, &st);
    } else if (strcmp(path, "/silent") == 0) {
        /* neither replies nor suspends */
    } else if (strcmp(path, "/headers") == 0) {
        http_req_add_header(req, "Cache-Control", "max-age=5");
        http_req_add_header(req, "Audit-Id", "from-the-app");
        http_req_add_header(req, "X-Extra", "1");
        http_reply(req, 404, NULL, "", 0);
    } else if (strcmp(path, "/stream") == 0 || strcmp(path, "/stream-headers") == 0) {
        int *calls = calloc(1, sizeof(*calls));
        if (path[7] == '-') {
            http_req_add_header(req, "Audit-Id", "from-the-app");
            http_req_add_header(req, "X-Extra", "1");
        }
        http_req_set_state(req, calls, free_calls);
        http_reply_stream(req, 200, "application/json", stream_once, calls);
    } else {
        http_reply(req, 200, "text/plain", "other\n", 6);
    }
}

static struct http_server *server(size_t max_body, size_t conn_memory)
{
    struct http_server_opts o = {.listen = "127.0.0.1:0",
                                 .max_connections = 64,
                                 .max_body = max_body,
                                 .conn_memory = conn_memory};
    char err[256] = "";
    struct http_server *srv = http_server_start(&o, handle, NULL, err, sizeof(err));

    cr_assert_not_null(srv, "http_server_start: %s", err);
    return srv;
}

/* Sends <req> (<len> bytes) to <srv> and reads the whole answer (the server closes: the
 * requests send Connection: close or are HTTP/1.0). Returns a heap string. */
static char *exchange(struct http_server *srv, const char *req, size_t len)
{
    const char *url = http_server_url(srv);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    char *resp = malloc(RESP_CAP);
    size_t got = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    cr_assert(resp != NULL && fd >= 0);
    sa.sin_port = htons((uint16_t)strtoul(strrchr(url, ':') + 1, NULL, 10));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
    for (size_t off = 0; off < len;) {
        ssize_t k = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (k <= 0) {
            break; /* the server may answer (413) and close before reading it all */
        }
        off += (size_t)k;
    }
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t k;

        cr_assert_gt(poll(&p, 1, 10000), 0, "no answer within 10 s: %.*s", (int)got, resp);
        k = recv(fd, resp + got, RESP_CAP - 1 - got, 0);
        if (k <= 0) {
            break;
        }
        got += (size_t)k;
        cr_assert_lt(got, RESP_CAP - 1);
    }
    resp[got] = '\0';
    close(fd);
    return resp;
}

static char *get_close(struct http_server *srv, const char *target, const char *headers)
{
    char req[16384];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n", target,
                     headers ? headers : "");

    cr_assert(n > 0 && (size_t)n < sizeof(req));
    return exchange(srv, req, (size_t)n);
}

/* The body after the blank line of a response without chunking. */
static const char *body_of(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");

    cr_assert_not_null(b, "no header end: %s", resp);
    return b + 4;
}

/* True when the head of <resp> has the header line "<name>: <value>" (name any case). */
static bool has_header(const char *resp, const char *name, const char *value)
{
    const char *end = strstr(resp, "\r\n\r\n");
    char line[512];
    int n = snprintf(line, sizeof(line), "\r\n%s: %s\r\n", name, value);

    cr_assert(n > 0 && (size_t)n < sizeof(line));
    for (const char *p = resp; p != NULL && p < end; p = strstr(p + 1, "\r\n")) {
        if (strncasecmp(p, line, (size_t)n) == 0) {
            return true;
        }
    }
    return false;
}

/* The value of header <name> in <resp>'s head, copied to <out>; false when absent. */
static bool header_value(const char *resp, const char *name, char *out, size_t cap)
{
    const char *end = strstr(resp, "\r\n\r\n");
    size_t nlen = strlen(name);

    for (const char *p = strstr(resp, "\r\n"); p != NULL && p < end; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, nlen) == 0 && p[2 + nlen] == ':') {
            const char *v = p + 3 + nlen;
            while (*v == ' ') {
                v++;
            }
            snprintf(out, cap, "%.*s", (int)strcspn(v, "\r\n"), v);
            return true;
        }
    }
    return false;
}

Test(http_server, the_handler_sees_the_decoded_query_and_headers, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    char *r = get_close(
        srv, "/echo?b=2&a=1&a=3&flag&sp=a+b%20c&bad=%zz&semi=x;y&&empty=", "x-TeSt: hello\r\n");

    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    cr_assert_str_eq(body_of(r), "GET /echo\n"
                                 "q b=2\n"
                                 "q a=1\n"
                                 "q a=3\n"
                                 "q flag=(null)\n"
                                 "q sp=a b c\n"
                                 "q empty=\n"
                                 "arg a=1 flag= none=(absent)\n"
                                 "header x-test=hello\n"
                                 "body 0 \n");
    free(r);
    r = get_close(srv, "/echo", NULL);
    cr_assert(strstr(body_of(r), "GET /echo\narg a=(absent) flag=(absent) none=(absent)\n"
                                 "header x-test=(absent)\n") != NULL,
              "%s", r);
    free(r);
    http_server_stop(srv);
}

Test(http_server, sixty_four_query_pairs_pass_and_sixty_five_are_400, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    char target[2048] = "/echo?";
    size_t len = strlen(target);
    char *r;

    for (int i = 0; i < 64; i++) {
        len += (size_t)snprintf(target + len, sizeof(target) - len, "%sk%d=v", i ? "&" : "", i);
    }
    r = get_close(srv, target, NULL);
    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    cr_assert(strstr(r, "q k63=v\n") != NULL);
    free(r);
    /* empty pairs are not pairs: they do not count */
    snprintf(target + len, sizeof(target) - len, "&&&&");
    r = get_close(srv, target, NULL);
    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    free(r);
    snprintf(target + len, sizeof(target) - len, "&k64=v");
    r = get_close(srv, target, NULL);
    cr_assert(strncmp(r, "HTTP/1.1 400 ", 13) == 0, "%s", r);
    cr_assert_str_eq(body_of(r),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"too many query parameters (limit 64)\","
                     "\"reason\":\"BadRequest\",\"code\":400}\n");
    cr_assert(has_header(r, "Content-Type", "application/json"), "%s", r);
    free(r);
    http_server_stop(srv);
}

Test(http_server, a_body_up_to_the_cap_is_read_and_one_byte_more_is_413, .timeout = 30)
{
    struct http_server *srv = server(1000, 0);
    char req[4096];
    char body[1001];
    char *r;
    int n;

    memset(body, 'x', sizeof(body));
    memcpy(body, "hello", 5);
    n = snprintf(req, sizeof(req),
                 "POST /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 1000\r\n"
                 "\r\n%.1000s",
                 body);
    r = exchange(srv, req, (size_t)n);
    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    cr_assert(strstr(body_of(r), "POST /echo\n") != NULL);
    cr_assert(strstr(body_of(r), "body 1000 helloxxx") != NULL, "%s", r);
    free(r);
    /* chunked uploads count the same way */
    n = snprintf(req, sizeof(req),
                 "POST /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n");
    r = exchange(srv, req, (size_t)n);
    cr_assert(strstr(body_of(r), "body 8 helloabc\n") != NULL, "%s", r);
    free(r);
    n = snprintf(req, sizeof(req),
                 "POST /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Length: 1001\r\n"
                 "\r\n%.1001s",
                 body);
    r = exchange(srv, req, (size_t)n);
    cr_assert(strncmp(r, "HTTP/1.1 413 ", 13) == 0, "%s", r);
    cr_assert_str_eq(body_of(r),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"Request entity too large: limit is 1000\","
                     "\"reason\":\"RequestEntityTooLarge\",\"code\":413}\n");
    free(r);
    http_server_stop(srv);
}

Test(http_server, headers_that_leave_no_room_for_the_reply_are_431, .timeout = 30)
{
    struct http_server *srv = server(0, 8192);
    char hdr[8192];
    char *r;

    /* fits MHD's 8 KiB pool, but with too little left for kwp's reply */
    memset(hdr, 'a', sizeof(hdr));
    memcpy(hdr, "X-Big: ", 7);
    snprintf(hdr + 6800, sizeof(hdr) - 6800, "\r\n");
    r = get_close(srv, "/echo", hdr);
    cr_assert(strncmp(r, "HTTP/1.1 431 ", 13) == 0, "%s", r);
    cr_assert(strstr(body_of(r), "\"message\":\"request headers too large: about ") != NULL, "%s",
              r);
    cr_assert(strstr(body_of(r), " bytes of the 8192 this server keeps per connection "
                                 "(--conn-memory) are needed for the request alone\",") != NULL,
              "%s", r);
    cr_assert(strstr(body_of(r), "\"code\":431}\n") != NULL, "%s", r);
    cr_assert(strstr(body_of(r), "\"reason\"") == NULL, "431 has no reason: %s", r);
    free(r);
    /* a small request on the same server is served */
    r = get_close(srv, "/echo", NULL);
    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    free(r);
    http_server_stop(srv);
}

Test(http_server, status_replies_carry_retry_after_and_nosniff, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    char *r = get_close(srv, "/status", NULL);
    char v[128];

    cr_assert(strncmp(r, "HTTP/1.1 503 ", 13) == 0, "%s", r);
    cr_assert_str_eq(body_of(r),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"try later\",\"reason\":\"ServiceUnavailable\","
                     "\"details\":{\"retryAfterSeconds\":7},\"code\":503}\n");
    cr_assert(has_header(r, "Retry-After", "7"), "%s", r);
    cr_assert(has_header(r, "X-Content-Type-Options", "nosniff"), "%s", r);
    cr_assert(has_header(r, "Cache-Control", "no-cache, private"), "%s", r);
    cr_assert(header_value(r, "Content-Length", v, sizeof(v)));
    cr_assert_eq(strtoul(v, NULL, 10), strlen(body_of(r)));
    free(r);
    /* a success has no nosniff */
    r = get_close(srv, "/other", NULL);
    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    cr_assert_not(header_value(r, "X-Content-Type-Options", v, sizeof(v)), "%s", r);
    cr_assert(has_header(r, "Content-Type", "text/plain"), "%s", r);
    free(r);
    http_server_stop(srv);
}

Test(http_server, audit_id_is_echoed_or_made, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    char long_id[200];
    char hdr[300];
    char v[256];
    char *r;

    r = get_close(srv, "/other", "Audit-ID: 1234-abcd\r\n");
    cr_assert(has_header(r, "Audit-Id", "1234-abcd"), "%s", r);
    free(r);
    /* none given, or one too long to echo (128 bytes or more): a fresh UUIDv4 */
    memset(long_id, 'z', 128);
    long_id[128] = '\0';
    snprintf(hdr, sizeof(hdr), "Audit-ID: %s\r\n", long_id);
    for (int i = 0; i < 2; i++) {
        r = get_close(srv, "/other", i ? hdr : NULL);
        cr_assert(header_value(r, "Audit-Id", v, sizeof(v)), "%s", r);
        cr_assert_eq(strlen(v), 36, "%s", v);
        cr_assert(v[8] == '-' && v[13] == '-' && v[18] == '-' && v[23] == '-', "%s", v);
        cr_assert_eq(v[14], '4', "version 4: %s", v);
        cr_assert(strchr("89ab", v[19]) != NULL, "variant: %s", v);
        cr_assert_eq(strspn(v, "0123456789abcdef-"), 36, "%s", v);
        free(r);
    }
    http_server_stop(srv);
}

Test(http_server, the_apps_own_headers_replace_the_defaults, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    char *r = get_close(srv, "/headers", "Audit-ID: from-the-client\r\n");
    char v[128];

    cr_assert(strncmp(r, "HTTP/1.1 404 ", 13) == 0, "%s", r);
    cr_assert(has_header(r, "Cache-Control", "max-age=5"), "%s", r);
    cr_assert(has_header(r, "Audit-Id", "from-the-app"), "%s", r);
    cr_assert(has_header(r, "X-Extra", "1"), "%s", r);
    cr_assert(has_header(r, "X-Content-Type-Options", "nosniff"), "%s", r);
    cr_assert_not(header_value(r, "Content-Type", v, sizeof(v)), "no type given: %s", r);
    /* each header once */
    cr_assert_null(strstr(strstr(r, "Audit-Id") + 1, "Audit-Id"), "%s", r);
    cr_assert_null(strstr(strstr(r, "Cache-Control") + 1, "Cache-Control"), "%s", r);
    free(r);
    http_server_stop(srv);
}

Test(http_server, a_handler_that_does_not_answer_gets_a_500, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    char *r = get_close(srv, "/silent", NULL);

    cr_assert(strncmp(r, "HTTP/1.1 500 ", 13) == 0, "%s", r);
    cr_assert_str_eq(body_of(r),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                     "\"Failure\",\"message\":\"Internal error occurred: no response\","
                     "\"reason\":\"InternalError\",\"code\":500}\n");
    free(r);
    http_server_stop(srv);
}

Test(http_server, streams_are_chunked_on_http_1_1_only, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    static const char keep[] = "GET /stream HTTP/1.1\r\nHost: h\r\n\r\n";
    static const char closing[] =
        "GET /stream HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n";
    static const char old[] = "GET /stream HTTP/1.0\r\n\r\n";
    char v[64];
    char *r;

    /* HTTP/1.0 has no chunking: the body ends with the connection */
    r = exchange(srv, old, sizeof(old) - 1);
    cr_assert(strstr(r, " 200 ") != NULL, "%s", r);
    cr_assert_not(header_value(r, "Transfer-Encoding", v, sizeof(v)), "%s", r);
    cr_assert_str_eq(body_of(r), "chunk\n");
    free(r);
    /* HTTP/1.1 is chunked, closing or not (libmicrohttpd's choice) */
    r = exchange(srv, closing, sizeof(closing) - 1);
    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    cr_assert(has_header(r, "Connection", "close"), "%s", r);
    cr_assert(has_header(r, "Transfer-Encoding", "chunked"), "%s", r);
    cr_assert_str_eq(body_of(r), "6\r\nchunk\n\r\n0\r\n\r\n");
    free(r);
    {
        /* a keep-alive request: read until the last chunk, then hang up */
        const char *url = http_server_url(srv);
        struct sockaddr_in sa = {.sin_family = AF_INET};
        char buf[4096] = "";
        size_t got = 0;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        sa.sin_port = htons((uint16_t)strtoul(strrchr(url, ':') + 1, NULL, 10));
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        cr_assert_eq(send(fd, keep, sizeof(keep) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(keep) - 1);
        while (strstr(buf, "\r\n0\r\n\r\n") == NULL) {
            struct pollfd p = {fd, POLLIN, 0};
            ssize_t k;

            cr_assert_gt(poll(&p, 1, 10000), 0);
            k = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
            cr_assert_gt(k, 0, "closed before the last chunk: %.*s", (int)got, buf);
            got += (size_t)k;
            buf[got] = '\0';
        }
        close(fd);
        cr_assert(has_header(buf, "Transfer-Encoding", "chunked"), "%s", buf);
        cr_assert_not(header_value(buf, "Connection", v, sizeof(v)) && strcasecmp(v, "close") == 0,
                      "%s", buf);
        cr_assert_str_eq(body_of(buf), "6\r\nchunk\n\r\n0\r\n\r\n");
    }
    http_server_stop(srv);
}

/* A stream's headers are dropped from MHD's response once the body starts (memory per idle
 * watch): every one of them must still have gone out, and the connection must still serve
 * the next request, or close when the client asked for it. */
Test(http_server, a_streams_headers_all_go_out_before_they_are_dropped, .timeout = 30)
{
    struct http_server *srv = server(0, 0);
    static const char two[] = "GET /stream-headers HTTP/1.1\r\nHost: h\r\n\r\n"
                              "GET /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    static const char closing[] =
        "GET /stream-headers HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    char *r = exchange(srv, two, sizeof(two) - 1);
    const char *second;

    cr_assert(strncmp(r, "HTTP/1.1 200 ", 13) == 0, "%s", r);
    cr_assert(has_header(r, "Audit-Id", "from-the-app"), "%s", r);
    cr_assert(has_header(r, "X-Extra", "1"), "%s", r);
    cr_assert(has_header(r, "Cache-Control", "no-cache, private"), "%s", r);
    cr_assert(has_header(r, "Content-Type", "application/json"), "%s", r);
    cr_assert(has_header(r, "Transfer-Encoding", "chunked"), "%s", r);
    second = strstr(r, "\r\n0\r\n\r\n");
    cr_assert_not_null(second, "%s", r);
    second += 7;
    cr_assert(strncmp(second, "HTTP/1.1 200 ", 13) == 0, "the keep-alive request: %s", r);
    cr_assert_not_null(strstr(second, "GET /echo\n"), "%s", r);
    free(r);
    /* the dropped list keeps "Connection": the stream still ends the connection */
    r = exchange(srv, closing, sizeof(closing) - 1);
    cr_assert(has_header(r, "Connection", "close"), "%s", r);
    cr_assert(has_header(r, "X-Extra", "1"), "%s", r);
    cr_assert_str_eq(body_of(r), "6\r\nchunk\n\r\n0\r\n\r\n");
    free(r);
    http_server_stop(srv);
}

/* ---- starting ---------------------------------------------------------------------- */

Test(http_server, bad_listen_addresses_are_refused_with_a_reason)
{
    static const char *const bad[][2] = {
        {"127.0.0.1", "listen address 127.0.0.1: want HOST:PORT"},
        {"127.0.0.1:", "listen address 127.0.0.1:: bad port"},
        {"127.0.0.1:65536", "listen address 127.0.0.1:65536: bad port"},
        {"127.0.0.1:80x", "bad port"},
        {"example.com:80", "host must be an IPv4 address or localhost"},
        {"[::1]:80", "host must be an IPv4 address or localhost"},
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct http_server_opts o = {.listen = bad[i][0], .max_connections = 16};
        char err[256] = "";

        cr_assert_null(http_server_start(&o, handle, NULL, err, sizeof(err)), "%s", bad[i][0]);
        cr_assert(strstr(err, bad[i][1]) != NULL, "%s: %s", bad[i][0], err);
    }
}

Test(http_server, the_url_names_the_bound_address_and_port)
{
    static const char *const cases[][2] = {
        {"127.0.0.1:0", "http://127.0.0.1:"},
        {"localhost:0", "http://127.0.0.1:"},
        {"0.0.0.0:0", "http://0.0.0.0:"},
        {":0", "http://0.0.0.0:"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct http_server_opts o = {.listen = cases[i][0], .max_connections = 16};
        char err[256] = "";
        struct http_server *srv = http_server_start(&o, handle, NULL, err, sizeof(err));
        const char *url;
        unsigned long port;

        cr_assert_not_null(srv, "%s: %s", cases[i][0], err);
        url = http_server_url(srv);
        cr_assert(strncmp(url, cases[i][1], strlen(cases[i][1])) == 0, "%s", url);
        port = strtoul(url + strlen(cases[i][1]), NULL, 10);
        cr_assert(port > 0 && port < 65536, "%s: port 0 was not replaced", url);
        http_server_stop(srv);
    }
    http_server_stop(NULL);
}

Test(http_server, tls_needs_a_certificate_and_a_key_that_exist)
{
    struct http_server_opts o = {
        .listen = "127.0.0.1:0", .max_connections = 16, .tls_cert_file = "/nonexistent/c.pem"};
    char err[256] = "";

    cr_assert_null(http_server_start(&o, handle, NULL, err, sizeof(err)));
    cr_assert_str_eq(err, "https needs both a certificate and a key file");
    o.tls_key_file = "/nonexistent/k.pem";
    cr_assert_null(http_server_start(&o, handle, NULL, err, sizeof(err)));
    cr_assert(strstr(err, "cannot open /nonexistent/c.pem") != NULL, "%s", err);
}
