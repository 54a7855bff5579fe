/*
 * scope.c - positioning a request's scope in a snapshot (see scope.h). Every key of a
 * namespaced resource is "ns/name": the namespace's keys are contiguous, all greater than
 * "ns/", and all less than "ns0", since '0' follows '/'.
 */
#include "proxy/scope.h"

#include <stdio.h>

#include "cache/selector.h"
#include "cache/snapshot.h"
#include "proxy/k8s_path.h"

const struct blob *scope_start(const struct scope *sc, const struct snapshot *s,
                               const char *after_key, struct store_iter *it)
{
    char prefix[K8S_NAME_MAX + 2];
    const char *after = after_key;

    if (sc->ns[0]) {
        /* every key of the namespace is > "ns/" and they are contiguous */
        snprintf(prefix, sizeof(prefix), "%s/", sc->ns);
        if (after == NULL || strcmp(after, prefix) < 0) {
            after = prefix;
        }
    }
    return snapshot_seek(s, after, it);
}

size_t scope_count_after(const struct scope *sc, const struct snapshot *s, const char *key)
{
    char end[K8S_NAME_MAX + 2];
    size_t upto = s->len;
    size_t from;

    if (sc->ns[0]) {
        snprintf(end, sizeof(end), "%s0", sc->ns);
        upto = snapshot_rank(s, end);
        snprintf(end, sizeof(end), "%s/", sc->ns);
        if (key == NULL || strcmp(key, end) < 0) {
            key = end;
        }
    }
    from = snapshot_rank(s, key);
    return upto > from ? upto - from : 0;
}

void scope_fini(struct scope *sc)
{
    selector_free(sc->lsel);
    selector_free(sc->fsel);
    sc->lsel = NULL;
    sc->fsel = NULL;
}
