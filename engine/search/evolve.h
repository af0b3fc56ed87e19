/* evolve.h — `evo run`: the evolution loop.
 *
 * Per generation: the strategy proposes genomes; each is rendered and keyed (template, genome, options, NVRTC,
 * arch); a genome whose key already has an evaluation for this shape set is reused from the store, the others
 * are compiled in parallel and evaluated (GPU workers, or a replay database); every finished evaluation is
 * committed at once, with its per-shape results and lineage; the generation's summary row follows; the strategy
 * observes the results. Stops after the generations, on the time budget, after `stall` generations without
 * improvement, when the space is exhausted, or on Ctrl-C (the run is marked interrupted; finished work is kept).
 *
 * Resume (--resume RUN) re-creates the strategy from the run's stored config and seed and replays its finished
 * generations from the store (strategies are deterministic); the interrupted generation's proposals come out
 * again and every one already evaluated by the run is taken from the store, so nothing finished is lost or
 * repeated.
 *
 * Sanitize (--sanitize): after a run that finished, the top-K elites of its task, arch and shape set go through
 * compute-sanitizer (sanitize.h). An elite with errors is demoted in the store (its results stay; it is no
 * longer an elite) and the one that moves up is checked in turn, up to 3K candidates in all.
 *
 * Inputs first: the config, the database to resume, the replay source (never the output database, compared by
 * device and inode) are checked before anything is created, so a bad one leaves no database and no work directory.
 * A resume of a run that is done changes nothing. The work directory (GPU runs) goes when the run ends unless
 * sanitizer reports or the worker logs of a failure are in it (evaluate.h: evo_work_dir_settle).
 *
 * Islands (opts.island, islands.h): the same loop on every rank, with a migration before every K-th generation
 * (the migrants measured with the generation's proposals, which make room for them) and the job's figures and
 * stop decision after every generation; a failing island stops the others cleanly (state interrupted).
 *
 * Output: one line per generation on stdout (a live progress line on a terminal), generations numbered from 0 as
 * the store numbers them. Nothing here calls exit().
 */
#ifndef EVO_EVOLVE_H
#define EVO_EVOLVE_H

#include "evo.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *config_path; /* NULL: the default (config.h: evo_config_load_default); ignored with resume (the run's
                                own config is used) */
    const char *db_path;     /* default population.db */
    int generations;         /* 0 = config */
    int population;          /* 0 = config */
    bool seed_set;
    uint64_t seed;
    int64_t resume_run; /* 0 = a new run */
    const int *gpus;    /* NULL = all */
    int n_gpus;
    int jobs;              /* parallel compiles; 0 = all cores */
    double time_budget_s;  /* < 0 = config */
    const char *strategy;  /* NULL = config */
    int insights;          /* -1 = config, 0 off, 1 on */
    bool seed_elites;      /* generation 0 also measures the store's per-shape elites of earlier runs (the fastest
                              of each accuracy class on each stored shape of this task and arch, then the second
                              fastest, ..., evolution.elites deep) that this config's space holds, as far as the
                              population has room; give it again to resume such a run */
    const char *replay_db; /* evaluate by looking results up there */
    const char *sanitize;  /* after the search, the elites under these compute-sanitizer tools ("memcheck,
                                racecheck"); NULL = not */
    const char *sanitizer; /* its path; NULL = found on PATH or under $CUDA_HOME */
    FILE *out;             /* progress and summary (stdout) */
    bool quiet;
    /* --islands: this rank's island of the job (islands.h), NULL for a plain run. Then db_path is the island's own
     * store, seed the job's (the run takes evo_island_seed(seed, rank)); rank 0 prints the job's lines, the other
     * ranks are quiet; stop decisions (interrupt, failure, time budget, stall, an exhausted space) are the job's,
     * taken after every generation; with resume_run, config/seed/population/strategy may be given again and must
     * match the stored run. */
    struct evo_island *island;
} evo_run_opts;

evo_status evo_run(const evo_run_opts *o, evo_err *err);

#endif
