/*
 * proc.h - run one child binary (kwp sim, kwp proxy, ...) for an integration test.
 *
 * proc_spawn() forks and execs argv with stdin on /dev/null, stdout on a pipe and stderr
 * appended to <dir>/stderr.log in a fresh mkdtemp() directory. It reads stdout until the
 * line "listening on http://HOST:PORT" (5 s deadline) and hands back that URL; after that a
 * drain thread copies the rest of stdout to <dir>/stdout.log so the child never blocks on a
 * full pipe. Readiness is that line, never a sleep.
 *
 * The child gets this process's environment, plus KWP_SHUTDOWN_DELAY=0 unless it is set (a
 * proxy a test stops exits at once; a test of the delay passes --shutdown-delay).
 *
 * Only the spawned child is ever signalled, by its PID. The child gets PR_SET_PDEATHSIG
 * (SIGKILL) so a test process that dies on a failed assertion cannot leak a server, and an
 * atexit hook kills any child still running and prints where its log is.
 *
 * Threads: a struct proc belongs to the test thread that spawned it; the drain thread only
 * touches the stdout pipe and log file.
 */
#ifndef KWP_SUPPORT_PROC_H
#define KWP_SUPPORT_PROC_H

#include <stdbool.h>
#include <stddef.h>

struct proc;

/* Deadline for the "listening on" line and for proc_stop's graceful phase. */
#define PROC_READY_TIMEOUT_MS 5000
#define PROC_STOP_TIMEOUT_MS 5000

/*
 * Returns the kwp binary to test: $KWP_BIN (set by CTest), else "build/kwp". Lent pointer.
 */
const char *proc_kwp_bin(void);

/*
 * Spawns argv[0] (a path, not searched in PATH) with argv, NULL-terminated.
 * On success copies "http://HOST:PORT" (NUL-terminated) into <url_out> (capacity
 * <url_cap>) and returns a new struct proc the caller owns (release with proc_stop).
 * On failure (exec error, early exit, 5 s without the line, URL longer than url_cap)
 * prints the reason and the child's stderr log to stderr, reaps the child and returns NULL.
 */
struct proc *proc_spawn(const char *const argv[], char *url_out, size_t url_cap);

/*
 * proc_spawn of `kwp <cmd> --listen 127.0.0.1:0 <a...> <b...>` (<a> and <b> NULL-terminated
 * lists, either may be NULL; at most PROC_KWP_ARGS_MAX arguments in all). Same contract.
 */
#define PROC_KWP_ARGS_MAX 60
struct proc *proc_spawn_kwp(const char *cmd, const char *const *a, const char *const *b,
                            char *url_out, size_t url_cap);

/*
 * Sends SIGTERM, waits up to 5 s, then SIGKILL. Frees <p> and returns the exit status:
 * the exit code when the child exited, 128 + signal number when a signal ended it
 * (137 after the SIGKILL fallback), -1 on a wait error. Tests assert 0. On a non-zero
 * status the log directory is kept and its path and stderr tail are printed; on 0 it
 * is removed. proc_stop(NULL) returns 0.
 */
int proc_stop(struct proc *p);

/*
 * Waits up to <timeout_ms> for the child to exit by itself (it is not signalled). On exit it
 * frees <p> and returns the exit status as proc_stop does (logs kept unless 0); on timeout it
 * returns -ETIMEDOUT and <p> stays the caller's (proc_stop it).
 */
int proc_wait(struct proc *p, int timeout_ms);

/* Sends <sig> (e.g. SIGSTOP / SIGCONT to freeze an upstream) to the child only.
 * Returns 0 or -errno (-ESRCH when it is already reaped). */
int proc_kill(struct proc *p, int sig);

/* The child's PID. */
int proc_pid(const struct proc *p);

/* Path of the child's stderr log (lent; valid until proc_stop). */
const char *proc_log_path(const struct proc *p);

/* Path of the child's stdout log: what it printed after the "listening on" line (lent;
 * valid until proc_stop; written by the drain thread, so poll for a line you expect). */
const char *proc_stdout_path(const struct proc *p);

/* Whether the child's stderr log (its last 16 MiB) holds <needle>. */
bool proc_log_has(const struct proc *p, const char *needle);

/* Prints the last <max_bytes> bytes of the child's stderr log to stderr, with its path. */
void proc_dump_log(const struct proc *p, size_t max_bytes);

#endif
