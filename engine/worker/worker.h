/* worker.h — the GPU worker process: the parent's handle on it (spawn, call with a watchdog, restart, stop) and
 * the worker's own request loop. The messages are protocol.h's; pool.h runs one worker per GPU.
 *
 * Why a process: a candidate can fault (an illegal address poisons the CUDA context of the whole process) or
 * hang. The parent never initializes CUDA; each worker owns one GPU and may die without taking evo with it.
 *
 * Parent side. evo_worker_start forks and execs `exe argv...` (exe NULL: /proc/self/exe, this evo binary) with
 * the worker's stdin and stdout on pipes and its stderr appended to spec->log_path (or inherited). The worker
 * gets a process group of its own (so the terminal's Ctrl-C goes to evo alone, and a kill reaches anything the
 * worker started) and dies with the thread that started it (PR_SET_PDEATHSIG): call start/restart from a thread
 * that lives as long as the worker, e.g. the main thread. Starting a worker ignores SIGPIPE in the parent (once,
 * process-wide) so a worker that closes its pipe is an error value, never a signal that kills evo.
 *
 * A call writes one request line and waits for one reply line with poll(). Outcomes:
 *   EVO_OK         *reply is the line; its id matches the request's.
 *   EVO_E_WORKER   the worker died or closed its output (the message says how: "exited with status 3",
 *                  "was killed by SIGSEGV (Segmentation fault)", plus the last lines of its log), or sent a line
 *                  that is not a reply to this request; the process is killed (if needed) and reaped.
 *   EVO_E_TIMEOUT  no reply within timeout_s: the process group gets SIGKILL and is reaped.
 *   other          the worker replied with an "error" message carrying that status; it is still running.
 * A reply marked "exiting" (the worker's handler asked to end after it) is returned with EVO_OK and the process
 * is reaped at once; so is every process after EVO_E_WORKER or EVO_E_TIMEOUT: the handle then holds no process
 * (evo_worker_running is false) until evo_worker_restart. No path leaves a zombie: every process started is
 * reaped before the call that ended it returns.
 * evo_worker_send + evo_worker_receive split a call so that one poll loop can watch many workers (pool.c).
 *
 * Worker side. evo_worker_serve reads request lines from in_fd and answers each with exactly one line on out_fd,
 * dispatching on "op" through a table of handlers. "shutdown" is built in (reply, then return). EOF on in_fd
 * returns EVO_OK. An unknown op or a line that is not a message gets an "error" reply and the loop goes on.
 *
 * Thread-safety: a handle is used by one thread at a time. evo_worker_serve uses no global state.
 */
#ifndef EVO_WORKER_H
#define EVO_WORKER_H

#include "evo.h"

#include <stdbool.h>
#include <sys/types.h>

/* A worker that got "shutdown" (or EOF) has this long to exit before evo_worker_stop kills it. */
#define EVO_WORKER_STOP_GRACE_S 2.0
/* A worker that closed its output is given this long to exit on its own before it is killed. */
#define EVO_WORKER_EXIT_GRACE_S 1.0
/* Request and reply lines longer than this are a protocol error. */
#define EVO_WORKER_LINE_MAX (16u << 20)

/* ---- parent side ---- */

typedef struct evo_worker evo_worker;

typedef struct {
    const char *exe;         /* program to exec; NULL = /proc/self/exe */
    const char *const *argv; /* its arguments after argv[0], NULL-terminated, e.g. {"worker","--gpu","0",NULL} */
    const char *log_path;    /* the worker's stderr is appended here; NULL = inherit the parent's */
    const char *name;        /* used in messages, e.g. "worker gpu 0"; NULL = "worker" */
} evo_worker_spec;

/* Copies spec. Fails with EVO_E_WORKER when fork, the pipes or exec fail (exec's errno is reported). */
evo_status evo_worker_start(const evo_worker_spec *spec, evo_worker **out, evo_err *err);
/* Kills the current process (if any), reaps it, and starts a fresh one from the same spec. */
evo_status evo_worker_restart(evo_worker *w, evo_err *err);
/* Sends shutdown, gives the worker EVO_WORKER_STOP_GRACE_S to exit, then kills it; reaps it; frees w. NULL is
 * allowed. */
void evo_worker_stop(evo_worker *w);
/* The same with a longer grace (a worker under a tool that writes its report as it ends). */
void evo_worker_stop_within(evo_worker *w, double grace_s);
/* Sends shutdown and closes the worker's input without waiting; a later evo_worker_stop waits only for what is
 * left of the grace. Lets a pool stop all its workers at once. */
