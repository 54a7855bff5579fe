/*
 * lab.c - `kwp lab list` / `kwp lab run NAME [flags]`: the registry, the run context's life
 * (temporary directory, namespace, children, results), tables, the conclusion, plots and the
 * progress line.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/lab_int.h"

/* The experiments, in the order a person meets the problem (docs/410.md). */
static const struct lab_experiment *const experiments[] = {
    &lab_exp_too_old,   &lab_exp_too_large, &lab_exp_rv_semantics, &lab_exp_window,
    &lab_exp_bookmarks, &lab_exp_timeouts,  &lab_exp_relist_storm, &lab_exp_compaction,
};
#define N_EXPERIMENTS (sizeof(experiments) / sizeof(experiments[0]))

#define TABLE_CELLS_MAX 100000
#define PLOT_TIMEOUT_MS 60000

/* ---- small things -------------------------------------------------------------------- */

uint64_t lab_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void lab_sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

const struct lab_opts *lab_opts(const struct lab *lab)
{
    return &lab->opts;
}

const struct lab_experiment *lab_experiment(const struct lab *lab)
{
    return lab->exp;
}

cJSON *lab_results(struct lab *lab)
{
    return lab->results;
}

const char *lab_ns(const struct lab *lab)
{
    return lab->ns;
}

static void clear_progress(struct lab *lab)
{
    if (lab->progress_on) {
        fputs("\r\033[K", stderr);
        lab->progress_on = false;
    }
}

/* Where a message goes: printed with <prefix> on <f>, and into results: appended to the array
 * <key> (notes) or set as the string <key> (the last one wins). */
enum say_to { SAY_SET, SAY_APPEND };

static void say(struct lab *lab, FILE *f, const char *prefix, enum say_to to, const char *key,
                const char *fmt, va_list ap)
{
    char msg[4096];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    clear_progress(lab);
    fprintf(f, "%s%s\n", prefix, msg);
    fflush(f);
    if (to == SAY_APPEND) {
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(lab->results, key),
                             cJSON_CreateString(msg));
        return;
    }
    cJSON_DeleteItemFromObject(lab->results, key);
    cJSON_AddStringToObject(lab->results, key, msg);
}

int lab_fail(struct lab *lab, const char *fmt, ...)
{
    char prefix[64];
    va_list ap;

    snprintf(prefix, sizeof(prefix), "kwp lab %s: ", lab->exp ? lab->exp->name : "");
    va_start(ap, fmt);
    say(lab, stderr, prefix, SAY_SET, "error", fmt, ap);
    va_end(ap);
    return -1;
}

void lab_note(struct lab *lab, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say(lab, stdout, "", SAY_APPEND, "notes", fmt, ap);
    va_end(ap);
}

void lab_conclude(struct lab *lab, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say(lab, stdout, "conclusion: ", SAY_SET, "conclusion", fmt, ap);
    va_end(ap);
}

void lab_progress(struct lab *lab, const char *fmt, ...)
{
    char msg[256];
    va_list ap;

    if (!lab->tty) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "\r\033[K[%5.1fs] %s", (double)(lab_now_ms() - lab->start_ms) / 1000.0, msg);
    fflush(stderr);
    lab->progress_on = true;
}

void lab_progress_done(struct lab *lab)
{
    clear_progress(lab);
}

/* ---- tables -------------------------------------------------------------------------- */

struct lab_table {
    struct lab *lab;
    char key[64];
    char title[256];
    char **cols;
    size_t ncols;
    char **cells;
    size_t n, cap;
};

struct lab_table *lab_table_new(struct lab *lab, const char *key, const char *title,
                                const char *const *cols, size_t ncols)
{
    struct lab_table *t = calloc(1, sizeof(*t));

    if (!t || !(t->cols = calloc(ncols ? ncols : 1, sizeof(char *)))) {
        free(t);
        return NULL;
    }
    t->lab = lab;
    snprintf(t->key, sizeof(t->key), "%s", key);
    snprintf(t->title, sizeof(t->title), "%s", title);
    t->ncols = ncols;
    for (size_t i = 0; i < ncols; i++) {
        t->cols[i] = strdup(cols[i]);
    }
    return t;
}

void lab_table_cell(struct lab_table *t, const char *fmt, ...)
{
    char cell[256];
    va_list ap;

    if (!t || t->n >= TABLE_CELLS_MAX) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(cell, sizeof(cell), fmt, ap);
    va_end(ap);
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        char **c = realloc(t->cells, cap * sizeof(*c));

        if (!c) {
            return;
        }
        t->cells = c;
        t->cap = cap;
    }
    t->cells[t->n++] = strdup(cell);
}

