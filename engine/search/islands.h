/* islands.h — the island model of `mpirun -n N evo run --islands`: one search (an island) per MPI rank, each on the
 * GPUs its host gives it and with a store of its own, joined by a ring of migrations and spoken for by rank 0.
 *
 * What an island is: an ordinary run (evolve.h) in the store `<db>.rank<R>` on its own node, seeded with
 * evo_island_seed(seed, R) (rank 0 keeps the seed itself, so a one-island job is the plain run), stored under the
 * same run id on every island (the largest next id of the N stores), with runs.island saying which island of which
 * job it is (rank, islands, migration interval, migrants, the job's seed).
 *
 * The order of collective steps (every rank takes every step, in this order; comm.h):
 *   evo_island_open (MPI_Init) → evo_island_ready (once: each rank's inputs, store and GPUs checked; any failure
 *   stops every rank before any work, each with the first failing island's message) → per generation, in the loop:
 *   [evo_island_migrate when the generation is a multiple of K, K > 0, M > 0, N > 1] then evo_island_generation (each
 *   island's figures and stop wishes to every rank; every rank derives the same decision from them) → after the
 *   search evo_island_gather (every island's store copied to rank 0 and merged into <db> there) → evo_island_close
 *   (MPI_Finalize).
 * A migration sends the island's best M results (OK, this island's own measurements, this run's) to rank R+1 mod N
 * and receives rank R-1's: genomes with fitness, interval, GPU and per-shape figures, as JSON. The receiver measures
 * them again on its own GPU (with --replay: looks them up again) before they can become its elites.
 *
 * Determinism: a job is reproducible for a given N, seed and K, M: migrations happen at fixed generations and carry
 * what deterministic searches found; a resumed island replays its stored generations and the exchanges with them.
 * A rank that dies ends the job (MPI's rule); every store stays whole (each result is one transaction), and the
 * same command with --resume RUN continues every island.
 *
 * Nothing here calls exit(); a rank is one thread.
 */
#ifndef EVO_ISLANDS_H
#define EVO_ISLANDS_H

#include "config.h"
#include "evo.h"
#include "space.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct evo_island evo_island;

/* Opens MPI and makes this rank's island: migrate_every K >= 1 generations, migrants M >= 0 per migration (0: the
 * islands never exchange); either may be -1, unset until evo_island_set_migration (a resume takes the stored run's).
 * EVO_E_USAGE when evo was built without MPI (comm.h says so). */
evo_status evo_island_open(int migrate_every, int migrants, evo_island **out, evo_err *err);
void evo_island_set_migration(evo_island *is, int migrate_every, int migrants);
void evo_island_close(evo_island *is); /* MPI_Finalize; NULL is fine */

int evo_island_rank(const evo_island *is);
int evo_island_size(const evo_island *is);
int evo_island_local_rank(const evo_island *is);
int evo_island_local_size(const evo_island *is);
const char *evo_island_host(const evo_island *is);
int evo_island_migrate_every(const evo_island *is);
int evo_island_migrants(const evo_island *is);
/* Whether evo_island_ready passed: the job started, and evo_island_gather is due at its end. */
bool evo_island_started(const evo_island *is);
/* How many distinct hosts the ranks run on (known once evo_island_ready passed). */
int evo_island_hosts(const evo_island *is);
/* The MPI library's name and version (comm.h). */
const char *evo_island_library(void);
/* The job stopped because of another island (its failure, or an interrupt that reached another rank first): rank 0
 * reports it for the job, the other ranks need not. */
void evo_island_set_peer_stop(evo_island *is);
bool evo_island_peer_stop(const evo_island *is);

/* The seed of island rank of a job seeded with seed: seed itself for rank 0, a splitmix64 mix of both otherwise
 * (non-negative, as the store keeps it). */
uint64_t evo_island_seed(uint64_t seed, int rank);
/* "<db>.rank<R>" (malloc'd). */
char *evo_island_store_path(const char *db, int rank);
/* The GPUs island local_rank of local_size on this host takes of the n visible ones (ordinals into out, returns how
 * many): an even share (ordinals local_rank, local_rank + local_size, ...); with fewer GPUs than ranks on the host,
 * ordinal local_rank mod n (ranks then share a GPU). */
int evo_island_gpu_share(int local_rank, int local_size, int n, int *out, int max);

/* runs.island of this island in a job seeded with seed (malloc'd JSON), and its reading back. *pipelined is 1 for
 * a job whose islands ran pipelined by one generation, 0 for one of the first, lock-step version (no such key). */
char *evo_island_json(const evo_island *is, uint64_t seed);
evo_status evo_island_parse_json(const char *json, int *rank, int *islands, int *every, int *migrants, uint64_t *seed,
                                 int *pipelined, evo_err *err);

