/*
 * srv.h - one `kwp <command>` server under test (sim, proxy) on 127.0.0.1 port 0.
 *
 * srv_spawn runs `kwp <cmd> --listen 127.0.0.1:0 <args>` through proc_spawn (ready when the
 * child prints its URL); srv_wait_ready polls /readyz for the proxy; srv_stop sends SIGTERM and
 * asserts exit status 0. Failures assert with Criterion: call these from a Test's thread.
 */
#ifndef KWP_SUPPORT_SRV_H
#define KWP_SUPPORT_SRV_H

#include <stdbool.h>

#include "tests/support/proc.h"

/* A NULL-terminated argument list literal: ARGS("--objects", "0"). */
#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* A running server: owned by the test that spawned it until srv_stop. */
struct srv {
    struct proc *p; /* NULL once stopped */
    char url[256];  /* "http://127.0.0.1:PORT" */
};

/*
 * Starts `kwp <cmd> --listen 127.0.0.1:0` followed by <a> then <b> (each NULL-terminated, may
 * be NULL; 59 arguments at most together) and fills <s>; asserts it started.
 */
void srv_spawn(struct srv *s, const char *cmd, const char *const *a, const char *const *b);

/* Stops <s> (SIGTERM, then SIGKILL after 5 s) and asserts exit status 0; <what> names it in
 * the message. A stopped or never-started <s> (p NULL) is left alone. */
void srv_stop(struct srv *s, const char *what);

/* Polls /readyz until 200 within <ms>; on failure prints the server's log and asserts. */
void srv_wait_ready(const struct srv *s, long ms);

#endif
