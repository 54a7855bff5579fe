/*
 * lab.h - `kwp lab`: named, repeatable experiments on "too old" (410) and "too large" (504)
 * resourceVersions, and the toolkit they share.
 *
 * An experiment is one entry of the registry (struct lab_experiment) with a run function that
 * gets a run context (struct lab). Through the context it:
 *   - starts `kwp sim` / `kwp proxy` as children of this binary (/proc/self/exe) on
 *     127.0.0.1:0 and stops them by PID (lab_spawn, lab_proc_stop); every child still running
 *     when the experiment returns is stopped by the framework;
 *   - finds the server it studies: --upstream URL, or an embedded simulator (lab_server);
 *   - reads and writes only its own namespace (lab_ns, created and deleted by the framework);
 *   - makes requests (lab_http, lab_get_json), reads watch streams event by event
 *     (lab_watch_*), writes its own configmaps at a rate with a log of every write
 *     (lab_writer_*), reads /metrics figures (lab_metric);
 *   - puts every measured figure into the results (lab_results: a cJSON object written to
 *     --json FILE), prints aligned tables (lab_table_*), one conclusion line (lab_conclude),
 *     draws a plot with gnuplot (lab_plot; skipped with a clear note when gnuplot is
 *     missing) and shows a progress line on stderr when it is a terminal (lab_progress).
 *
 * Exit status: the run function returns 0 when the experiment ran (the conclusion says what
 * was measured, whatever it was), or -1 after lab_fail() on a setup failure (a child did not
 * start, the server is unreachable, --upstream given to an experiment that needs the
 * simulator's controls): `kwp lab run` then exits 1.
 *
 * Adding an experiment: write lab/exp_<name>.c defining one `const struct lab_experiment`,
 * declare it below next to the others and append it to the table in lab.c.
 *
 * Threads: a struct lab and everything it hands out belong to the experiment's thread, except
 * that a watch and a writer each run a thread of their own internally (their functions are
 * still called from the experiment's thread only). Every wait here is bounded in time.
 */
#ifndef KWP_LAB_LAB_H
#define KWP_LAB_LAB_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

struct lab;

/* ---- the registry ------------------------------------------------------------------- */

/* What an experiment needs beyond a Kubernetes API server. */
enum lab_needs {
    LAB_NEEDS_API = 0, /* works against --upstream too (own namespace only) */
    LAB_NEEDS_SIM =
        1, /* needs the simulator's controls (/_sim/..., sim flags): refuses --upstream */
};

struct lab_experiment {
    const char *name;    /* `kwp lab run NAME` */
    const char *summary; /* one line for `kwp lab list` */
    enum lab_needs needs;
    int (*run)(struct lab *lab); /* 0: ran (see the conclusion); -1: setup failure */
};

/* The experiments (lab/exp_*.c). */
extern const struct lab_experiment lab_exp_too_old;
extern const struct lab_experiment lab_exp_too_large;
extern const struct lab_experiment lab_exp_rv_semantics;
extern const struct lab_experiment lab_exp_window;
extern const struct lab_experiment lab_exp_bookmarks;
extern const struct lab_experiment lab_exp_timeouts;
extern const struct lab_experiment lab_exp_relist_storm;
extern const struct lab_experiment lab_exp_compaction;

/* `kwp lab ...` (argv[0] is "lab"). Returns the process exit status. */
int lab_main(int argc, char **argv);

/* ---- the run context ---------------------------------------------------------------- */

struct lab_opts {
    bool quick;           /* --quick: under 60 s */
    const char *json;     /* --json FILE, or NULL */
    const char *plot;     /* --plot FILE.png, or NULL */
    const char *upstream; /* --upstream URL, or NULL: the embedded simulator */
};

const struct lab_opts *lab_opts(const struct lab *lab);
static inline bool lab_quick(const struct lab *lab)
{
    return lab_opts(lab)->quick;
}
/* The experiment being run. */
const struct lab_experiment *lab_experiment(const struct lab *lab);

/* Prints "kwp lab NAME: <message>" to stderr, records it as results.error; returns -1 (for
 * `return lab_fail(...)` on a setup failure). */
