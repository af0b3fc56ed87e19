/* pool.h — one worker process per GPU, kept busy with evaluation jobs, watched by a watchdog (see worker.h).
 *
 * evo_pool_start spawns `evo worker --gpu N <args>` for every ordinal given and waits for each one's hello.
 * evo_pool_run hands the jobs out in order, one at a time per worker, to whichever worker is free, and calls
 * on_done exactly once for every job it ran. A worker that dies during a job makes that job CRASHED; a job that
 * outlives its watchdog is killed with its worker and becomes TIMEOUT; a worker that replies with garbage or
 * with an "error" message turns the job CRASHED as well. Only that job is affected: the worker is restarted
 * (hello again) and the pool goes on with the next job. A worker that fails to come back
 * EVO_POOL_RESTART_TRIES times in a row ends the run with EVO_E_WORKER.
 *
 * Threads: none. The pool is one poll() loop on the caller's thread; on_done runs on that thread, one call at a
 * time, and may call evo_pool_interrupt. All pool functions must be called from one thread, the one that lives
 * as long as the workers (they die with the thread that started them: PR_SET_PDEATHSIG).
 *
 * Ctrl-C: evo_pool_interrupt (async-signal-safe; call it from a SIGINT handler) stops handing out jobs; the jobs
 * already running finish (bounded by their watchdogs), get their callbacks, and evo_pool_run returns
 * EVO_E_INTERRUPTED. A second interrupt abandons the running jobs too (their workers are killed, no callback; the
 * next run restarts them). The flag stays set: later runs return EVO_E_INTERRUPTED at once.
 *
 * Ownership: the pool owns its workers; evo_pool_stop shuts them all down (in parallel) and frees the pool.
 * Jobs and requests stay the caller's; the reply passed to on_done is valid during the callback only.
 */
#ifndef EVO_POOL_H
#define EVO_POOL_H

#include "evo.h"
#include "protocol.h"

#include <stdbool.h>
#include <sys/types.h>

#define EVO_POOL_MAX_WORKERS 64
#define EVO_POOL_RESTART_TRIES 3
#define EVO_POOL_HELLO_TIMEOUT_S 120.0 /* CUDA initialisation and the first inputs can take a while */

typedef struct evo_pool evo_pool;

typedef struct {
    const int *gpus;         /* GPU ordinals, one worker each */
    int n_gpus;              /* 1..EVO_POOL_MAX_WORKERS */
    const char *exe;         /* NULL = this evo binary (/proc/self/exe) */
    const char *const *args; /* appended after "worker --gpu N", NULL-terminated, e.g. {"--config", F, NULL};
                                    may be NULL */
    const char *log_dir;     /* each worker appends its stderr to <log_dir>/worker-gpu<N>.log (directory
                                    created); NULL = workers share the parent's stderr */
    double hello_timeout_s;  /* 0 = EVO_POOL_HELLO_TIMEOUT_S */
} evo_pool_opts;

typedef struct {
    const evo_eval_request *req; /* sent as is (req->id included) */
    double timeout_s;            /* watchdog: the reply must arrive within this many seconds (> 0) */
    void *user;                  /* for the caller */
} evo_pool_job;

typedef struct {
    int job;                     /* index into the jobs array */
    int worker;                  /* index of the worker that ran it */
    evo_status status;           /* EVO_OK: reply is the worker's. EVO_E_WORKER: the worker died or broke the
                                    protocol (reply->verdict CRASHED). EVO_E_TIMEOUT: the watchdog fired (reply->
                                    verdict TIMEOUT). Other: the worker answered with an error of that status
                                    (reply->verdict CRASHED). */
    const evo_eval_reply *reply; /* never NULL; made up by the pool unless status is EVO_OK, with detail
                                    {"worker": <what happened>, "gpu": N} */
    const char *message;         /* what happened, "" when status is EVO_OK */
    double wall_s;               /* from sending the request to the reply or the failure */
} evo_pool_done;

typedef void (*evo_pool_done_fn)(void *ctx, const evo_pool_job *job, const evo_pool_done *done);

/* Starts every worker and waits for their hellos. A worker that cannot start or does not answer is an error
 * (its status: EVO_E_WORKER, EVO_E_TIMEOUT, or what its error reply carried, e.g. EVO_E_NODRIVER); nothing is
 * left running then. */
evo_status evo_pool_start(const evo_pool_opts *o, evo_pool **out, evo_err *err);
/* EVO_OK when every job got its callback; EVO_E_INTERRUPTED; EVO_E_WORKER when a worker could not be restarted
 * (the jobs that were running still get their callbacks, jobs never started get none). */
evo_status evo_pool_run(evo_pool *p, const evo_pool_job *jobs, int n, evo_pool_done_fn on_done, void *ctx,
                        evo_err *err);
/* Waits until every worker is up: those being restarted have answered hello, dead ones are revived. A run
 * returns as soon as its last job is reported, leaving restarts to finish in the background (CUDA
 * initialisation overlaps whatever the caller does next); the next run, or this, waits for them.
 * EVO_E_WORKER when a worker cannot be restarted EVO_POOL_RESTART_TRIES times in a row. */
evo_status evo_pool_wait_ready(evo_pool *p, evo_err *err);
void evo_pool_interrupt(evo_pool *p);
void evo_pool_stop(evo_pool *p); /* NULL is allowed */

int evo_pool_size(const evo_pool *p);
/* The latest hello of worker i (refreshed on every restart). */
const evo_hello_reply *evo_pool_hello(const evo_pool *p, int i);
pid_t evo_pool_worker_pid(const evo_pool *p, int i); /* 0 when it has no process */
int evo_pool_restarts(const evo_pool *p);            /* successful restarts since start */

#endif
