/*
 * apires.h - what the HTTP side knows about one API resource: its identity (group, version,
 * plural, kind, scope), the selectable fields to extract from its objects, the empty-object
 * body used for BOOKMARK events, and request counters. Wraps the cache's struct resource.
 *
 * The built-in table covers the kinds kube-apiserver serves that the simulator and the
 * demo use; anything else (custom resources, --resource) is described at runtime.
 * Counters are atomics: any thread.
 */
#ifndef KWP_PROXY_APIRES_H
#define KWP_PROXY_APIRES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/ring.h"

struct resource;
struct selector;

#define APIRES_MAX_FIELDS 16

/* Static description of a kind. */
struct apires_kind {
    const char *group; /* "" for core */
    const char *version;
    const char *plural;
    const char *singular;
    const char *kind;
    const char *list_kind;
    bool namespaced;
    bool builtin;              /* list items carry no kind/apiVersion (custom resources do) */
    const char *short_names;   /* comma-separated, "" for none */
    const char *bookmark_body; /* JSON members after "metadata":{...} in a BOOKMARK object,
                                  e.g. ,"spec":{"containers":null},"status":{} ; "" for none */
    const char *fields[APIRES_MAX_FIELDS]; /* selectable field paths beyond metadata.*, NULL-ended;
                                              "key:path|path|=default" for computed ones */
    const char
        *field_reject_kind; /* when set, the 400 for a label the kind's converter rejects
                               reads `field label "<label>" not supported for <this>`
                               (batch's converter); NULL: `field label not supported: <label>` */
};

/* Per-resource request counters (served by /_sim/stats and /metrics). */
struct apires_counters {
    atomic_ullong lists;
    atomic_ullong watches;
    atomic_ullong gets;
    atomic_ullong watches_open;
    atomic_ullong frames;               /* watch events written */
    atomic_ullong too_old;              /* 410s sent */
    atomic_ullong watches_before_cache; /* watches from before the cache began: forwarded */
    atomic_ullong too_large;            /* 504s sent */
    atomic_ullong not_ready;            /* 429s sent */
    atomic_ullong terminated;           /* watches ended for lagging (--watch-max-lag) */
    atomic_ullong forwarded;            /* requests passed upstream */
    atomic_ullong not_cached; /* 1: its list went over --max-resource-bytes, it is forwarded */
    /* upstream side (the proxy's reflector) */
    atomic_ullong up_lists;      /* LIST requests sent upstream (pages) */
    atomic_ullong up_watches;    /* WATCH requests sent upstream */
    atomic_ullong up_watch_open; /* 1 while the upstream watch stream is open */
    atomic_ullong up_events;     /* watch events received */
    atomic_ullong up_bookmarks;  /* bookmarks received */
    atomic_ullong relists;       /* relists (start, 410, protocol errors) */
    atomic_ullong relists_kept;  /* of those, relists that found the state unchanged */
    atomic_ullong up_errors;     /* failed upstream requests and malformed data */
    atomic_ullong up_stale;      /* 1 while serving a loaded state not yet fresh (state.h) */
};

/* One served resource: identity + cache + counters. Owned by the app (sim or proxy). */
struct apires {
    struct apires_kind kind; /* copied; strings owned by the table or by <owned> */
    char api_version[160];   /* "v1" or "group/version" */
    struct resource *res;    /* the cache */
    int64_t created_ms;      /* clock_mono_ms() at creation: a never-ready cache's 429
                                Retry-After counts from here, as ready.go's newReady does */
    struct apires_counters ctr;
    char *owned; /* heap strings of a runtime-described kind */
};

/* Returns the built-in description of group/version/plural, or NULL. */
const struct apires_kind *apires_builtin(const char *group, const char *version,
                                         const char *plural);

/* The built-in table itself, for discovery documents. */
const struct apires_kind *apires_builtin_table(size_t *n);

/*
 * Describes a resource from a spec "group/version/plural[:namespaced|:cluster[:Kind]]" (core:
 * "v1/plural" or "/v1/plural"). Built-ins keep their table entry (suffixes ignored); others
 * get kind = the Kind given (an upper-case letter, then letters and digits; singular = it in
 * lower case, as a CRD's default) or else CamelCase singular (plural minus a trailing "s"),
 * namespaced unless ":cluster", builtin=false. Returns 0 or -EINVAL.
 */
int apires_parse_spec(const char *spec, struct apires_kind *out, char **owned);

/* Builds an apires around <kind> with a new cache resource. Caller frees with apires_free. */
struct apires *apires_new(const struct apires_kind *kind, char *owned,
                          const struct ring_opts *ring);
void apires_free(struct apires *ar);

#endif