int lab_fail(struct lab *lab, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints a line to stdout and appends it to results.notes. */
void lab_note(struct lab *lab, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "conclusion: <text>" to stdout and sets results.conclusion (the last call wins). */
void lab_conclude(struct lab *lab, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* On a terminal (isatty(2)) rewrites one progress line on stderr; otherwise nothing.
 * lab_progress_done() clears it. */
void lab_progress(struct lab *lab, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lab_progress_done(struct lab *lab);

/* Monotonic clock, milliseconds; sleep (bounded by the caller). */
uint64_t lab_now_ms(void);
void lab_sleep_ms(uint64_t ms);

/* ---- results, tables, plots ----------------------------------------------------------- */

/* The results object (owned by the context; add members with the cJSON API). It always has
 * "experiment", "quick", "upstream" (or null), and at the end "tables", "notes",
 * "conclusion", "elapsedSeconds". */
cJSON *lab_results(struct lab *lab);

/* An aligned text table, also recorded as results.tables.<key> = {title, columns, rows}. */
struct lab_table;
/* <cols>: <ncols> column headers (copied). */
struct lab_table *lab_table_new(struct lab *lab, const char *key, const char *title,
                                const char *const *cols, size_t ncols);
/* Appends the next cell (row-major; a new row starts after <ncols> cells). Numbers given as
 * text are stored as JSON numbers when they parse as one. */
void lab_table_cell(struct lab_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prints the table to stdout, records it and frees <t>. */
void lab_table_end(struct lab_table *t);

/*
 * With --plot FILE.png: writes FILE.dat (<data>, gnuplot's whitespace columns) and FILE.gp
 * (a terminal/output preamble, then <script>, which refers to the data file as '$DAT' — the
 * framework replaces each $DAT by the quoted .dat path) and runs gnuplot on it. Without
 * --plot nothing happens. When gnuplot is missing or fails, says so in a note and returns
 * -1; the experiment goes on (its exit status does not depend on the plot). Returns 0 when
 * the PNG was written.
 */
int lab_plot(struct lab *lab, const char *data, const char *script);

/* ---- child servers ------------------------------------------------------------------- */

struct lab_proc;

/*
 * Starts `<this binary> <cmd> --listen 127.0.0.1:0 <args...>` (<args> NULL-terminated, may
 * be NULL), stdout and stderr to a log file, and waits (5 s) for its "listening on URL" line.
 * Returns the child (owned by the context, stopped at the end at the latest) or NULL after a
 * note with the log's tail. KWP_SHUTDOWN_DELAY=0 is set for the child unless set already.
 */
struct lab_proc *lab_spawn(struct lab *lab, const char *cmd, const char *const *args);
/* Its base URL, "http://127.0.0.1:PORT" (lent, valid until the context ends). */
const char *lab_proc_url(const struct lab_proc *p);
int lab_proc_pid(const struct lab_proc *p);
/* Sends <sig> (SIGSTOP, SIGCONT...) to the child only. 0 or -errno. */
int lab_proc_signal(struct lab_proc *p, int sig);
/* SIGTERM (after SIGCONT), waits up to 5 s, then SIGKILL. Returns its exit status (128+sig
 * when a signal ended it); the URL stays readable. Stopping twice returns the first status. */
int lab_proc_stop(struct lab_proc *p);

/*
 * The server the experiment studies: the --upstream URL, or else a new `kwp sim` with
 * <sim_args> (--objects 0 --churn 0 unless <sim_args> gives them). NULL after lab_fail.
 * When <sim> is not NULL it gets the simulator started (NULL with --upstream).
 */
const char *lab_server(struct lab *lab, const char *const *sim_args, struct lab_proc **sim);

/* Starts `kwp proxy --upstream <upstream> <args...>` (plus --auth none --shutdown-delay 0
 * --resources configmaps unless given). NULL after a note. */
struct lab_proc *lab_proxy(struct lab *lab, const char *upstream, const char *const *args);

/* The namespace the experiment owns: "kwp-lab-<pid>". lab_ns_ensure() creates it on <url>
 * (409 AlreadyExists is fine) and the framework deletes what it created at the end. 0 or
 * -1 after a note. */
const char *lab_ns(const struct lab *lab);
int lab_ns_ensure(struct lab *lab, const char *url);

/* ---- HTTP ---------------------------------------------------------------------------- */

#define LAB_BODY_MAX (64u << 20) /* bodies beyond this are cut (resp.truncated) */

struct lab_resp {
    long code;  /* HTTP status; 0 when no response arrived */
    char *body; /* NUL-terminated, never NULL after lab_http */
    size_t len;
    bool truncated;       /* the body was longer than LAB_BODY_MAX */
    double seconds;       /* total time of the request */
    char retry_after[16]; /* Retry-After header value, "" when absent */
};

/*
 * One request: <method> on <base> + <path> (path starts with '/'), JSON <body> or NULL,
 * bounded by <timeout_ms>. Fills <r> (free with lab_resp_free whatever the result). Returns 0
 * when a response arrived (any status), -1 otherwise (r->code 0; the curl error is in r->body).
 */
int lab_http(const char *method, const char *base, const char *path, const char *body,
             long timeout_ms, struct lab_resp *r);
void lab_resp_free(struct lab_resp *r);

/* GET <base><path> as JSON. Returns the parsed body (caller frees) or NULL; *code (if not
 * NULL) gets the status. */
cJSON *lab_get_json(const char *base, const char *path, long timeout_ms, long *code);

/* metadata.resourceVersion of a JSON object (list or object) as a number; 0 when absent. */
uint64_t lab_json_rv(const cJSON *obj);

/* The sum of the samples of metric <name> in <base>/metrics whose label text contains
 * <labels> (NULL or "" = every sample). -1 when /metrics is unreachable or has no sample. */
double lab_metric(const char *base, const char *name, const char *labels);

/* GET /_sim/stats field resources.<resource>.<field> (resource "configmaps", "pods", ...),
 * or the top-level <field> when <resource> is NULL. -1 when not available. */
double lab_sim_stat(const char *sim_base, const char *resource, const char *field);

/* ---- watch streams ------------------------------------------------------------------- */

enum lab_ev_type { LAB_EV_ADDED, LAB_EV_MODIFIED, LAB_EV_DELETED, LAB_EV_BOOKMARK, LAB_EV_ERROR };

struct lab_event {
    enum lab_ev_type type;
    uint64_t rv;       /* object.metadata.resourceVersion (0 for ERROR) */
    char name[128];    /* object.metadata.name */
    int code;          /* ERROR: the Status code (410, 504, ...) */
    char message[256]; /* ERROR: the Status message */
    uint64_t at_ms;    /* arrival, lab_now_ms clock */
};

struct lab_watch;

/* Opens GET <base><path> (path includes "?watch=1&..." as wanted) in its own thread; the
 * stream is cut after <timeout_ms> at the latest. NULL when out of memory. */
struct lab_watch *lab_watch_open(const char *base, const char *path, long timeout_ms);
/*
 * Waits up to <timeout_ms> for the next event. Returns 1 and fills <ev>; 0 when the stream
 * ended and every event was read; -1 on timeout (the stream still open).
 */
int lab_watch_next(struct lab_watch *w, struct lab_event *ev, long timeout_ms);
/* HTTP status once known (0 before). */
long lab_watch_status(struct lab_watch *w);
/* Ends the stream, joins its thread, frees. NULL-safe. */
void lab_watch_close(struct lab_watch *w);

/* ---- the writer ---------------------------------------------------------------------- */

/* One write the writer made: the RV the server gave it. */
struct lab_write {
    uint64_t rv;
    uint64_t at_ms;
    char name[32];
};

struct lab_writer;

/*
 * Starts a thread that makes <rate> writes per second (paced, 1..100000) of configmaps
 * lab-w-0..lab-w-<objects-1> in lab_ns(): creates each once, then updates them in turn
 * (PUT). Every write is logged (up to 4 million; the log is reserved once and never moves, so
 * a pointer from lab_writer_log stays valid while the writer runs). The namespace must exist.
 * NULL on error.
 */
struct lab_writer *lab_writer_start(struct lab *lab, const char *base, double rate, int objects);
/* Writes done so far, and the log (lent; entries [0, n) stay valid until lab_writer_free). */
size_t lab_writer_count(struct lab_writer *w);
const struct lab_write *lab_writer_log(struct lab_writer *w, size_t *n);
/* Writes that failed (no 2xx). */
size_t lab_writer_errors(struct lab_writer *w);
/* Stops the thread (bounded) and keeps the log readable. */
void lab_writer_stop(struct lab_writer *w);
void lab_writer_free(struct lab_writer *w);

/* One write of configmap <name> in lab_ns(): "POST" creates it, "PUT" replaces it (data.seq =
 * <seq>), "DELETE" deletes it. Returns the RV the server answered (1 for a DELETE answered
 * without one), 0 on failure. */
uint64_t lab_write(struct lab *lab, const char *base, const char *method, const char *name,
                   uint64_t seq);

/* Makes <n> writes now, as fast as the server answers (same objects and log format as the
 * writer, objects "lab-b-<i % objects>"). Returns the writes that succeeded; *last_rv gets the
 * last RV (if not NULL). */
size_t lab_write_burst(struct lab *lab, const char *base, size_t n, int objects, uint64_t *last_rv);

#endif

/* ---- informers (lab/informer.c) ------------------------------------------------------- */

/* What an informer did so far. */
struct lab_inf_stats {
    size_t lists, lists_ok; /* LISTs sent, and answered 200 with an RV */
    uint64_t list_bytes;    /* bytes of the LIST bodies */
    size_t watches;         /* WATCH requests sent */
    size_t watch_ends;      /* streams that ended cleanly (re-watched from the last RV) */
    size_t gone;            /* 410s (ERROR events or refused watches): each one a relist */
    size_t errors;          /* other errors (also relisted) */
    size_t events;          /* ADDED/MODIFIED/DELETED */
    size_t bookmarks;       /* BOOKMARK events */
    uint64_t rv;            /* the highest RV seen (list, event or bookmark) */
    uint64_t last_list_ms;  /* lab_now_ms of the last successful LIST, 0 before */
};

struct lab_informer;

/*
 * Starts a list+watch client in its own thread on <base><path> (a collection path): LIST,
 * WATCH from its RV (with timeoutSeconds=<timeout_s> when > 0, allowWatchBookmarks when
 * <bookmarks>), re-watch from the last RV seen when a stream ends, LIST again after a 410 or
 * an error; <gap_ms> > 0: wait that long after each stream before the next request (a
 * client that is away a while). Never touches a struct lab. NULL when out of memory.
 */
struct lab_informer *lab_informer_start(const char *base, const char *path, int timeout_s,
                                        bool bookmarks, long gap_ms);
void lab_informer_stats(struct lab_informer *inf, struct lab_inf_stats *out);
/* Stops (the current request ends within about a second) and frees. NULL-safe. */
void lab_informer_free(struct lab_informer *inf);
