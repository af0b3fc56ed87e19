/* evaluate.h — evaluators: what turns candidates into verdicts with evidence and per-shape results, for the
 * evolution loop and `evo check`. One small table, two implementations:
 *   "gpu"    worker processes, one per GPU (pool.h), running the gates of eval_gpu.c on compiled candidates; the
 *            baseline genome is compiled once and re-timed on every worker when asked, so speedups are taken
 *            against a baseline measured on the same GPU shortly before;
 *   "replay" results looked up by genome in a database recorded on a GPU (no GPU, no compiling): for testing
 *            strategies and for measuring search efficiency.
 * Both compute fitness the same way from the per-shape speedups t_baseline / t_candidate: their geometric mean,
 * or with `fitness: worst` the smallest (replay scores the recorded measurements again by the config); a correct
 * candidate slower than slowdown x baseline on >= min_shapes shapes is REGRESSED (fitness kept).
 *
 * Ownership: results own their detail (evo_result_free). An evaluator is used by one thread, the one that opened
 * it (workers die with the thread that started them).
 */
#ifndef EVO_EVALUATE_H
#define EVO_EVALUATE_H

#include "candidate.h"
#include "config.h"
#include "evo.h"
#include "sanitize.h"
#include "store.h"
#include "task.h"

#include <signal.h>

/* evo_result (core/result.h) is what an evaluator hands the search: the worker's result with its fitness. */

typedef struct evo_evaluator evo_evaluator;

typedef struct {
    const evo_config *cfg;
    const char *config_path; /* handed to the workers; NULL: cfg's text, written into work_dir */
    const int *gpus;         /* gpu: ordinals, one worker each; NULL = every GPU evo_gpu_count sees */
    int n_gpus;
    const char *replay_db; /* replay: the recorded database */
    const char *work_dir;  /* gpu: cubin files and worker logs go here (created) */
    int jobs;              /* parallel compiles of the baseline */
    bool full_timing;      /* never abort timing early (evo check: the user wants the whole measurement) */
    int retime;            /* > 0: each candidate is timed this many times more (evo check --retime) */
    volatile sig_atomic_t *interrupt;
} evo_evaluator_opts;

/* Opens the GPU evaluator (starts the workers, compiles the baseline) or, with replay_db, the replay one. */
evo_status evo_evaluator_open(const evo_evaluator_opts *o, evo_evaluator **out, evo_err *err);
void evo_evaluator_close(evo_evaluator *e); /* NULL is fine */

const char *evo_evaluator_name(const evo_evaluator *e); /* "gpu" or "replay" */
bool evo_evaluator_needs_compile(const evo_evaluator *e);
const char *evo_evaluator_arch(const evo_evaluator *e); /* "sm_90": what candidates are compiled for */
const evo_device_limits *evo_evaluator_limits(const evo_evaluator *e);
const char *evo_evaluator_gpu(const evo_evaluator *e); /* device name ("replay of FILE" for replay) */
int evo_evaluator_driver(const evo_evaluator *e);      /* cuDriverGetVersion of the first worker, 0 for replay */
int evo_evaluator_restarts(const evo_evaluator *e);    /* worker restarts so far */
/* The gate's cases each worker prepared at its start and the longest any took (seconds); 0 cases for replay. */
int evo_evaluator_prepared(const evo_evaluator *e, double *seconds);
void evo_evaluator_interrupt(evo_evaluator *e); /* async-signal-safe: stop handing out work */
/* Stop at once: no more work is handed out and the running jobs are abandoned (no callback; their workers are
 * killed), so nothing is evaluated after a result could not be stored. The evaluator runs nothing after this. */
void evo_evaluator_stop(evo_evaluator *e);
/* Candidate i's verdict so far (from building) is kept unless it is EVO_V_OK, in which case it is evaluated.
 * retime_baseline: time the baseline on every worker first (its result goes to *baseline when not NULL).
 * progress (may be NULL) is called after each result, on this thread. */
evo_status evo_evaluator_run(evo_evaluator *e, const evo_candidate *c, int n, bool retime_baseline, evo_result *out,
                             evo_result *baseline, void (*progress)(void *ctx, int i, const evo_result *r), void *ctx,
                             evo_err *err);

/* Candidates timed again without the correctness gate (elites after a baseline drift, and at the end of a run),
 * the baseline re-timed on every worker first; never aborted early. Replay: the recorded results again. */
evo_status evo_evaluator_retime(evo_evaluator *e, const evo_candidate *c, int n, evo_result *out, evo_err *err);

/* Candidate c (verdict OK) under each of the compute-sanitizer tools (sanitize.h), one worker of its own per tool
 * on the first worker's GPU; out[t] for tools[t]. label names the report files in the work directory. The gpu
 * evaluator only (EVO_E_USAGE for replay: there is nothing to run). */
evo_status evo_evaluator_sanitize(evo_evaluator *e, const evo_candidate *c, const char *sanitizer,
                                  const char *const *tools, int n_tools, const char *label, evo_sanitize_result *out,
                                  evo_err *err);
/* After a command that ended with s and message err: keep its work directory dir for the worker logs in it? Yes when
 * a log there is not empty and the failure is the workers', the GPU's or a timeout, or the message names a file in
 * dir (it quotes a worker's log); then the message says where, once: " (worker logs: DIR)" is appended unless it
 * names dir already. Otherwise the directory is removed. Returns whether it was kept. */
bool evo_work_dir_settle(const char *dir, evo_status s, evo_err *err);
/* Where the evaluator keeps cubins, worker logs and sanitizer reports (NULL for replay). */
const char *evo_evaluator_work_dir(const evo_evaluator *e);

/* GPUs on this machine as the driver will number them, without initializing CUDA in this process:
 * CUDA_VISIBLE_DEVICES when set, else the entries of /proc/driver/nvidia/gpus, else 1. */
int evo_gpu_count(void);

/* A stored evaluation as a result (detail copied; r is overwritten, free it with evo_result_free). */
void evo_result_from_eval(const evo_eval_rec *e, evo_result *r);

/* Fitness and the regression rule from per-shape speedups (used by both evaluators and by tests). */
void evo_result_score(const evo_config *cfg, evo_result *r);

#endif
