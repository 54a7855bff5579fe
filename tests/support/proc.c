/*
 * proc.c - spawn, wait for readiness, and stop one child server per test.
 *
 * Owns: the child's PID, its stdout pipe, its log directory and a drain thread.
 * Readiness is the "listening on http://HOST:PORT" line on stdout (never a sleep);
 * stopping is TERM, a bounded wait on a pidfd, then KILL. Nothing but the child's own PID
 * is ever signalled. A registry of live children (one mutex) lets an atexit hook kill
 * leftovers when a failed assertion ends the test process early.
 */
#define _GNU_SOURCE /* pipe2 */
#include "tests/support/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROC_LINE_MAX 4096
#define PROC_DIR_MAX 1024
#define PROC_LISTEN_PREFIX "listening on "

struct proc {
    pid_t pid;      /* child, > 0 until reaped */
    int out_fd;     /* read end of the child's stdout pipe */
    int out_log_fd; /* <dir>/stdout.log, written by the drain thread */
    int stop_efd;   /* eventfd that tells the drain thread to finish */
    bool drain_started;
    pthread_t drain;
    char dir[PROC_DIR_MAX];          /* mkdtemp directory holding both logs */
    char err_log[PROC_DIR_MAX + 16]; /* <dir>/stderr.log */
    char out_log[PROC_DIR_MAX + 16]; /* <dir>/stdout.log */
    struct proc *next;               /* registry link, under registry_lock */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct proc *registry; /* live children of this process, under registry_lock */
static pid_t registry_owner;  /* getpid() of the process that owns the registry */
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void proc_free(struct proc *p, bool keep);

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *proc_kwp_bin(void)
{
    const char *bin = getenv("KWP_BIN");

    return (bin && *bin) ? bin : "build/kwp";
}

int proc_pid(const struct proc *p)
{
    return p ? (int)p->pid : -1;
}

const char *proc_log_path(const struct proc *p)
{
    return p ? p->err_log : "";
}

const char *proc_stdout_path(const struct proc *p)
{
    return p ? p->out_log : "";
}

bool proc_log_has(const struct proc *p, const char *needle)
{
    enum { CAP = 16 << 20 };
    struct stat st;
    char *buf;
    ssize_t n;
    bool found;
    int fd;

    fd = p ? open(p->err_log, O_RDONLY | O_CLOEXEC) : -1;
    if (fd == -1 || fstat(fd, &st) != 0) {
        if (fd != -1) {
            close(fd);
        }
        return false;
    }
    /* the last CAP bytes at most: a test's log is far smaller */
    if (st.st_size > CAP) {
        (void)lseek(fd, st.st_size - CAP, SEEK_SET);
    }
    buf = malloc(CAP + 1);
    n = buf ? read(fd, buf, CAP) : -1;
    close(fd);
    found = n > 0 && (buf[n] = '\0', memmem(buf, (size_t)n, needle, strlen(needle)) != NULL);
    free(buf);
    return found;
}

void proc_dump_log(const struct proc *p, size_t max_bytes)
{
    char buf[4096];
    struct stat st;
    off_t start = 0;
    ssize_t n;
    int fd;

    if (!p) {
        return;
    }
    fprintf(stderr, "---- %s (pid %d) ----\n", p->err_log, (int)p->pid);
    fd = open(p->err_log, O_RDONLY | O_CLOEXEC);
    if (fd == -1) {
        fprintf(stderr, "(cannot open: %s)\n", strerror(errno));
        return;
    }
    if (fstat(fd, &st) == 0 && (size_t)st.st_size > max_bytes) {
        start = st.st_size - (off_t)max_bytes;
        fprintf(stderr, "(last %zu bytes)\n", max_bytes);
    }
    if (lseek(fd, start, SEEK_SET) == -1) {
        start = 0;
    }
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        fwrite(buf, 1, (size_t)n, stderr);
    }
    close(fd);
    fprintf(stderr, "\n---- end of %s ----\n", p->err_log);
}

static void registry_remove(struct proc *p)
{
    struct proc **pp;

    pthread_mutex_lock(&registry_lock);
    for (pp = &registry; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    pthread_mutex_unlock(&registry_lock);
}

/* atexit: a test that failed an assertion never reached proc_stop. Kill only our children. */
static void registry_atexit(void)
{
    struct proc *p;

    if (getpid() != registry_owner) {
        return;
    }
    pthread_mutex_lock(&registry_lock);
    p = registry;
    registry = NULL;
    pthread_mutex_unlock(&registry_lock);
    while (p) {
        struct proc *next = p->next;

        if (p->pid > 0) {
            fprintf(stderr, "proc: pid %d still running at exit (test failed?); killing it\n",
                    (int)p->pid);
            kill(p->pid, SIGKILL);
            waitpid(p->pid, NULL, 0);
            p->pid = 0;
            proc_dump_log(p, 8192);
            fprintf(stderr, "proc: logs kept in %s\n", p->dir);
        }
        proc_free(p, true); /* the drain thread sees EOF now that the child is gone */
        p = next;
    }
}

static void registry_init(void)
{
    registry_owner = getpid();
    atexit(registry_atexit);
}

static void write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n == -1) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        buf += n;
        len -= (size_t)n;
    }
}

