/*
 * printers.h - kube-apiserver's server-side Table printers (pkg/printers/internalversion,
 * 1.34) for the built-in kinds kwp knows, and rest's default Table convertor for the rest.
 *
 * A printer owns one kind's columnDefinitions and computes one row's cells from the object's
 * JSON. The apiserver prints decoded objects, so the v1 defaulting its codec applies on read
 * (replicas 1, Service type ClusterIP, Secret type Opaque, ...) is applied to the fields a
 * printer reads. It prints with GenerateOptions{Wide: true}: rows always carry the -o wide
 * cells, and the columns flagged priority 1 are the ones kubectl shows only with -o wide.
 *
 * Printers are immutable once built (the column JSON is built once, on first use, under
 * pthread_once): every function may be called from any thread, no lock is taken.
 */
#ifndef KWP_PROXY_PRINTERS_H
#define KWP_PROXY_PRINTERS_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct printer;

/*
 * Returns kube-apiserver's printer for <group> ("" for core) and <resource> (the plural),
 * or NULL when kwp has none: custom resources (their columns come from the CRD's
 * additionalPrinterColumns) and built-ins not in the table. The result is static.
 */
const struct printer *printers_find(const char *group, const char *resource);

/* rest's defaultTableConvertor: Name and Created At (RFC 3339, UTC). Static. */
const struct printer *printers_default(void);

/* A custom resource whose CRD has no additionalPrinterColumns: apiextensions' convertor
 * with the defaulted columns Name and Age (a date column: HumanDuration since
 * metadata.creationTimestamp). Static. */
const struct printer *printers_custom(void);

/*
 * The columnDefinitions JSON array of <p> (Go's encoding of []TableColumnDefinition, the
 * same for meta.k8s.io/v1 and v1beta1), NUL-terminated. Static: lives for the process.
 */
const char *printers_columns(const struct printer *p);

/*
 * One row of <obj> (NULL prints as an empty object): "cells":[...] and, for finished pods,
 * ,"conditions":[...], as kube-apiserver encodes them (ages against <now_ns>, ns since the
 * epoch). Returns a NUL-terminated heap string the caller frees; its length in *len.
 */
char *printers_cells_new(const struct printer *p, const struct cJSON *obj, int64_t now_ns,
                         size_t *len);

#endif
