/*
 * proc.c - the lab's child servers: `kwp sim` / `kwp proxy` started from /proc/self/exe on
 * 127.0.0.1:0, ready when their log holds "listening on URL", stopped by PID.
 *
 * The child's stdout and stderr go to one log file in the run's directory, so no pipe can
 * fill and block it; readiness is read back from that file (polled every 10 ms, 5 s at most).
 * Only children this process started are ever signalled, each by its own PID, and each gets
 * PR_SET_PDEATHSIG so a killed lab leaves no server behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/lab_int.h"

#define PROC_ARGS_MAX 64
#define PROC_READY_MS 5000
#define PROC_STOP_MS 5000
#define PROC_LISTEN "listening on "

const char *lab_proc_url(const struct lab_proc *p)
{
    return p ? p->url : "";
}

int lab_proc_pid(const struct lab_proc *p)
{
    return p ? (int)p->pid : -1;
}

int lab_proc_signal(struct lab_proc *p, int sig)
{
    if (!p || p->pid <= 0) {
        return -ESRCH;
    }
    return kill(p->pid, sig) == 0 ? 0 : -errno;
}

/* Reads the "listening on URL" line from the log; 1 when found (url filled), 0 not yet. */
static int read_url(const struct lab_proc *p, char *url, size_t cap)
{
    char buf[8192];
    ssize_t n;
    char *at, *end;
    int fd = open(p->log, O_RDONLY | O_CLOEXEC);

    if (fd == -1) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    at = strstr(buf, PROC_LISTEN);
    if (!at || !(end = strchr(at, '\n'))) {
        return 0;
    }
    at += strlen(PROC_LISTEN);
    if ((size_t)(end - at) >= cap) {
        return 0;
    }
    memcpy(url, at, (size_t)(end - at));
    url[end - at] = '\0';
    return 1;
}

static void log_tail(struct lab *lab, const struct lab_proc *p)
{
    char buf[2048];
    ssize_t n = 0;
    int fd = open(p->log, O_RDONLY | O_CLOEXEC);

    if (fd != -1) {
        off_t size = lseek(fd, 0, SEEK_END);

        (void)lseek(fd, size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0,
                    SEEK_SET);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
    }
    buf[n > 0 ? n : 0] = '\0';
    lab_note(lab, "kwp %s (log %s):\n%s", p->cmd, p->log, buf);
}

/* Waits up to <ms> for <p> to exit; true when reaped (status kept). */
static bool reap(struct lab_proc *p, uint64_t ms)
{
    uint64_t deadline = lab_now_ms() + ms;

    for (;;) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);

        if (r == p->pid || (r == -1 && errno == ECHILD)) {
            p->status = r == p->pid ? (WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)) : -1;
            p->pid = 0;
            return true;
        }
        if (lab_now_ms() >= deadline) {
            return false;
        }
        lab_sleep_ms(10);
    }
}

struct lab_proc *lab_spawn(struct lab *lab, const char *cmd, const char *const *args)
{
    const char *argv[PROC_ARGS_MAX + 1];
    struct lab_proc *p;
    size_t n = 0;
    pid_t parent = getpid();
    uint64_t deadline;
    int fd;