/* A cell as JSON: a number when the whole text is one, else the string. */
static cJSON *cell_json(const char *s)
{
    char *end;
    double v;

    if (!s) {
        return cJSON_CreateNull();
    }
    errno = 0;
    v = strtod(s, &end);
    if (s[0] && end != s && *end == '\0' && errno == 0) {
        return cJSON_CreateNumber(v);
    }
    return cJSON_CreateString(s);
}

void lab_table_end(struct lab_table *t)
{
    size_t w[64] = {0};
    cJSON *tj, *cols, *rows, *row = NULL;

    if (!t) {
        return;
    }
    clear_progress(t->lab);
    for (size_t i = 0; i < t->ncols && i < 64; i++) {
        w[i] = t->cols[i] ? strlen(t->cols[i]) : 0;
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->ncols;
        size_t l = t->cells[i] ? strlen(t->cells[i]) : 0;

        if (c < 64 && l > w[c]) {
            w[c] = l;
        }
    }
    printf("\n%s\n", t->title);
    for (size_t i = 0; i < t->ncols; i++) {
        printf("  %-*s", i + 1 < t->ncols && i < 64 ? (int)w[i] : 0, t->cols[i] ? t->cols[i] : "");
    }
    printf("\n");
    tj = cJSON_CreateObject();
    cJSON_AddStringToObject(tj, "title", t->title);
    cols = cJSON_AddArrayToObject(tj, "columns");
    rows = cJSON_AddArrayToObject(tj, "rows");
    for (size_t i = 0; i < t->ncols; i++) {
        cJSON_AddItemToArray(cols, cJSON_CreateString(t->cols[i] ? t->cols[i] : ""));
    }
    for (size_t i = 0; i < t->n; i++) {
        size_t c = i % t->ncols;
        const char *s = t->cells[i] ? t->cells[i] : "";

        if (c == 0) {
            row = cJSON_CreateObject();
            cJSON_AddItemToArray(rows, row);
        }
        /* numbers right-aligned, text left-aligned */
        cJSON *v = cell_json(s);

        printf(cJSON_IsNumber(v) ? "  %*s" : "  %-*s", c + 1 < t->ncols && c < 64 ? (int)w[c] : 0,
               s);
        if (c == t->ncols - 1 || i == t->n - 1) {
            printf("\n");
        }
        cJSON_AddItemToObject(row, t->cols[c] ? t->cols[c] : "", v);
    }
    printf("\n");
    fflush(stdout);
    cJSON_DeleteItemFromObject(t->lab->tables, t->key);
    cJSON_AddItemToObject(t->lab->tables, t->key, tj);
    for (size_t i = 0; i < t->ncols; i++) {
        free(t->cols[i]);
    }
    for (size_t i = 0; i < t->n; i++) {
        free(t->cells[i]);
    }
    free(t->cols);
    free(t->cells);
    free(t);
}

/* ---- plots --------------------------------------------------------------------------- */

static int write_file(const char *path, const char *a, const char *b)
{
    FILE *f = fopen(path, "w");
    int rc = 0;

    if (!f) {
        return -1;
    }
    if ((a && fputs(a, f) == EOF) || (b && fputs(b, f) == EOF)) {
        rc = -1;
    }
    if (fclose(f) != 0) {
        rc = -1;
    }
    return rc;
}

