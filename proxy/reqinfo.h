/*
 * reqinfo.h - kube-apiserver's RequestInfo (k8s.io/apiserver pkg/endpoints/request/
 * requestinfo.go): what a request asks to do, as the authorizer sees it, computed from the
 * method, the path and the query alone.
 *
 *   GET /api/v1/namespaces/b/pods            -> resource, list, "" v1 pods in b
 *   GET /apis/apps/v1/watch/deployments      -> resource, watch (prefix), apps v1 deployments
 *   GET /api/v1/pods?fieldSelector=metadata.name=x&watch=1 -> watch pods, name x
 *   GET /api/v1/namespaces/b                 -> get namespaces, name b, namespace b
 *   GET /api/v1/namespaces/b/pods/x/log      -> get pods/log x in b
 *   GET /metrics                             -> non-resource, get "/metrics"
 *
 * Pure function; any thread; no locks. A struct reqinfo owns one heap block with all of its
 * strings (reqinfo_fini). Depends on review.h (attributes), k8s_path.h (query pairs) and
 * cache/selector.h (the fieldSelector, parsed as the apiserver parses it).
 */
#ifndef KWP_PROXY_REQINFO_H
#define KWP_PROXY_REQINFO_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy/k8s_path.h"
#include "proxy/review.h"

/* The text after "failed to create RequestInfo: " in kube-apiserver's 500 for a path whose
 * special verb has nothing after it (GET /api/v1/watch): the request URI follows. */
#define REQINFO_ERR_NO_KIND "unable to determine kind and namespace from url, "

/* Fields are read-only; strings are never NULL, "" when unset, and owned by <arena>. */
struct reqinfo {
    bool is_resource;       /* IsResourceRequest */
    const char *path;       /* the path as given */
    const char *verb;       /* list/watch/get/create/update/patch/delete/deletecollection/
                               proxy, "" for other methods on resources, or the lowercased
                               method of a non-resource request */
    const char *api_prefix; /* "api" or "apis" */
    const char *group;      /* APIGroup ("" = core) */
    const char *version;    /* APIVersion */
    const char *ns;         /* Namespace ("" = cluster scope / all namespaces) */
    const char *resource;
    const char *subresource;
    const char *name;   /* from the path, or a list/watch's fieldSelector metadata.name */
    size_t n_parts;     /* len(Parts): the path parts from the resource on */
    bool verb_via_path; /* the verb came from a /watch/ or /proxy/ segment */
    char *arena;        /* private */
};

/*
 * Fills <out> from the request. <method> is the HTTP method as sent ("GET"); <path> is the
 * decoded URL path (Go's URL.Path: what libmicrohttpd hands kwp); <q> holds the n decoded
 * query pairs (k8s_query_parse; a NULL value is ""; the first of a repeated key counts, as
 * url.Values.Get). The name a list/watch takes from fieldSelector=metadata.name=X needs the
 * whole ListOptions to decode (labelSelector, fieldSelector, limit and timeoutSeconds must
 * parse, as DecodeParameters requires; otherwise the verb still follows watch= and no name is
 * taken) and X must be a valid path segment name (not "." or "..", no '/' or '%').
 * Returns 0, or -EINVAL for a special verb with nothing after it, which kube-apiserver
 * answers 500 ("failed to create RequestInfo: " REQINFO_ERR_NO_KIND "<request URI>"); <out>
 * is filled as far as known. Call reqinfo_fini after every return.
 */
int reqinfo_parse(const char *method, const char *path, const struct k8s_query_kv *q, size_t n,
                  struct reqinfo *out);

/* Frees the strings and zeroes <ri>. */
void reqinfo_fini(struct reqinfo *ri);

/* The authorizer attributes of <ri> (strings borrowed from <ri>). */
void reqinfo_attrs(const struct reqinfo *ri, struct review_attrs *out);

#endif