/* Every rank states whether it can start (mine: EVO_OK or its failure, with why), what must be the same on every
 * island (fingerprint: task, shape set, population, generations, strategy, resume or not ...; compared as text,
 * at most 511 bytes), the run id it would take next (next_run; for a resume, the run it continues) and whether its
 * run is finished already (a resume of a done run). On success *job_run is the largest next_run of all, and
 * *all_finished whether every island's run is done. Any failure stops every rank: the failing island returns its
 * own error; the others return EVO_E_USAGE or the failing island's status, with "island R (host H) cannot start:
 * ...". Must be called exactly once per rank, failure or not. */
evo_status evo_island_ready(evo_island *is, evo_status mine, const char *why, const char *fingerprint, int64_t next_run,
                            bool finished, int64_t *job_run, bool *all_finished, evo_err *err);

/* ---- per generation ---- */
enum {
    EVO_ISLAND_STOP_INTERRUPTED = 1, /* Ctrl-C or SIGTERM reached this island */
    EVO_ISLAND_STOP_FAILED = 2,      /* this island's search failed (its message is its own) */
    EVO_ISLAND_STOP_BUDGET = 4,      /* its time budget is spent */
    EVO_ISLAND_STOP_EXHAUSTED = 8,   /* its strategy has no unseen valid genome left */
};

/* One island's figures after a generation (sent as bytes: plain data only). */
typedef struct {
    int32_t stop;                /* EVO_ISLAND_STOP_* bits */
    int32_t evaluated, reused;   /* this generation */
    int32_t counts[EVO_V_COUNT]; /* its verdicts */
    int32_t migrants_in;         /* migrants measured in it */
    int32_t live;                /* evaluated anew (not replayed from its store on a resume) */
    double best, median;         /* this generation's best and median fitness; NAN when none */
    double best_so_far;          /* the island's best since its run began; -INFINITY when none */
} evo_island_gen;

/* Every rank's figures of a generation, in two steps, so that an island works on its next generation while the
 * slower ones finish theirs: start gives mine (copied) to every rank, finish waits for every rank's and fills all
 * (all[r] is island r's; all holds evo_island_size entries). One at a time: start, finish, start, ... */
evo_status evo_island_generation_start(evo_island *is, const evo_island_gen *mine, evo_err *err);
evo_status evo_island_generation_finish(evo_island *is, evo_island_gen *all, evo_err *err);

/* ---- migration ---- */
typedef struct {
    char genome[EVO_GENOME_TEXT_MAX];
    double fitness, fitness_lo, fitness_hi; /* as measured where it comes from; NAN when unknown */
    char gpu[128];
    int n_shapes;
    struct {
        char shape[64];
        double median_us, speedup;
    } shapes[EVO_MAX_SHAPES];
} evo_migrant;

/* The ring, pipelined: post starts sending out[0..n_out) to the next island, for its generation `generation`, and
 * returns at once; take waits for the previous island's post for `generation` and reads it into *in (malloc'd;
 * *n_in of them, at most EVO_ISLAND_MAX_MIGRANTS). Every island posts for the same generations and takes each post
 * once, in order. A message that is not what a sender of this build writes for that generation is EVO_E_COMM,
 * naming it. flush waits until every post was taken (before the stores are handed over, and at the end). */
#define EVO_ISLAND_MAX_MIGRANTS 256
evo_status evo_island_post(evo_island *is, int generation, const evo_migrant *out, int n_out, evo_err *err);
evo_status evo_island_take(evo_island *is, int generation, evo_migrant **in, int *n_in, evo_err *err);
evo_status evo_island_flush(evo_island *is, evo_err *err);
/* A message of the job failed (or was not of this build's kind): the ranks no longer agree on what comes next, so
 * nothing collective may follow (the hand-over is skipped, close waits for nothing); the rank exits non-zero and
 * mpirun ends the job. */
bool evo_island_broken(const evo_island *is);
/* The message evo_island_post sends (malloc'd JSON), and its reading; exposed for tests. */
char *evo_island_encode(int from, int generation, const evo_migrant *m, int n);
evo_status evo_island_decode(const char *text, int generation, evo_migrant **m, int *n, evo_err *err);

/* ---- the end of the job ---- */
/* Every island's store (island_db on its node) is copied (evo_store_copy) and sent to rank 0, which merges them,
 * its own first, into out_db (evo_store_merge) and prints what it merged on `out` unless quiet. Every rank calls it;
 * a rank whose copy fails sends nothing and says so, the others are merged all the same. Returns rank 0's merge
 * status on rank 0, the island's own send status elsewhere. */
evo_status evo_island_gather(evo_island *is, const char *island_db, const char *out_db, FILE *out, bool quiet,
                             evo_err *err);

#endif