/* Copies the rest of the child's stdout to stdout.log until EOF or stop_efd fires. */
static void *drain_main(void *arg)
{
    struct proc *p = arg;
    char buf[4096];

    for (;;) {
        struct pollfd pfd[2] = {
            {.fd = p->out_fd, .events = POLLIN},
            {.fd = p->stop_efd, .events = POLLIN},
        };
        ssize_t n;

        if (poll(pfd, 2, -1) == -1) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            n = read(p->out_fd, buf, sizeof(buf));
            if (n > 0) {
                write_all(p->out_log_fd, buf, (size_t)n);
                continue;
            }
            if (n == -1 && errno == EINTR) {
                continue;
            }
            break; /* EOF or error */
        }
        if (pfd[1].revents) {
            break;
        }
    }
    return NULL;
}

static void rm_logs(struct proc *p)
{
    unlink(p->err_log);
    unlink(p->out_log);
    rmdir(p->dir);
}

/* Stops the drain thread, closes everything and frees <p>; removes the logs unless <keep>. */
static void proc_free(struct proc *p, bool keep)
{
    if (p->drain_started) {
        uint64_t one = 1;

        if (write(p->stop_efd, &one, sizeof(one)) == -1) {
            /* the drain thread also ends on EOF, which a reaped child guarantees */
        }
        pthread_join(p->drain, NULL);
    }
    if (p->out_fd != -1) {
        close(p->out_fd);
    }
    if (p->out_log_fd != -1) {
        close(p->out_log_fd);
    }
    if (p->stop_efd != -1) {
        close(p->stop_efd);
    }
    if (!keep) {
        rm_logs(p);
    }
    free(p);
}

/*
 * Waits up to <timeout_ms> for the child to exit. Returns the raw wait status (>= 0), or
 * -ETIMEDOUT, or -errno. Uses a pidfd so the wait is an event, not a polling loop; falls
 * back to short WNOHANG polls only where pidfd_open is unavailable.
 */
static int wait_child(pid_t pid, int timeout_ms)
{
    uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
    int status = 0;
    int pidfd = -1;
    pid_t r;

#ifdef SYS_pidfd_open
    pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
    for (;;) {
        uint64_t now;

        r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
            break;
        }
        if (r == -1 && errno != EINTR) {
            int err = errno;

            if (pidfd != -1) {
                close(pidfd);
            }
            return -err;
        }
        now = now_ms();
        if (now >= deadline) {
            if (pidfd != -1) {
                close(pidfd);
            }
            return -ETIMEDOUT;
        }
        if (pidfd != -1) {
            struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

            poll(&pfd, 1, (int)(deadline - now));
        } else {
            struct timespec ts = {0, 10 * 1000000L};

            nanosleep(&ts, NULL);
        }
    }
    if (pidfd != -1) {
        close(pidfd);
    }
    return status;
}

static int status_to_code(int status)
{
    if (status < 0) {
        return -1;
    }
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        return 128 + WTERMSIG(status);
    }
    return -1;
}

/*
 * The child's environment: this process's, plus KWP_SHUTDOWN_DELAY=0 unless it is set, so
 * that a kwp proxy a test stops exits at once (ctest sets it as well; a test of the delay
 * passes --shutdown-delay, which wins). A new array of lent strings (free the array only), or
 * NULL when out of memory. Built before fork: the child may not allocate.
 */
static char **child_env(void)
{
    static char delay0[] = "KWP_SHUTDOWN_DELAY=0";
    size_t n = 0;
    char **env;

    while (environ[n] != NULL) {
        n++;
    }
    env = calloc(n + 2, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    memcpy(env, environ, n * sizeof(*env));
    if (getenv("KWP_SHUTDOWN_DELAY") == NULL) {
        env[n] = delay0;
    }
    return env;
}

/* Child side of fork: only async-signal-safe calls until execve. */
static void child_exec(const char *const argv[], char *const envp[], pid_t parent, int in_fd,
                       int out_fd, int err_fd)
{
    static const char msg[] = "proc: execve failed\n";
    sigset_t all;
    int sig;

    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent) {
        _exit(127);
    }
    if (dup2(in_fd, 0) == -1 || dup2(out_fd, 1) == -1 || dup2(err_fd, 2) == -1) {
        _exit(127);
    }
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 0u) == -1)
#endif
    {
        int fd;

        for (fd = 3; fd < 4096; fd++) {
            close(fd);
        }
    }
    for (sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP) {
            signal(sig, SIG_DFL);
        }
    }
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    execve(argv[0], (char *const *)argv, envp);
    if (write(2, msg, sizeof(msg) - 1) == -1) {
        /* nothing left to report to */
    }
    _exit(127);
}