void evo_worker_request_stop(evo_worker *w);
/* SIGKILL to the process group and reap; the handle stays, for evo_worker_restart. */
void evo_worker_kill(evo_worker *w);

/* One request (a line without its newline) and its reply (malloc'd, caller frees; NULL unless EVO_OK). */
evo_status evo_worker_call(evo_worker *w, const char *request, double timeout_s, char **reply, evo_err *err);

/* The two halves of a call. send writes the request and arms the watchdog at now + timeout_s; then, whenever
 * evo_worker_fd is readable or evo_worker_deadline has passed, receive: EVO_OK with *reply NULL means "not yet",
 * anything else ends the call as evo_worker_call would. */
evo_status evo_worker_send(evo_worker *w, const char *request, double timeout_s, evo_err *err);
evo_status evo_worker_receive(evo_worker *w, char **reply, evo_err *err);
/* For a worker with no call pending: EVO_OK when it is still there and silent; EVO_E_WORKER when it has ended
 * (e.g. after a handler's exit_after) or wrote a line nobody asked for (then it is killed). Reaped either way. */
evo_status evo_worker_check_idle(evo_worker *w, evo_err *err);
int evo_worker_fd(const evo_worker *w);          /* the reply pipe; -1 when not running */
double evo_worker_deadline(const evo_worker *w); /* evo_now() time of the watchdog; 0 when no call is pending */

bool evo_worker_running(const evo_worker *w);
pid_t evo_worker_pid(const evo_worker *w); /* 0 when not running */
const char *evo_worker_name(const evo_worker *w);

/* ---- worker side ---- */

typedef struct {
    const char *op;
    /* Serve one request. line is the whole request (decode it with protocol.h). On EVO_OK *reply is the reply
     * line, malloc'd (the loop frees it). A failure is answered with an "error" reply carrying the status and
     * err's message. Set *exit_after to end the loop once the reply is written (a kernel that timed out leaves
     * the GPU busy: only the end of the process frees it). */
    evo_status (*fn)(void *ctx, const char *line, char **reply, bool *exit_after, evo_err *err);
} evo_worker_handler;

/* Returns EVO_OK after shutdown, EOF or a handler's exit_after; EVO_E_IO when reading fails; EVO_E_WORKER when
 * the parent is gone (writing fails) or a request line exceeds EVO_WORKER_LINE_MAX. */
evo_status evo_worker_serve(int in_fd, int out_fd, const evo_worker_handler *handlers, int n, void *ctx, evo_err *err);

/* ---- the GPU side and its test double (the `evo worker` subcommand calls one of these) ---- */

/* Serves GPU ordinal gpu: loads the driver, answers hello and eval with the gates, until shutdown or EOF.
 * config_path may be NULL (the default config). sanitize: the worker runs under compute-sanitizer (sanitize.h):
 * one seed and one distribution per shape and causal setting, EVO_SANITIZE_SLOWDOWN x the kernel time limit, no
 * timing. Implemented in eval_gpu.c. */
evo_status evo_gpu_serve(int gpu, const char *config_path, bool sanitize, int in_fd, int out_fd, evo_err *err);

/* A worker without a GPU that behaves as told, for the tests of this module and of pool.h (kept in the product
 * because fault tests need a worker that faults on demand). mode applies to every eval request; a request's
 * fault_injection, when set, overrides it for that request:
 *   ok          replies OK with plausible numbers (one shape per best_us entry, at least one)
 *   die         kills itself with SIGSEGV
 *   exit:N      exits with status N without replying
 *   stall       never replies (sleeps until killed)
 *   garbage     writes a line that is not JSON
 *   slow:S      sleeps S seconds, then replies OK
 *   error       replies with an "error" message (EVO_E_CUDA)
 *   exit-after  replies OK, then exits (as a worker does after a kernel timed out)
 * hello replies describe a fake sm_90 device named "fake". EVO_E_USAGE when mode is not one of these.
 * config_path (may be NULL): when it loads, OK replies also carry detail.cases (what the GPU worker would check,
 * from cases.h), median intervals and, for a request with retime N, N made-up rounds. EVO_FAKE_TRACE=FILE appends
 * "eval ID" to FILE for each candidate request it starts (not the baseline's), so a test can count them. */
evo_status evo_worker_fake_serve(const char *mode, int gpu, const char *config_path, int in_fd, int out_fd,
                                 evo_err *err);
/* Checks a mode string without serving; EVO_E_USAGE naming it when unknown. */
evo_status evo_worker_fake_check_mode(const char *mode, evo_err *err);

#endif