    if (lab->n_procs >= LAB_PROCS_MAX) {
        lab_note(lab, "lab: more than %d children", LAB_PROCS_MAX);
        return NULL;
    }
    p = &lab->procs[lab->n_procs];
    memset(p, 0, sizeof(*p));
    snprintf(p->cmd, sizeof(p->cmd), "%s", cmd);
    snprintf(p->log, sizeof(p->log), "%s/%s-%zu.log", lab->dir, cmd, lab->n_procs);
    argv[n++] = "kwp";
    argv[n++] = cmd;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    for (size_t i = 0; args && args[i]; i++) {
        if (n >= PROC_ARGS_MAX) {
            lab_note(lab, "lab: too many arguments for kwp %s", cmd);
            return NULL;
        }
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd == -1) {
        lab_note(lab, "lab: %s: %s", p->log, strerror(errno));
        return NULL;
    }
    fflush(stdout);
    fflush(stderr);
    p->pid = fork();
    if (p->pid == -1) {
        lab_note(lab, "lab: fork: %s", strerror(errno));
        close(fd);
        return NULL;
    }
    if (p->pid == 0) {
        int null = open("/dev/null", O_RDONLY);

        if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent) {
            _exit(127);
        }
        if (null == -1 || dup2(null, 0) == -1 || dup2(fd, 1) == -1 || dup2(fd, 2) == -1) {
            _exit(127);
        }
        setenv("KWP_SHUTDOWN_DELAY", "0", 0);
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    close(fd);
    lab->n_procs++;
    deadline = lab_now_ms() + PROC_READY_MS;
    while (!read_url(p, p->url, sizeof(p->url))) {
        if (reap(p, 0) || lab_now_ms() >= deadline) {
            lab_note(lab, "lab: kwp %s did not start (no \"listening on\" line)", cmd);
            log_tail(lab, p);
            lab_proc_stop(p);
            return NULL;
        }
        lab_sleep_ms(10);
    }
    return p;
}

int lab_proc_stop(struct lab_proc *p)
{
    if (!p) {
        return 0;
    }
    if (p->stopped) {
        return p->status;
    }
    p->stopped = true;
    if (p->pid > 0) {
        (void)kill(p->pid, SIGCONT);
        (void)kill(p->pid, SIGTERM);
        if (!reap(p, PROC_STOP_MS)) {
            (void)kill(p->pid, SIGKILL);
            (void)reap(p, PROC_STOP_MS);
        }
    }
    return p->status;
}

void lab_procs_stop_all(struct lab *lab)
{
    for (size_t i = 0; i < lab->n_procs; i++) {
        lab_proc_stop(&lab->procs[i]);
    }
}

const char *lab_server(struct lab *lab, const char *const *sim_args, struct lab_proc **sim)
{
    const char *args[PROC_ARGS_MAX];
    bool objects = false, churn = false;
    struct lab_proc *p;
    size_t n = 0;

    if (sim) {
        *sim = NULL;
    }
    if (lab->opts.upstream) {
        return lab->opts.upstream;
    }
    for (size_t i = 0; sim_args && sim_args[i] && n < PROC_ARGS_MAX - 5; i++) {
        objects = objects || strncmp(sim_args[i], "--objects", 9) == 0;
        churn = churn || strncmp(sim_args[i], "--churn", 7) == 0;
        args[n++] = sim_args[i];
    }
    if (!objects) {
        args[n++] = "--objects";
        args[n++] = "0";
    }
    if (!churn) {
        args[n++] = "--churn";
        args[n++] = "0";
    }
    args[n] = NULL;
    p = lab_spawn(lab, "sim", args);
    if (!p) {
        lab_fail(lab, "the simulator did not start");
        return NULL;
    }
    if (sim) {
        *sim = p;
    }
    return p->url;
}

struct lab_proc *lab_proxy(struct lab *lab, const char *upstream, const char *const *args)
{
    const char *argv[PROC_ARGS_MAX];
    bool auth = false, resources = false, delay = false;
    size_t n = 0;

    argv[n++] = "--upstream";
    argv[n++] = upstream;
    for (size_t i = 0; args && args[i] && n < PROC_ARGS_MAX - 7; i++) {
        auth = auth || strncmp(args[i], "--auth", 6) == 0;
        resources = resources || strncmp(args[i], "--resources", 11) == 0;
        delay = delay || strncmp(args[i], "--shutdown-delay", 16) == 0;
        argv[n++] = args[i];
    }
    if (!auth) {
        argv[n++] = "--auth";
        argv[n++] = "none";
    }
    if (!resources) {
        argv[n++] = "--resources";
        argv[n++] = "configmaps";
    }
    if (!delay) {
        argv[n++] = "--shutdown-delay";
        argv[n++] = "0";
    }
    argv[n] = NULL;
    return lab_spawn(lab, "proxy", argv);
}