/* <script> with each $DAT replaced by '<dat>'. Caller frees. */
static char *expand_dat(const char *script, const char *dat)
{
    size_t n = 0, dl = strlen(dat) + 2, cap;
    char *out, *o;

    for (const char *p = script; (p = strstr(p, "$DAT")); p += 4) {
        n++;
    }
    cap = strlen(script) + n * dl + 1;
    out = malloc(cap);
    if (!out) {
        return NULL;
    }
    o = out;
    for (const char *p = script; *p;) {
        if (strncmp(p, "$DAT", 4) == 0) {
            o += snprintf(o, cap - (size_t)(o - out), "'%s'", dat);
            p += 4;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* Runs gnuplot <gp> with a bounded wait; its exit status, 127 when it is not installed. */
static int run_gnuplot(const char *gp, const char *log)
{
    uint64_t deadline = lab_now_ms() + PLOT_TIMEOUT_MS;
    int st;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == -1) {
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int null = open("/dev/null", O_RDWR);

        if (fd != -1 && null != -1) {
            (void)dup2(null, 0);
            (void)dup2(fd, 1);
            (void)dup2(fd, 2);
        }
        execlp("gnuplot", "gnuplot", gp, (char *)NULL);
        _exit(127);
    }
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);

        if (r == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        if (r == -1 || lab_now_ms() > deadline) {
            (void)kill(pid, SIGKILL);
            (void)waitpid(pid, &st, 0);
            return -1;
        }
        lab_sleep_ms(20);
    }
}

int lab_plot(struct lab *lab, const char *data, const char *script)
{
    char base[LAB_PATH_MAX], dat[LAB_PATH_MAX + 8], gp[LAB_PATH_MAX + 8], log[LAB_PATH_MAX + 8];
    char pre[LAB_PATH_MAX + 200];
    const char *png = lab->opts.plot;
    size_t bl;
    char *body;
    int rc;

    if (!png) {
        return 0;
    }
    bl = strlen(png);
    if (bl > 4 && strcmp(png + bl - 4, ".png") == 0) {
        bl -= 4;
    }
    snprintf(base, sizeof(base), "%.*s", (int)bl, png);
    snprintf(dat, sizeof(dat), "%s.dat", base);
    snprintf(gp, sizeof(gp), "%s.gp", base);
    snprintf(log, sizeof(log), "%s.log", base);
    snprintf(pre, sizeof(pre),
             "# kwp lab run %s: data in the .dat next to this file\n"
             "set terminal pngcairo size 1000,640 noenhanced\nset output '%s'\n",
             lab->exp->name, png);
    body = expand_dat(script, dat);
    if (!body || write_file(dat, data, NULL) != 0 || write_file(gp, pre, body) != 0) {
        free(body);
        lab_note(lab, "plot: cannot write %s / %s: %s", dat, gp, strerror(errno));
        return -1;
    }
    free(body);
    rc = run_gnuplot(gp, log);
    if (rc == 127) {
        lab_note(lab, "plot: gnuplot is not installed; skipped (data in %s, script in %s)", dat,
                 gp);
        return -1;
    }
    if (rc != 0) {
        lab_note(lab, "plot: gnuplot failed (status %d, see %s); data in %s, script in %s", rc, log,
                 dat, gp);
        return -1;
    }
    unlink(log);
    lab_note(lab, "plot: %s (data %s, script %s)", png, dat, gp);
    cJSON_AddStringToObject(lab->results, "plot", png);
    return 0;
}

/* ---- the command --------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: kwp lab list\n"
          "       kwp lab run NAME [--quick] [--json FILE] [--plot FILE.png] [--upstream URL]\n\n"
          "Experiments that reproduce and measure \"too old resource version\" (410) and \"Too\n"
          "large resource version\" (504), against an embedded simulator (or, with --upstream,\n"
          "a real apiserver: only the namespace kwp-lab-<pid> is read and written), with kwp\n"
          "proxy in between where the experiment is about the proxy (docs/410.md).\n\n"
          "  --quick          a short run (under 60 s)\n"
          "  --json FILE      write every measured figure to FILE\n"
          "  --plot FILE.png  draw the experiment's plot with gnuplot (FILE.dat, FILE.gp too)\n"
          "  --upstream URL   study that server instead of an embedded `kwp sim`\n",
          f);
}

static const struct lab_experiment *find(const char *name)
{
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        if (strcmp(experiments[i]->name, name) == 0) {
            return experiments[i];
        }
    }
    return NULL;
}

static int list(void)
{
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        printf("%-14s %s%s\n", experiments[i]->name, experiments[i]->summary,
               experiments[i]->needs == LAB_NEEDS_SIM ? " [simulator only]" : "");
    }
    return 0;
}

static int parse_run(int argc, char **argv, struct lab_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;

        if (strcmp(a, "--quick") == 0) {
            o->quick = true;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            dst = &o->json;
        } else if (strcmp(a, "--plot") == 0) {
            dst = &o->plot;
        } else if (strcmp(a, "--upstream") == 0) {
            dst = &o->upstream;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else {
            fprintf(stderr, "kwp lab run: unknown flag %s\n", a);
            return -1;
        }
        if (i + 1 >= argc || !argv[i + 1][0]) {
            fprintf(stderr, "kwp lab run: %s needs a value\n", a);
            return -1;
        }
        *dst = argv[++i];
    }
    return 0;
}

static void delete_ns(struct lab *lab)
{
    char path[128];
    struct lab_resp r;

    if (!lab->ns_server[0]) {
        return;
    }
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s", lab->ns);
    if (lab_http("DELETE", lab->ns_server, path, NULL, 10000, &r) != 0 ||
        (r.code != 200 && r.code != 202 && r.code != 404)) {
        fprintf(stderr, "kwp lab: deleting namespace %s: HTTP %ld\n", lab->ns, r.code);
    }
    lab_resp_free(&r);
}

static void remove_dir(const char *dir)
{
    char path[LAB_PATH_MAX + 300];
    FILE *p;

    /* the run's own files: the child logs */
    for (int i = 0; i < LAB_PROCS_MAX; i++) {
        snprintf(path, sizeof(path), "%s/sim-%d.log", dir, i);
        unlink(path);
        snprintf(path, sizeof(path), "%s/proxy-%d.log", dir, i);
        unlink(path);
    }
    if (rmdir(dir) != 0 && (p = stderr)) {
        fprintf(p, "kwp lab: logs kept in %s\n", dir);
    }
}

