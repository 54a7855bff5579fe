/*
 * lab_int.h - the run context's insides, shared by lab.c, proc.c and http.c only.
 */
#ifndef KWP_LAB_LAB_INT_H
#define KWP_LAB_LAB_INT_H

#include <stdbool.h>
#include <sys/types.h>

#include "lab/lab.h"

#define LAB_PROCS_MAX 16
#define LAB_URL_MAX 256
#define LAB_PATH_MAX 512

struct lab_proc {
    pid_t pid; /* > 0 until reaped */
    int status;
    bool stopped;
    char url[LAB_URL_MAX];
    char log[LAB_PATH_MAX + 64];
    char cmd[32];
};

struct lab {
    struct lab_opts opts;
    const struct lab_experiment *exp;
    cJSON *results; /* owned */
    cJSON *tables;  /* in results */
    cJSON *notes;   /* in results */
    uint64_t start_ms;
    bool tty;               /* stderr is a terminal */
    bool progress_on;       /* a progress line is showing */
    char dir[LAB_PATH_MAX]; /* mkdtemp: child logs, removed at the end unless a child failed */
    struct lab_proc procs[LAB_PROCS_MAX];
    size_t n_procs;
    char ns[64];
    char ns_server[LAB_URL_MAX]; /* where lab_ns_ensure created the namespace, "" if nowhere */
};

/* Stops every child still running (proc.c). */
void lab_procs_stop_all(struct lab *lab);

#endif
