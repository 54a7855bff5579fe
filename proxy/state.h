/*
 * state.h - warm restart: each cached resource's state in a file of its own (--state-dir).
 *
 * One file per resource, DIR/<group|core>_<version>_<plural>.kwpstate, little-endian:
 *
 *   "KWPSTATE" | u32 version (1) | u32 0 | str upstream (state_upstream_id) | str group |
 *   str version | str plural |
 *   str kind | u64 rv | u64 boundary | u64 n_objects | u64 n_events |
 *   n_objects x (u32 len, len bytes: an object as stored, at <boundary>, in key order) |
 *   n_events  x (u64 rv, u8 type, u32 len, len bytes: the event's object) |
 *   SHA-256 of every byte before it (32 bytes)
 *
 * (str = u32 len + bytes, at most STATE_MAX_STR.) The objects are the state at the history
 * boundary and the events the whole history after it, so loading replays them and rebuilds the
 * same store, the same history and the same 410 boundary (cache/resource.h, resource_export).
 * Written to DIR/.<name>.tmp.<pid>, fsynced, renamed, and the directory fsynced. A file is
 * trusted only whole: checksum first, then every length against the bytes left and every
 * count against STATE_MAX_* caps, rvs strictly increasing, every object parsed as the
 * reflector parses upstream's; anything else (and another upstream, resource or format
 * version) is refused with a reason, never half-loaded.
 * Threads: state_parse is pure (any thread); the rest do file I/O and take resource locks.
 */
#ifndef KWP_PROXY_STATE_H
#define KWP_PROXY_STATE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/ring.h"

struct apires;
struct registry;
struct resource_export;

#define STATE_FORMAT_VERSION 1
#define STATE_MAGIC "KWPSTATE"
#define STATE_MAX_FILE_BYTES ((size_t)8 << 30)   /* a bigger file is refused unread */
#define STATE_MAX_STR 4096                       /* upstream URL, group, version, plural, kind */
#define STATE_MAX_OBJECT_BYTES ((size_t)1 << 30) /* KUBE_JSON_MAX_INPUT */
#define STATE_MAX_OBJECTS ((size_t)1 << 26)
#define STATE_MAX_EVENTS ((size_t)100000000) /* --history-max's own cap */
#define STATE_SUM_LEN 32

/* Whose state a file holds: a file naming anything else is foreign. Strings lent. */
struct state_ident {
    const char *upstream; /* the upstream URL as kwp uses it */
    const char *group;    /* "" for the core group */
    const char *version;
    const char *plural;
    const char *kind;
};

/* One record of a parsed file: a span of the parsed buffer. */
struct state_rec {
    const char *data;
    size_t len;
    uint64_t rv;          /* events only */
    enum watch_type type; /* events only: ADDED, MODIFIED or DELETED */
};

struct state_file {
    uint64_t rv;
    uint64_t boundary;
    size_t n_objects;
    size_t n_events;
    struct state_rec *objects; /* owned; spans into the parsed buffer */
    struct state_rec *events;  /* owned */
};

/* Why a file was refused (state_parse's return values). */
#define STATE_ERR_CORRUPT (-EPROTO)  /* truncated, bad checksum, bad lengths or counts */
#define STATE_ERR_VERSION (-ENOTSUP) /* not this format (magic) or another version */
#define STATE_ERR_FOREIGN (-EXDEV)   /* another upstream or another resource */

#define STATE_ID_MAX 2048 /* state_upstream_id's output, NUL included */

/*
 * The upstream identity files are written for (struct state_ident's <upstream>): the URL (its
 * SHA-256 when it is longer than half of STATE_ID_MAX) plus what vouches for the server kwp
 * talks to: " ca=sha256:<hex>" of the CA bundle it verifies the server with (<ca_data>, else
 * the contents of <ca_file>: another cluster behind the same URL has another CA), " ca=system"
 * (the system store) or " ca=insecure" (--insecure-skip-tls-verify). kube-apiserver offers no
 * cluster UID an unprivileged client can read, and its /version changes with every upgrade (and
 * is unknown while upstream is down, which is when a warm start helps most). Any thread.
 */
void state_upstream_id(const char *url, const char *ca_file, const char *ca_data, bool insecure,
                       char out[STATE_ID_MAX]);

/*
 * Encodes <x> for <id> into a heap buffer (*out, *out_len; caller frees): what state_save
 * writes, for tests and fuzz seeds. Returns 0.
 */
int state_encode(const struct state_ident *id, const struct resource_export *x, char **out,
                 size_t *out_len);

/*
 * Checks and splits buf[0..len) (the whole file) written for <id>. Returns 0 with <out> filled
 * (free with state_file_fini; its spans point into <buf>), or STATE_ERR_* with a reason in
 * <why> and <out> zeroed. Allocates at most O(len): counts are checked against the bytes left
 * before anything is allocated. Pure; any thread.
 */
int state_parse(const char *buf, size_t len, const struct state_ident *id, struct state_file *out,
                char *why, size_t why_len);

void state_file_fini(struct state_file *f);

/*
 * Loads <ar>'s file from <dir> (if any) into its cache: builds every object as the reflector
 * would (kube_meta_blob), then resource_replace at the boundary and resource_apply for each
 * event, so the cache is ready (serving) at the saved rv. Returns the saved rv (> 0) for the
 * reflector to resume its watch from, or 0 when there was nothing to load or the file was
 * refused (logged with the reason; the resource then lists as usual). A reflector_load_fn's
 * work (the reflector thread, before its first request for <ar>): any thread, but not
 * concurrently with another writer of <ar>.
 */
uint64_t state_load(struct apires *ar, const char *dir, const char *upstream);

/*
 * Writes <ar>'s state to <dir> (temporary name, fsync, rename, fsync of the directory).
 * A resource that is not ready (relisting, or not loaded yet) saves nothing and its previous
 * file stays (resuming from an older rv is still right: a replay, or a 410 and a relist).
 * Returns 0 or -errno (logged). Any thread; takes the resource lock briefly.
 */
int state_save(struct apires *ar, const char *dir, const char *upstream);

/*
 * The saver of a proxy: state_saver_start checkpoints every resource of <reg> every
 * <interval_ms> on a thread of its own (0 = never: only the final save); state_saver_final
 * stops that thread and saves every resource once more (at shutdown, after the reflector has
 * stopped, so the files hold the last state). <dir>, <upstream> and <reg> must outlive it.
 * Returns NULL (with <err>) when <dir> is not a writable directory.
 */
struct state_saver *state_saver_start(const char *dir, int64_t interval_ms, const char *upstream,
                                      struct registry *reg, char *err, size_t err_len);
void state_saver_final(struct state_saver *sv);
void state_saver_free(struct state_saver *sv); /* NULL-safe; stops the thread without saving */

#endif
