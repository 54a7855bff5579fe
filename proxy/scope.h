/*
 * scope.h - which objects one request sees: a namespace, a name, a label and a field
 * selector; matching an object against them and positioning in a snapshot, where the keys
 * of one namespace ("ns/name") are contiguous.
 *
 * A LIST walks a snapshot with scope_start/scope_in_ns and filters with scope_match; a
 * WATCH filters every event with scope_match. The two matchers are inline: they run per
 * item, and per event and watcher. Read-only once set, so any thread; no locks. May include
 * cache/ headers and k8s_path.h only.
 */
#ifndef KWP_PROXY_SCOPE_H
#define KWP_PROXY_SCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "cache/blob.h"
#include "cache/selector.h"
#include "cache/store.h"

struct snapshot;

/* Embedded in the request state; the strings are lent, the selectors owned. */
struct scope {
    const char *ns;        /* namespace scope ("" = all) */
    const char *name;      /* single-object scope ("" = collection) */
    struct selector *lsel; /* label selector (NULL = everything); freed by scope_fini */
    struct selector *fsel; /* field selector (NULL = everything); freed by scope_fini */
};

/* Whether <b> is in the namespace of <sc> (only that: keys sort by namespace first). */
static inline bool scope_in_ns(const struct scope *sc, const struct blob *b)
{
    return !sc->ns[0] || strcmp(b->ns, sc->ns) == 0;
}

/* Whether <b> is in <sc>: namespace, name and both selectors. */
static inline bool scope_match(const struct scope *sc, const struct blob *b)
{
    if (sc->ns[0] && strcmp(b->ns, sc->ns) != 0) {
        return false;
    }
    if (sc->name[0] && strcmp(b->name, sc->name) != 0) {
        return false;
    }
    return selector_match(sc->lsel, b) && selector_match(sc->fsel, b);
}

/*
 * Positions <it> at the first item of <s> in the namespace of <sc> after <after_key> (full
 * store key, NULL for the start): the namespace's first key, or the key after the given one.
 * Returns it (lent from <s>) or NULL. O(log n).
 */
const struct blob *scope_start(const struct scope *sc, const struct snapshot *s,
                               const char *after_key, struct store_iter *it);

/* How many keys of <s> in the namespace of <sc> sort after <key> (NULL = all of them),
 * selectors not applied. O(log n). */
size_t scope_count_after(const struct scope *sc, const struct snapshot *s, const char *key);

/* Frees the selectors of <sc> and sets them to NULL. */
void scope_fini(struct scope *sc);

#endif