/*
 * Reads stdout lines until the listen line, EOF or the deadline. Copies every byte read to
 * the stdout log. Returns 0 with <url_out> set, -ETIMEDOUT, -EPIPE (EOF), -ENOSPC.
 */
static int read_listen_line(struct proc *p, char *url_out, size_t url_cap)
{
    uint64_t deadline = now_ms() + PROC_READY_TIMEOUT_MS;
    char line[PROC_LINE_MAX];
    size_t len = 0;

    for (;;) {
        char buf[1024];
        struct pollfd pfd = {.fd = p->out_fd, .events = POLLIN};
        uint64_t now = now_ms();
        ssize_t n;
        ssize_t i;
        int pr;

        if (now >= deadline) {
            return -ETIMEDOUT;
        }
        pr = poll(&pfd, 1, (int)(deadline - now));
        if (pr == -1 && errno == EINTR) {
            continue;
        }
        if (pr <= 0) {
            continue; /* the deadline check above ends the loop */
        }
        n = read(p->out_fd, buf, sizeof(buf));
        if (n == -1 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -EPIPE;
        }
        for (i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof(line) - 1) {
                    line[len++] = buf[i];
                }
                continue;
            }
            line[len] = '\0';
            write_all(p->out_log_fd, line, len);
            write_all(p->out_log_fd, "\n", 1);
            if (strncmp(line, PROC_LISTEN_PREFIX, strlen(PROC_LISTEN_PREFIX)) == 0) {
                const char *u = line + strlen(PROC_LISTEN_PREFIX);
                size_t ulen = strlen(u);

                while (ulen > 0 && (u[ulen - 1] == '\r' || u[ulen - 1] == ' ')) {
                    ulen--;
                }
                if (ulen + 1 > url_cap) {
                    return -ENOSPC;
                }
                memcpy(url_out, u, ulen);
                url_out[ulen] = '\0';
                /* what followed the line in this read belongs to the log */
                write_all(p->out_log_fd, buf + i + 1, (size_t)(n - i - 1));
                return 0;
            }
            len = 0;
        }
    }
}

struct proc *proc_spawn(const char *const argv[], char *url_out, size_t url_cap)
{
    const char *tmp = getenv("TMPDIR");
    struct proc *p = NULL;
    int pipefd[2] = {-1, -1};
    int err_fd = -1;
    int null_fd = -1;
    pid_t parent = getpid();
    char **envp;
    int rc;

