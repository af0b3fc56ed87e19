/* candidate.h — genomes made ready for the GPU: the host-side check (the task's can_implement against the device
 * limits), rendering, compiling through the compile service (in parallel, cached), and the resource gate on what
 * ptxas reports (spills, registers). A genome that fails any step gets a verdict and a one-line reason; that is
 * data, not an error. evo_status errors mean the machinery failed (cache unwritable, bad options).
 *
 * Ownership: evo_candidate owns its program and compile result; release with evo_candidate_free. Not thread-safe
 * per candidate; evo_candidates_build itself runs the compiles in child processes (see compile.h).
 */
#ifndef EVO_CANDIDATE_H
#define EVO_CANDIDATE_H

#include "compile.h"
#include "config.h"
#include "evo.h"
#include "space.h"
#include "task.h"

typedef struct {
    evo_genome genome;
    char genome_text[EVO_GENOME_TEXT_MAX];
    evo_verdict verdict;    /* EVO_V_OK: compiled and within limits, ready for the GPU gates */
    char why[512];          /* reason for any other verdict */
    evo_program prog;       /* rendered program: variants with geometry and name expressions */
    evo_compile_result cr;  /* outcome, log, cubin, per-variant kernels (in prog.variants order) */
    char key[65];           /* SHA-256 of (template, headers, genome via name expressions, options, NVRTC, arch) */
    char template_hash[65]; /* SHA-256 of the template text */
    int registers, smem_bytes, spill_bytes, stack_bytes; /* worst over the variants; -1 when not compiled */
    int accuracy; /* its accuracy class (task.h): the task's genome_accuracy, on every variant */
} evo_candidate;

typedef struct {
    const evo_config *cfg;
    const evo_task *task;
    const evo_device_limits *lim; /* target device (or the arch's known limits without a GPU) */
    const char *arch;             /* NVRTC target, e.g. "sm_90" */
    int jobs;                     /* parallel compiles; <= 0: online CPUs */
    volatile sig_atomic_t *interrupt;
} evo_build_opts;

/* Fill c[i].genome first. prepare renders, keys and checks each (verdict EVO_V_OK: ready to compile, or
 * INVALID / RESOURCE_FAIL with why); compile compiles the prepared OK ones not skipped (skip may be NULL) and
 * applies the resource gate; build is both. */
evo_status evo_candidates_prepare(const evo_build_opts *o, evo_candidate *c, int n, evo_err *err);
/* What prepare decides of a genome that satisfies the space's constraints, before anything is rendered: its
 * accuracy class is one the config admits, and the task can implement it at o->lim (can_implement). EVO_V_OK, or
 * EVO_V_INVALID / EVO_V_RESOURCE_FAIL with why. Cheap and pure: the search loop filters its proposals by it. */
evo_verdict evo_candidate_admit(const evo_build_opts *o, const evo_genome *g, char *why, size_t why_len);
/* evo_candidate_admit as a space filter (space.h, evo_space_set_filter), opts an evo_build_opts: true when it takes
 * g. */
bool evo_candidate_admits(const evo_genome *g, void *opts);
evo_status evo_candidates_compile(const evo_build_opts *o, evo_candidate *c, int n, const bool *skip, evo_err *err);
evo_status evo_candidates_build(const evo_build_opts *o, evo_candidate *c, int n, evo_err *err);
void evo_candidate_free(evo_candidate *c);

/* A candidate's key: the compile key when the task has no launch knobs (task->launch_knobs), else the SHA-256 of
 * the compile key and those knobs' values, so that genomes differing only in how one kernel is launched are
 * separate candidates (and share the compiled code). */
void evo_candidate_key(const evo_task *task, const evo_space *space, const evo_genome *g, const char compile_key[65],
                       char key[65]);

/* The task's in-memory headers (task->headers) for a compile request; returns the count. */
int evo_task_headers(const evo_task *t, evo_compile_header *out, int max);

/* The NVRTC options every candidate of cfg is compiled with (the same for all genomes; part of the key). The
 * option strings point into buf or are static. Returns the count. */
int evo_candidate_options(const evo_config *cfg, char *buf, size_t buf_len, const char **opts, int max);
/* The compile process's limits and sandbox mode as the config's compile section sets them (sandbox.h). */
evo_compile_limits evo_config_compile_limits(const evo_config *cfg);

/* A deterministic sample of n valid genomes for `evo compile --sample`: the baseline, then for each knob its
 * smallest and largest value (on the valid genome nearest the baseline that has it, searched up to two other
 * knobs changed), then uniformly random valid genomes, no duplicates. *out is malloc'd. */
evo_status evo_sample_genomes(const evo_config *cfg, int n, uint64_t seed, evo_genome **out, int *n_out, evo_err *err);

#endif