static int run(const struct lab_experiment *exp, const struct lab_opts *o)
{
    struct lab *lab = calloc(1, sizeof(*lab));
    const char *tmp = getenv("TMPDIR");
    int rc;

    if (!lab) {
        return 1;
    }
    lab->opts = *o;
    lab->exp = exp;
    lab->tty = isatty(2);
    lab->start_ms = lab_now_ms();
    snprintf(lab->ns, sizeof(lab->ns), "kwp-lab-%d", (int)getpid());
    snprintf(lab->dir, sizeof(lab->dir), "%s/kwp-lab-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    lab->results = cJSON_CreateObject();
    cJSON_AddStringToObject(lab->results, "experiment", exp->name);
    cJSON_AddBoolToObject(lab->results, "quick", o->quick);
    if (o->upstream) {
        cJSON_AddStringToObject(lab->results, "upstream", o->upstream);
    } else {
        cJSON_AddNullToObject(lab->results, "upstream");
    }
    lab->tables = cJSON_AddObjectToObject(lab->results, "tables");
    lab->notes = cJSON_AddArrayToObject(lab->results, "notes");
    if (!mkdtemp(lab->dir)) {
        fprintf(stderr, "kwp lab: mkdtemp %s: %s\n", lab->dir, strerror(errno));
        cJSON_Delete(lab->results);
        free(lab);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    printf("kwp lab run %s%s: %s\n", exp->name, o->quick ? " --quick" : "", exp->summary);
    if (o->upstream && exp->needs == LAB_NEEDS_SIM) {
        rc = lab_fail(lab, "needs the simulator's controls (/_sim/..., sim flags); run it without "
                           "--upstream");
    } else {
        rc = exp->run(lab);
        if (rc == 0 && o->plot && !cJSON_HasObjectItem(lab->results, "plot")) {
            lab_note(lab, "plot: %s draws no plot; %s not written", exp->name, o->plot);
        }
    }
    lab_progress_done(lab);
    delete_ns(lab);
    lab_procs_stop_all(lab);
    cJSON_AddNumberToObject(lab->results, "elapsedSeconds",
                            (double)(lab_now_ms() - lab->start_ms) / 1000.0);
    cJSON_AddNumberToObject(lab->results, "exitStatus", rc == 0 ? 0 : 1);
    if (o->json) {
        char *text = cJSON_Print(lab->results);

        if (!text || write_file(o->json, text, "\n") != 0) {
            fprintf(stderr, "kwp lab: cannot write %s: %s\n", o->json, strerror(errno));
            rc = -1;
        }
        free(text);
    }
    if (rc == 0 || lab->n_procs == 0) {
        remove_dir(lab->dir);
    } else {
        fprintf(stderr, "kwp lab: child logs in %s\n", lab->dir);
    }
    cJSON_Delete(lab->results);
    curl_global_cleanup();
    free(lab);
    return rc == 0 ? 0 : 1;
}

int lab_main(int argc, char **argv)
{
    const struct lab_experiment *exp;
    struct lab_opts o = {0};
    int rc;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "list") == 0) {
        return list();
    }
    if (strcmp(argv[1], "run") != 0) {
        fprintf(stderr, "kwp lab: unknown subcommand %s (list, run)\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    if (argc < 3 || argv[2][0] == '-') {
        fprintf(stderr, "kwp lab run: name an experiment (kwp lab list)\n");
        return 2;
    }
    exp = find(argv[2]);
    if (!exp) {
        fprintf(stderr, "kwp lab run: unknown experiment \"%s\"; the experiments are:\n", argv[2]);
        for (size_t i = 0; i < N_EXPERIMENTS; i++) {
            fprintf(stderr, "  %s\n", experiments[i]->name);
        }
        return 2;
    }
    rc = parse_run(argc - 3, argv + 3, &o);
    if (rc != 0) {
        return rc > 0 ? 0 : 2;
    }
    return run(exp, &o);
}
