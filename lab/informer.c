/*
 * informer.c - a list+watch client in a thread of its own, the way client-go's reflector
 * runs: LIST, then WATCH from the list's RV (optionally with timeoutSeconds and
 * allowWatchBookmarks); when the stream ends, re-watch from the last RV seen (an event's or
 * a bookmark's); on a 410 ERROR event (or a watch refused with an error status), LIST again.
 * It counts what it sent and what it got, so experiments can compare strategies.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab/lab.h"

#define INF_URL_MAX 1024
#define INF_WATCH_MAX_MS (3600L * 1000L)
#define INF_POLL_MS 100
#define INF_BACKOFF_MS 100

struct lab_informer {
    pthread_t thread;
    pthread_mutex_t mu;
    char base[INF_URL_MAX];
    char path[INF_URL_MAX];
    int timeout_s;
    bool bookmarks;
    long gap_ms;
    volatile bool stop;
    struct lab_inf_stats st;
};

static void inf_update(struct lab_informer *inf, void (*fn)(struct lab_inf_stats *, uint64_t),
                       uint64_t v)
{
    pthread_mutex_lock(&inf->mu);
    fn(&inf->st, v);
    pthread_mutex_unlock(&inf->mu);
}

static void set_rv(struct lab_inf_stats *s, uint64_t rv)
{
    if (rv > s->rv) {
        s->rv = rv;
    }
}

/* One LIST; 0 and *rv on success. */
static int inf_list(struct lab_informer *inf, uint64_t *rv)
{
    struct lab_resp r;
    cJSON *j = NULL;
    int rc = -1;

    if (lab_http("GET", inf->base, inf->path, NULL, 30000, &r) == 0 && r.code == 200) {
        j = cJSON_ParseWithLength(r.body, r.len);
        *rv = lab_json_rv(j);
        rc = *rv ? 0 : -1;
    }
    pthread_mutex_lock(&inf->mu);
    inf->st.lists++;
    inf->st.list_bytes += r.len;
    if (rc == 0) {
        inf->st.lists_ok++;
        set_rv(&inf->st, *rv);
        inf->st.last_list_ms = lab_now_ms();
    }
    pthread_mutex_unlock(&inf->mu);
    cJSON_Delete(j);
    lab_resp_free(&r);
    return rc;
}

/* Reads one watch to its end. Returns 1 when the informer must relist (410 or an error),
 * 0 when it may re-watch from *rv. */
static int inf_watch(struct lab_informer *inf, uint64_t *rv)
{
    char path[INF_URL_MAX + 200], extra[96] = "";
    struct lab_watch *w;
    struct lab_event ev;
    int relist = 0, rc;
    long status;

    if (inf->timeout_s > 0) {
        snprintf(extra, sizeof(extra), "&timeoutSeconds=%d", inf->timeout_s);
    }
    snprintf(path, sizeof(path), "%s%swatch=1&resourceVersion=%" PRIu64 "%s%s", inf->path,
             strchr(inf->path, '?') ? "&" : "?", *rv, extra,
             inf->bookmarks ? "&allowWatchBookmarks=true" : "");
    w = lab_watch_open(inf->base, path, INF_WATCH_MAX_MS);
    if (!w) {
        return 1;
    }
    pthread_mutex_lock(&inf->mu);
    inf->st.watches++;
    pthread_mutex_unlock(&inf->mu);
    while (!inf->stop && (rc = lab_watch_next(w, &ev, INF_POLL_MS)) != 0) {
        if (rc != 1) {
            continue;
        }
        pthread_mutex_lock(&inf->mu);
        if (ev.type == LAB_EV_ERROR) {
            if (ev.code == 410) {
                inf->st.gone++;
            } else {
                inf->st.errors++;
            }
            relist = 1;
        } else {
            if (ev.type == LAB_EV_BOOKMARK) {
                inf->st.bookmarks++;
            } else {
                inf->st.events++;
            }
            if (ev.rv > *rv) {
                *rv = ev.rv;
            }
            set_rv(&inf->st, ev.rv);
        }
        pthread_mutex_unlock(&inf->mu);
        if (relist) {
            break;
        }
    }
    status = lab_watch_status(w);
    lab_watch_close(w);
    if (!relist && !inf->stop && status != 200) {
        pthread_mutex_lock(&inf->mu);
        if (status == 410) {
            inf->st.gone++;
        } else {
            inf->st.errors++;
        }
        pthread_mutex_unlock(&inf->mu);
        relist = 1;
    }
    if (!relist && !inf->stop) {
        inf_update(inf, set_rv, *rv);
        pthread_mutex_lock(&inf->mu);
        inf->st.watch_ends++;
        pthread_mutex_unlock(&inf->mu);
    }
    return relist;
}

static void *inf_main(void *arg)
{
    struct lab_informer *inf = arg;
    uint64_t rv = 0;
    bool need_list = true;

    while (!inf->stop) {
        if (need_list) {
            if (inf_list(inf, &rv) != 0) {
                lab_sleep_ms(INF_BACKOFF_MS);
                continue;
            }
            need_list = false;
        }
        if (inf_watch(inf, &rv) != 0) {
            need_list = true;
        }
        for (long waited = 0; !inf->stop && waited < inf->gap_ms; waited += INF_POLL_MS) {
            lab_sleep_ms(INF_POLL_MS); /* the client is away before it re-watches */
        }
    }
    return NULL;
}

struct lab_informer *lab_informer_start(const char *base, const char *path, int timeout_s,
                                        bool bookmarks, long gap_ms)
{
    struct lab_informer *inf = calloc(1, sizeof(*inf));

    if (!inf) {
        return NULL;
    }
    snprintf(inf->base, sizeof(inf->base), "%s", base);
    snprintf(inf->path, sizeof(inf->path), "%s", path);
    inf->timeout_s = timeout_s;
    inf->bookmarks = bookmarks;
    inf->gap_ms = gap_ms;
    pthread_mutex_init(&inf->mu, NULL);
    if (pthread_create(&inf->thread, NULL, inf_main, inf) != 0) {
        pthread_mutex_destroy(&inf->mu);
        free(inf);
        return NULL;
    }
    return inf;
}

void lab_informer_stats(struct lab_informer *inf, struct lab_inf_stats *out)
{
    pthread_mutex_lock(&inf->mu);
    *out = inf->st;
    pthread_mutex_unlock(&inf->mu);
}

void lab_informer_free(struct lab_informer *inf)
{
    if (!inf) {
        return;
    }
    inf->stop = true;
    pthread_join(inf->thread, NULL);
    pthread_mutex_destroy(&inf->mu);
    free(inf);
}
