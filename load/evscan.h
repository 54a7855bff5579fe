/*
 * evscan.h - pulls the few fields `kwp load` needs out of a watch event line or a list body,
 * without building a JSON tree.
 *
 * A watch line {"type":"MODIFIED","object":{"kind":..,"metadata":{..,"resourceVersion":"42",
 * "annotations":{"kwp.io/stamp-ns":"1732912345123456789"}},"spec":..}} is walked member by
 * member: "type", then object.metadata (resourceVersion, the stamp annotation, the
 * initial-events-end annotation of a BOOKMARK), and for an ERROR event object.code. Values that
 * are not needed are skipped by bracket counting with string awareness; once the metadata of a
 * non-ERROR object is read the rest of the line (spec, status: most of the bytes) is not
 * looked at, so this is not a validator: it finds the fields or says -EPROTO, and never reads
 * outside the line. Keys are compared as written (kube-apiserver never escapes these keys).
 * Pure functions; any thread.
 */
#ifndef KWP_LOAD_EVSCAN_H
#define KWP_LOAD_EVSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVSCAN_STAMP_KEY "kwp.io/stamp-ns"
#define EVSCAN_INITIAL_END_KEY "k8s.io/initial-events-end"

/* The "type" of a watch event, in the order of the wire names. */
enum evscan_type {
    EVSCAN_ADDED = 0,
    EVSCAN_MODIFIED,
    EVSCAN_DELETED,
    EVSCAN_BOOKMARK,
    EVSCAN_ERROR
};

struct evscan_event {
    enum evscan_type type;
    size_t rv_off;    /* metadata.resourceVersion's bytes (inside the quotes) in the line */
    size_t rv_len;    /* 0 when absent */
    int64_t stamp_ns; /* annotation kwp.io/stamp-ns; -1 when absent or not a decimal integer */
    bool initial_end; /* annotation k8s.io/initial-events-end is "true" (BOOKMARK) */
    int code;         /* ERROR: object.code (a metav1.Status); 0 when absent */
};

/*
 * Scans one event line (without its '\n'). Returns 0 and fills <ev>, or -EPROTO when the line
 * is not an object, has no known "type" (ADDED MODIFIED DELETED BOOKMARK ERROR), no "object",
 * or is cut short.
 */
int evscan_event(const char *line, size_t len, struct evscan_event *ev);

/*
 * Finds metadata.resourceVersion of a list body from its first <len> bytes (kube-apiserver
 * writes kind, apiVersion, metadata, then items). Sets <off> and <rv_len> to the string's bytes.
 * Returns 0; -EAGAIN when the prefix ends before the value was found (give more bytes);
 * -ENOENT when metadata has no resourceVersion or the object has no metadata; -EPROTO when
 * the prefix is not the start of a JSON object.
 */
int evscan_list_rv(const char *data, size_t len, size_t *off, size_t *rv_len);

#endif
