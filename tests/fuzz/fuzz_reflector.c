/*
 * fuzz_reflector.c - proxy/reflector.c's handling of upstream bytes: LIST pages and the watch
 * stream, through the real code paths and a real cache, without a network.
 *
 * The reflector's parsing is static and sits behind libcurl callbacks, so this file includes
 * reflector.c (STYLE: "#include the .c, sparingly") and drives one struct rsync by hand the
 * way reflector_main would after curl: on_data with each body piece (HTTP 200), list_done
 * after each LIST page, on_data with the watch stream, watch_done at its end. Nothing is sent
 * anywhere: the curl handle stays NULL and is never used on these paths.
 *
 * Input: "PAGE\0PAGE\0...\0STREAM": every NUL-separated part but the last is one LIST page
 * body (at most 4; a page whose continue token asks for more takes the next part), the last
 * part is the watch stream. An input without a NUL is a stream after a fixed empty list at
 * rv 10. A first page mentioning "WidgetList" syncs a custom kind (objects keep kind and
 * apiVersion), otherwise pods (stripped, with the spec.nodeName field). Lines are capped at
 * 256 bytes (--max-line), the history at 16 events.
 *
 * The stream is fed twice into fresh caches: in one piece and in pieces whose sizes come from
 * the input. Checked after every piece: on_data takes all bytes or stops the transfer with a
 * verdict (relist or backoff); the partial line stays within the cap and its buffer within
 * twice the cap; the cache's RV equals the reflector's and its string parses to it; history
 * within its capacity. At the end both runs agree (RV, verdict, events, bookmarks, the cached
 * objects byte for byte), every cached object is a JSON object with metadata, in strict key
 * order. (List items are stored as upstream wrote them, kind or no kind, and even when newer
 * than their list's RV: upstream's word, as client-go's reflector takes it.) A relist
 * verdict leaves the cache not ready.
 */
#define _GNU_SOURCE /* memmem */
#include "proxy/reflector.c"

#include "cache/snapshot.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_LINE 256
#define FUZZ_MAX_PAGES 4
#define FUZZ_DEFAULT_PAGE                                                                          \
    "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":[]}"

static const struct apires_kind widgets = {
    .group = "example.com",
    .version = "v1",
    .plural = "widgets",
    .kind = "Widget",
    .list_kind = "WidgetList",
    .namespaced = true,
    .builtin = false,
    .short_names = "",
    .bookmark_body = "",
    .fields = {NULL},
};

/* What one run ends with, for comparing two runs. */
struct outcome {
    bool synced;
    uint64_t rv;
    char rv_str[REFLECTOR_RV_MAX];
    enum rsync_verdict verdict;
    uint64_t events, bookmarks;
    size_t objects;
    uint64_t hash; /* FNV-1a over the cached objects' keys and bytes, in key order */
};

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
    }
    return (h ^ 0xff) * 0x100000001b3ULL;
}

/* Feeds <p> as one curl write callback; returns false when the transfer was stopped. */
static bool feed(struct rsync *s, const char *p, size_t n)
{
    char *exact = malloc(n ? n : 1);
    size_t got;
    uint64_t rv = 0;

    memcpy(exact, p, n);
    got = on_data(exact, 1, n, s);
    free(exact);
    CHECK(got == n || (got == 0 && s->verdict != VERDICT_NONE));
    if (s->state == RSYNC_WATCHING) {
        CHECK(s->line.len <= FUZZ_MAX_LINE);
        CHECK(s->line.cap <= 4096 || s->line.cap < 2 * FUZZ_MAX_LINE);
        CHECK(resource_rv(s->ar->res) == s->rv);
        CHECK(rv_parse(s->rv_str, &rv) == 0 && rv == s->rv);
    }
    return got == n;
}

static void check_cache(const struct rsync *s, struct outcome *out)
{
    struct resource_stats st;
    struct snapshot *snap;
    uint64_t rv = 0;

    resource_stats(s->ar->res, &st);
    CHECK(st.history_len <= st.history_cap);
    snap = resource_snapshot(s->ar->res, &rv);
    CHECK(rv == s->rv && snap->len == st.objects);
    out->hash = 0xcbf29ce484222325ULL;
    struct store_iter it;
    const struct blob *prev = NULL;
    size_t n = 0;
    for (const struct blob *b = snapshot_seek(snap, NULL, &it); b; b = snapshot_next(&it), n++) {
        size_t off, len;

        CHECK(kube_json_member(b->data, b->len, "metadata", &off, &len) == 0);
        CHECK(b->data[off] == '{' && b->name[0] != '\0');
        CHECK(prev == NULL || strcmp(prev->key, b->key) < 0);
        out->hash = fnv(fnv(out->hash, b->key, strlen(b->key)), b->data, b->len);
        prev = b;
    }
    CHECK(n == snap->len);
    out->objects = snap->len;
    snapshot_unref(snap);
}

