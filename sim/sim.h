/*
 * sim.h - kwp sim: a simulated kube-apiserver.
 *
 * An etcd-like global revision shared by all resources; objects held in cache/ resources
 * (the simulator is authoritative: its cache IS its storage); LIST/WATCH/GET answered by
 * proxy/handlers with kube-apiserver semantics; writes (POST/PUT/PATCH/DELETE), discovery,
 * compaction, churn and test endpoints (/_sim/stats, /_sim/compact) implemented here;
 * authentication, impersonation, authorization and the review APIs in sim/guard.h.
 *
 * Threads: MHD threads serve requests; one tick thread (proxy/registry.h's: deadlines,
 * bookmarks, idle-peer sweep; plus periodic compaction); one churn thread when --churn > 0. Writes
 * are serialised by the simulator's lock, which is never held while calling into MHD.
 */
#ifndef KWP_SIM_SIM_H
#define KWP_SIM_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy/config.h"

struct sim;

struct sim_opts {
    const char *listen;             /* HOST:PORT, port 0 allowed */
    int64_t objects;                /* seed pods */
    int64_t namespaces;             /* seed namespaces (default + ns-1 ...) */
    int64_t churn;                  /* writes per second (0 = none) */
    int64_t seed;                   /* RNG seed for generated objects */
    int64_t compaction_interval_ms; /* 0 = never */
    int64_t history_events;         /* revisions kept by compaction and per resource history */
    int64_t bookmark_interval_ms;
    int64_t watch_max_lag_ms;  /* end a watch whose next event waited longer (0 = never) */
    int64_t threads;           /* HTTP worker threads */
    bool watch_direct;         /* plain-HTTP watches go through the watch writers (fanout.h) */
    int64_t max_body;          /* request body cap */
    bool stamp;                /* write a kwp.io/stamp-ns annotation on every change */
    int64_t object_bytes;      /* pad generated objects to about this many bytes (0 = no) */
    const char *token;         /* require "Authorization: Bearer <token>" (401 otherwise) */
    const char *tls_cert_file; /* serve https with this PEM certificate and key */
    const char *tls_key_file;
    /* authentication and authorization (sim/guard.h); any of them makes the sim require
     * authentication */
    const char *token_auth_file;     /* static token users, kube-apiserver's CSV */
    const char *client_ca_file;      /* verify client certificates against this PEM CA */
    const char *authorization_rules; /* the rule file (sim/rbac.h); none: allow everything */
    bool anonymous_auth;             /* unauthenticated requests are system:anonymous */
    struct config_list resources;    /* extra group/version/plural[:namespaced|:cluster[:Kind]] */
};

/* Fills <o> with the defaults. */
void sim_opts_defaults(struct sim_opts *o);

/* Starts a simulator; returns NULL with a message in <err>. */
struct sim *sim_start(const struct sim_opts *o, char *err, size_t err_len);

/* "http://HOST:PORT" */
const char *sim_url(const struct sim *s);

/* Stops the threads and the server, frees everything. */
void sim_stop(struct sim *s);

/* `kwp sim ...`: parses flags, runs until SIGTERM/SIGINT, returns the exit code. */
int sim_main(int argc, char **argv);

#endif