    pthread_once(&registry_once, registry_init);
    if (!argv || !argv[0] || !url_out || url_cap == 0) {
        fprintf(stderr, "proc_spawn: bad arguments\n");
        return NULL;
    }
    url_out[0] = '\0';
    p = calloc(1, sizeof(*p));
    if (!p) {
        return NULL;
    }
    p->out_fd = -1;
    p->out_log_fd = -1;
    p->stop_efd = -1;
    snprintf(p->dir, sizeof(p->dir), "%s/kwp-proc-XXXXXX", (tmp && *tmp) ? tmp : "/tmp");
    if (!mkdtemp(p->dir)) {
        fprintf(stderr, "proc_spawn: mkdtemp %s: %s\n", p->dir, strerror(errno));
        free(p);
        return NULL;
    }
    snprintf(p->err_log, sizeof(p->err_log), "%s/stderr.log", p->dir);
    snprintf(p->out_log, sizeof(p->out_log), "%s/stdout.log", p->dir);
    err_fd = open(p->err_log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    p->out_log_fd = open(p->out_log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    p->stop_efd = eventfd(0, EFD_CLOEXEC);
    if (err_fd == -1 || p->out_log_fd == -1 || null_fd == -1 || p->stop_efd == -1 ||
        pipe2(pipefd, O_CLOEXEC) == -1) {
        fprintf(stderr, "proc_spawn: setup: %s\n", strerror(errno));
        goto fail;
    }
    envp = child_env();
    if (envp == NULL) {
        fprintf(stderr, "proc_spawn: out of memory\n");
        goto fail;
    }
    p->pid = fork();
    if (p->pid == -1) {
        fprintf(stderr, "proc_spawn: fork: %s\n", strerror(errno));
        p->pid = 0;
        free(envp);
        goto fail;
    }
    if (p->pid == 0) {
        child_exec(argv, envp, parent, null_fd, pipefd[1], err_fd);
    }
    free(envp);
    close(pipefd[1]);
    pipefd[1] = -1;
    close(err_fd);
    err_fd = -1;
    close(null_fd);
    null_fd = -1;
    p->out_fd = pipefd[0];
    pipefd[0] = -1;

    pthread_mutex_lock(&registry_lock);
    p->next = registry;
    registry = p;
    pthread_mutex_unlock(&registry_lock);

    rc = read_listen_line(p, url_out, url_cap);
    if (rc != 0) {
        int st;

        fprintf(stderr, "proc_spawn: %s: no \"%s\" line: %s\n", argv[0], PROC_LISTEN_PREFIX,
                rc == -ETIMEDOUT ? "timed out after 5 s"
                : rc == -ENOSPC  ? "URL too long"
                                 : "stdout closed (child exited?)");
        kill(p->pid, SIGKILL);
        st = wait_child(p->pid, PROC_STOP_TIMEOUT_MS);
        fprintf(stderr, "proc_spawn: child exit status %d\n", status_to_code(st));
        p->pid = 0;
        registry_remove(p);
        proc_dump_log(p, 8192);
        fprintf(stderr, "proc_spawn: logs kept in %s\n", p->dir);
        proc_free(p, true);
        return NULL;
    }
    if (pthread_create(&p->drain, NULL, drain_main, p) == 0) {
        p->drain_started = true;
    }
    return p;

fail:
    if (pipefd[0] != -1) {
        close(pipefd[0]);
    }
    if (pipefd[1] != -1) {
        close(pipefd[1]);
    }
    if (err_fd != -1) {
        close(err_fd);
    }
    if (null_fd != -1) {
        close(null_fd);
    }
    proc_free(p, false);
    return NULL;
}

int proc_kill(struct proc *p, int sig)
{
    if (!p || p->pid <= 0) {
        return -ESRCH;
    }
    if (kill(p->pid, sig) == -1) {
        return -errno;
    }
    return 0;
}

/* The child has been reaped with wait status <status>: frees <p>, returns the exit code. */
static int proc_reaped(struct proc *p, int status)
{
    int code = status_to_code(status);

    p->pid = 0;
    registry_remove(p);
    if (code != 0) {
        fprintf(stderr, "proc_stop: exit status %d (0 expected)\n", code);
        proc_dump_log(p, 8192);
        fprintf(stderr, "proc_stop: logs kept in %s\n", p->dir);
    }
    proc_free(p, code != 0);
    return code;
}

int proc_stop(struct proc *p)
{
    int status;

    if (!p) {
        return 0;
    }
    /* A frozen child cannot act on TERM; thaw it first (harmless otherwise). */
    kill(p->pid, SIGCONT);
    kill(p->pid, SIGTERM);
    status = wait_child(p->pid, PROC_STOP_TIMEOUT_MS);
    if (status == -ETIMEDOUT) {
        fprintf(stderr, "proc_stop: pid %d ignored SIGTERM for %d ms; sending SIGKILL\n",
                (int)p->pid, PROC_STOP_TIMEOUT_MS);
        kill(p->pid, SIGKILL);
        status = wait_child(p->pid, PROC_STOP_TIMEOUT_MS);
    }
    return proc_reaped(p, status);
}

int proc_wait(struct proc *p, int timeout_ms)
{
    int status = wait_child(p->pid, timeout_ms);

    if (status == -ETIMEDOUT) {
        return -ETIMEDOUT;
    }
    return proc_reaped(p, status);
}

struct proc *proc_spawn_kwp(const char *cmd, const char *const *a, const char *const *b,
                            char *url_out, size_t url_cap)
{
    const char *argv[PROC_KWP_ARGS_MAX + 5];
    const char *const *lists[2] = {a, b};
    size_t n = 0;

    argv[n++] = proc_kwp_bin();
    argv[n++] = cmd;
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1:0";
    for (size_t l = 0; l < 2; l++) {
        for (size_t i = 0; lists[l] && lists[l][i]; i++) {
            if (n >= PROC_KWP_ARGS_MAX + 4) {
                fprintf(stderr, "proc_spawn_kwp: more than %d arguments\n", PROC_KWP_ARGS_MAX);
                return NULL;
            }
            argv[n++] = lists[l][i];
        }
    }
    argv[n] = NULL;
    return proc_spawn(argv, url_out, url_cap);
}