/* Syncs from <pages> then feeds <stream> in pieces (<pat>: sizes; NULL = one piece). */
static void run(const char *const *pages, const size_t *page_len, size_t n_pages,
                const char *stream, size_t len, const uint8_t *pat, size_t plen,
                struct outcome *out)
{
    const struct ring_opts ro = {16, 16, 0};
    const struct apires_kind *kind = apires_builtin("", "v1", "pods");
    struct reflector r;
    struct rsync s;
    size_t page = 0, pos = 0;

    memset(&r, 0, sizeof(r));
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    r.o.max_line_bytes = FUZZ_MAX_LINE;
    r.o.max_list_bytes = (size_t)1 << 24;
    r.o.backoff_min_ms = 1;
    r.o.backoff_max_ms = 2;
    r.rng = 1;
    if (memmem(pages[0], page_len[0], "WidgetList", 10) != NULL) {
        kind = &widgets;
    }
    s.r = &r;
    s.ar = apires_new(kind, NULL, &ro);
    sbuf_init(&s.body, r.o.max_list_bytes); /* the caps reflector_add gives them */
    sbuf_init(&s.line, r.o.max_line_bytes);
    snprintf(s.rv_str, sizeof(s.rv_str), "0");

    /* LIST: one page per part while the previous page asked for more. */
    do {
        s.state = RSYNC_LISTING;
        s.http_code = 200;
        s.verdict = VERDICT_NONE;
        feed(&s, pages[page], page_len[page]);
        list_done(&s, CURLE_OK, clock_mono_ms());
        sbuf_clear(&s.body, REFLECTOR_ERR_BODY_MAX);
        page++;
    } while (s.synced == false && s.cont != NULL && page < n_pages);
    out->synced = s.synced;

    if (s.synced) {
        CHECK(resource_is_ready(s.ar->res, NULL) && resource_rv(s.ar->res) == s.rv);
        s.state = RSYNC_WATCHING;
        s.http_code = 200;
        s.verdict = VERDICT_NONE;
        s.watch_start_ms = clock_mono_ms();
        for (size_t k = 0; pos < len; k++) {
            size_t n = pat != NULL ? (size_t)(pat[k % plen] % 61) + 1 : len;

            if (n > len - pos) {
                n = len - pos;
            }
            if (!feed(&s, stream + pos, n)) {
                break;
            }
            pos += n;
        }
        check_cache(&s, out);
        out->rv = s.rv;
        snprintf(out->rv_str, sizeof(out->rv_str), "%s", s.rv_str);
        out->verdict = s.verdict;
        out->events = atomic_load(&s.ar->ctr.up_events);
        out->bookmarks = atomic_load(&s.ar->ctr.up_bookmarks);
        watch_done(&s, CURLE_OK, clock_mono_ms());
        CHECK(out->verdict != VERDICT_RELIST || !resource_is_ready(s.ar->res, NULL));
        CHECK(s.line.len == 0);
    }
    items_drop(&s);
    free(s.items);
    sbuf_free(&s.body);
    sbuf_free(&s.line);
    apires_free(s.ar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *pages[FUZZ_MAX_PAGES];
    size_t page_len[FUZZ_MAX_PAGES], n_pages = 0, pos = 0;
    const char *d = (const char *)data;
    struct outcome whole, parts;

    log_set_level(LOG_LEVEL_ERROR);
    for (;;) {
        const char *nul = memchr(d + pos, '\0', size - pos);

        if (nul == NULL || n_pages == FUZZ_MAX_PAGES) {
            break;
        }
        pages[n_pages] = d + pos;
        page_len[n_pages++] = (size_t)(nul - (d + pos));
        pos = (size_t)(nul - d) + 1;
    }
    if (n_pages == 0) {
        pages[0] = FUZZ_DEFAULT_PAGE;
        page_len[0] = strlen(FUZZ_DEFAULT_PAGE);
        n_pages = 1;
    }
    run(pages, page_len, n_pages, d + pos, size - pos, NULL, 0, &whole);
    run(pages, page_len, n_pages, d + pos, size - pos, size ? data : (const uint8_t *)"\x07",
        size ? size : 1, &parts);
    CHECK(whole.synced == parts.synced && whole.rv == parts.rv);
    CHECK(strcmp(whole.rv_str, parts.rv_str) == 0 && whole.verdict == parts.verdict);
    CHECK(whole.events == parts.events && whole.bookmarks == parts.bookmarks);
    CHECK(whole.objects == parts.objects && whole.hash == parts.hash);
    return 0;
}
