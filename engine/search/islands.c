/* islands.c — the island model over the job's messages (see islands.h): seeds and store names per rank, the
 * start-up check, the per-generation figures, the ring of migrants (JSON), and the hand-over of every store to
 * rank 0 at the end.
 */
#include "islands.h"

#include "comm.h"
#include "store.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_POSTS 8 /* posts not yet known to be taken; the oldest is waited for when more come */

struct evo_island {
    evo_comm *comm;
    int every, migrants;
    bool started, peer_stop;
    bool broken; /* a message failed: nothing collective or pending is waited for any more */
    int hosts;
    evo_island_gen fig_mine, *fig_all; /* the figures in flight (fig_req), and where every rank's land */
    evo_comm_req *fig_req;
    evo_comm_req *posts[MAX_POSTS];
    int n_posts;
};

evo_status evo_island_open(int migrate_every, int migrants, evo_island **out, evo_err *err)
{
    *out = NULL;
    if (migrate_every == 0 || migrate_every < -1 || migrants < -1 || migrants > EVO_ISLAND_MAX_MIGRANTS)
        return evo_fail(err, EVO_E_INTERNAL, "islands: migrate every %d, %d migrants", migrate_every, migrants);
    evo_comm *c = NULL;
    evo_status s = evo_comm_open(&c, err);
    if (s != EVO_OK) return s;
    evo_island *is = evo_xcalloc(1, sizeof *is);
    is->comm = c;
    is->every = migrate_every;
    is->migrants = migrants;
    *out = is;
    return EVO_OK;
}

void evo_island_close(evo_island *is)
{
    if (!is) return;
    evo_err e = {0};
    if (!is->broken) {
        evo_comm_wait(is->comm, is->fig_req, &e);
        evo_island_flush(is, &e);
    }
    free(is->fig_all);
    evo_comm_close(is->comm);
    free(is);
}

int evo_island_rank(const evo_island *is) { return evo_comm_rank(is->comm); }
int evo_island_size(const evo_island *is) { return evo_comm_size(is->comm); }
int evo_island_local_rank(const evo_island *is) { return evo_comm_local_rank(is->comm); }
int evo_island_local_size(const evo_island *is) { return evo_comm_local_size(is->comm); }
const char *evo_island_host(const evo_island *is) { return evo_comm_host(is->comm); }
void evo_island_set_migration(evo_island *is, int migrate_every, int migrants)
{
    is->every = migrate_every, is->migrants = migrants;
}
int evo_island_migrate_every(const evo_island *is) { return is->every; }
int evo_island_migrants(const evo_island *is) { return is->migrants; }
bool evo_island_started(const evo_island *is) { return is && is->started; }
int evo_island_hosts(const evo_island *is) { return is->hosts; }
const char *evo_island_library(void) { return evo_comm_library(); }
void evo_island_set_peer_stop(evo_island *is) { is->peer_stop = true; }
bool evo_island_peer_stop(const evo_island *is) { return is && is->peer_stop; }

uint64_t evo_island_seed(uint64_t seed, int rank)
{
    if (rank == 0) return seed;
    uint64_t z = seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) >> 1; /* the store keeps a signed 64-bit seed */
}

char *evo_island_store_path(const char *db, int rank)
{
    evo_str p = {0};
    evo_str_appendf(&p, "%s.rank%d", db, rank);
    return evo_str_take(&p);
}

int evo_island_gpu_share(int local_rank, int local_size, int n, int *out, int max)
{
    if (n < 1 || local_size < 1 || max < 1) return 0;
    if (n < local_size) {
        out[0] = local_rank % n;
        return 1;
    }
    int k = 0;
    for (int g = local_rank; g < n && k < max; g += local_size) out[k++] = g;
    return k;
}

char *evo_island_json(const evo_island *is, uint64_t seed)
{
    evo_str j = {0};
    evo_str_appendf(&j,
                    "{\"rank\":%d,\"islands\":%d,\"migrate_every\":%d,\"migrants\":%d,\"seed\":%llu,"
                    "\"pipelined\":1}",
                    evo_island_rank(is), evo_island_size(is), is->every, is->migrants, (unsigned long long)seed);
    return evo_str_take(&j);
}

static bool json_int(const cJSON *o, const char *key, double lo, double hi, double *v)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(f) || f->valuedouble < lo || f->valuedouble > hi || f->valuedouble != floor(f->valuedouble))
        return false;
    *v = f->valuedouble;
    return true;
}

evo_status evo_island_parse_json(const char *json, int *rank, int *islands, int *every, int *migrants, uint64_t *seed,
                                 int *pipelined, evo_err *err)
{
    cJSON *o = cJSON_Parse(json ? json : "");
    double r, n, k, m, sd, p = 0;
    const bool ok = cJSON_IsObject(o) && json_int(o, "rank", 0, 1e6, &r) && json_int(o, "islands", 1, 1e6, &n) &&
                    json_int(o, "migrate_every", 1, 1e6, &k) && json_int(o, "migrants", 0, 1e6, &m) &&
                    json_int(o, "seed", 0, 9.3e18, &sd) &&
                    (!cJSON_HasObjectItem(o, "pipelined") || json_int(o, "pipelined", 0, 1, &p));
    cJSON_Delete(o);
    if (!ok) return evo_fail(err, EVO_E_DB, "runs.island: not what evo writes: %.200s", json ? json : "(null)");
    *rank = (int)r, *islands = (int)n, *every = (int)k, *migrants = (int)m, *seed = (uint64_t)sd;
    *pipelined = (int)p;
    return EVO_OK;
}

/* ---- start ---- */

typedef struct {
    int32_t status;
    int32_t finished;
    int64_t next_run;
    char host[64];
    char fingerprint[512];
    char why[1024];
} ready_msg;

evo_status evo_island_ready(evo_island *is, evo_status mine, const char *why, const char *fingerprint, int64_t next_run,
                            bool finished, int64_t *job_run, bool *all_finished, evo_err *err)
{
    const int n = evo_island_size(is), me = evo_island_rank(is);
    ready_msg m;
    memset(&m, 0, sizeof m);
    m.status = (int32_t)mine;
    m.finished = finished;
    m.next_run = next_run;
    snprintf(m.host, sizeof m.host, "%s", evo_island_host(is));
    snprintf(m.fingerprint, sizeof m.fingerprint, "%s", fingerprint ? fingerprint : "");
    snprintf(m.why, sizeof m.why, "%s", why && *why ? why : evo_status_name(mine));
    ready_msg *all = evo_xcalloc((size_t)n, sizeof *all);
    evo_err local = {0};
    evo_status s = evo_comm_allgather(is->comm, &m, sizeof m, all, &local);
    if (s != EVO_OK) {
        free(all);
        if (mine != EVO_OK) return mine; /* its own message is in err already */
        return evo_fail(err, s, "%s", local.msg);
    }
    if (mine != EVO_OK) { /* this island's own error stands as it is */
        free(all);
        return mine;
    }
    for (int r = 0; r < n; r++)
        if (all[r].status != EVO_OK) {
            s = evo_fail(err, (evo_status)all[r].status, "island %d (host %s) cannot start: %s; no island started", r,
                         all[r].host, all[r].why);
            is->peer_stop = true;
            free(all);
            return s;
        }
    is->hosts = 0;
    for (int r = 0; r < n; r++) {
        bool seen = false;
        for (int q = 0; q < r && !seen; q++) seen = !strcmp(all[q].host, all[r].host);
        is->hosts += !seen;
    }
    for (int r = 0; r < n; r++)
        if (strcmp(all[r].fingerprint, all[0].fingerprint) != 0) {
            s = evo_fail(err, EVO_E_USAGE,
                         "island %d (host %s) is not the same search as island 0: %s there, %s on island 0; every "
                         "rank must run the same command",
                         r, all[r].host, all[r].fingerprint, all[0].fingerprint);
            free(all);
            return s;
        }
    *job_run = 0;
    *all_finished = true;
    for (int r = 0; r < n; r++) {
        if (all[r].next_run > *job_run) *job_run = all[r].next_run;
        *all_finished &= all[r].finished != 0;
    }
    (void)me;
    free(all);
    is->started = true;
    return EVO_OK;
}

evo_status evo_island_generation_start(evo_island *is, const evo_island_gen *mine, evo_err *err)
{
    if (is->fig_req) return evo_fail(err, EVO_E_INTERNAL, "islands: a generation's figures are in flight already");
    if (!is->fig_all) is->fig_all = evo_xcalloc((size_t)evo_island_size(is), sizeof *is->fig_all);
    is->fig_mine = *mine;
    const evo_status s =
        evo_comm_allgather_start(is->comm, &is->fig_mine, sizeof is->fig_mine, is->fig_all, &is->fig_req, err);
    is->broken |= s != EVO_OK;
    return s;
}

evo_status evo_island_generation_finish(evo_island *is, evo_island_gen *all, evo_err *err)
{
    if (!is->fig_req) return evo_fail(err, EVO_E_INTERNAL, "islands: no generation's figures in flight");
    evo_comm_req *q = is->fig_req;
    is->fig_req = NULL;
    evo_status s = evo_comm_wait(is->comm, q, err);
    if (s == EVO_OK) memcpy(all, is->fig_all, (size_t)evo_island_size(is) * sizeof *all);
    is->broken |= s != EVO_OK;
    return s;
}

/* ---- migrants ---- */

static void num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
}

char *evo_island_encode(int from, int generation, const evo_migrant *m, int n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "evo_migrants", EVO_VERSION);
    cJSON_AddNumberToObject(root, "from", from);
    cJSON_AddNumberToObject(root, "generation", generation);
    cJSON *arr = cJSON_AddArrayToObject(root, "migrants");
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "genome", m[i].genome);
        num(o, "fitness", m[i].fitness);
        num(o, "fitness_lo", m[i].fitness_lo);
        num(o, "fitness_hi", m[i].fitness_hi);
        cJSON_AddStringToObject(o, "gpu", m[i].gpu);
        cJSON *sh = cJSON_AddArrayToObject(o, "shapes");
        for (int k = 0; k < m[i].n_shapes; k++) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "shape", m[i].shapes[k].shape);
            num(x, "median_us", m[i].shapes[k].median_us);
            num(x, "speedup", m[i].shapes[k].speedup);
            cJSON_AddItemToArray(sh, x);
        }
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    char *copy = evo_strdup(text);
    cJSON_free(text);
    return copy;
}

static double opt_num(const cJSON *o, const char *k)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(f) ? f->valuedouble : NAN;
}

static bool copy_str(const cJSON *o, const char *k, char *dst, size_t n)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(f) || strlen(f->valuestring) >= n) return false;
    memcpy(dst, f->valuestring, strlen(f->valuestring) + 1);
    return true;
}

evo_status evo_island_decode(const char *text, int generation, evo_migrant **out, int *n_out, evo_err *err)
{
    *out = NULL, *n_out = 0;
    cJSON *root = cJSON_Parse(text ? text : "");
    const cJSON *arr = root ? cJSON_GetObjectItemCaseSensitive(root, "migrants") : NULL;
    const cJSON *gen = root ? cJSON_GetObjectItemCaseSensitive(root, "generation") : NULL;
    const char *bad = !cJSON_IsObject(root)                                                     ? "not a JSON object"
                      : !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "evo_migrants")) ? "no 'evo_migrants'"
                      : !cJSON_IsArray(arr)                                                     ? "no 'migrants' array"
                      : !cJSON_IsNumber(gen)                                                    ? "no 'generation'"
                      : gen->valuedouble != generation                                          ? "another generation's"
                      : cJSON_GetArraySize(arr) > EVO_ISLAND_MAX_MIGRANTS                       ? "too many migrants"
                                                                                                : NULL;
    if (bad) {
        cJSON_Delete(root);
        return evo_fail(err, EVO_E_COMM, "migrants for generation %d: %s message: %.120s", generation, bad,
                        text ? text : "");
    }
    const int n = cJSON_GetArraySize(arr);
    evo_migrant *m = evo_xcalloc((size_t)(n ? n : 1), sizeof *m);
    int k = 0;
    const cJSON *o;
    cJSON_ArrayForEach(o, arr)
    {
        evo_migrant *x = &m[k];
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(o, "shapes");
        if (!copy_str(o, "genome", x->genome, sizeof x->genome) || !copy_str(o, "gpu", x->gpu, sizeof x->gpu) ||
            !cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > EVO_MAX_SHAPES) {
            free(m);
            cJSON_Delete(root);
            return evo_fail(err, EVO_E_COMM, "migrants for generation %d: migrant %d is malformed", generation, k);
        }
        x->fitness = opt_num(o, "fitness");
        x->fitness_lo = opt_num(o, "fitness_lo");
        x->fitness_hi = opt_num(o, "fitness_hi");
        const cJSON *y;
        cJSON_ArrayForEach(y, sh)
        {
            if (!copy_str(y, "shape", x->shapes[x->n_shapes].shape, sizeof x->shapes[0].shape)) continue;
            x->shapes[x->n_shapes].median_us = opt_num(y, "median_us");
            x->shapes[x->n_shapes].speedup = opt_num(y, "speedup");
            x->n_shapes++;
        }
        k++;
    }
    cJSON_Delete(root);
    *out = m, *n_out = k;
    return EVO_OK;
}

evo_status evo_island_post(evo_island *is, int generation, const evo_migrant *out, int n_out, evo_err *err)
{
    const int n = evo_island_size(is), me = evo_island_rank(is);
    if (is->n_posts == MAX_POSTS) { /* the oldest was taken long ago unless the next island is that far behind */
        evo_status s = evo_comm_wait(is->comm, is->posts[0], err);
        memmove(is->posts, is->posts + 1, (MAX_POSTS - 1) * sizeof is->posts[0]);
        is->n_posts--;
        if (s != EVO_OK) return s;
    }
    char *msg = evo_island_encode(me, generation, out, n_out);
    evo_status s = evo_comm_post(is->comm, (me + 1) % n, msg, strlen(msg), &is->posts[is->n_posts], err);
    free(msg);
    if (s == EVO_OK) is->n_posts++;
    is->broken |= s != EVO_OK;
    return s;
}

evo_status evo_island_take(evo_island *is, int generation, evo_migrant **in, int *n_in, evo_err *err)
{
    *in = NULL, *n_in = 0;
    const int n = evo_island_size(is), me = evo_island_rank(is);
    char *got = NULL;
    size_t got_n = 0;
    evo_status s = evo_comm_take(is->comm, (me + n - 1) % n, &got, &got_n, err);
    if (s == EVO_OK) s = evo_island_decode(got, generation, in, n_in, err);
    free(got);
    is->broken |= s != EVO_OK; /* a message not of this build's kind included: the ranks disagree */
    return s;
}

bool evo_island_broken(const evo_island *is) { return is && is->broken; }

evo_status evo_island_flush(evo_island *is, evo_err *err)
{
    if (is->broken) return evo_fail(err, EVO_E_COMM, "islands: the job's messages failed earlier");
    evo_status s = EVO_OK;
    for (int i = 0; i < is->n_posts; i++) {
        const evo_status w = evo_comm_wait(is->comm, is->posts[i], err);
        if (s == EVO_OK) s = w;
    }
    is->n_posts = 0;
    return s;
}

/* ---- the hand-over ---- */

static void remove_db(const char *path)
{
    char side[4200];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path), unlink(side);
    snprintf(side, sizeof side, "%s-shm", path), unlink(side);
}

/* A private directory for the copies (removed afterwards). */
static char *scratch_dir(evo_err *err)
{
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    evo_str p = {0};
    evo_str_appendf(&p, "%s/evo-islands-XXXXXX", tmpdir);
    char *dir = evo_str_take(&p);
    if (!mkdtemp(dir)) {
        evo_fail(err, EVO_E_IO, "%s: cannot create a directory for the stores' copies", tmpdir);
        free(dir);
        return NULL;
    }
    return dir;
}

evo_status evo_island_gather(evo_island *is, const char *island_db, const char *out_db, FILE *out, bool quiet,
                             evo_err *err)
{
    const int n = evo_island_size(is), me = evo_island_rank(is);
    char *dir = scratch_dir(err);
    evo_str p = {0};
    evo_str_appendf(&p, "%s/island.db", dir ? dir : "/nonexistent");
    char *copy = evo_str_take(&p);
    evo_status s = dir ? EVO_OK : EVO_E_IO;
    if (s == EVO_OK) {
        evo_store *st = NULL;
        /* the island's run has ended: nothing writes its store, which is read without leaving files beside it */
        s = evo_store_open(island_db, EVO_STORE_IMMUTABLE, &st, err);
        if (s == EVO_OK) s = evo_store_copy(st, copy, err);
        evo_store_close(st);
    }
    if (me != 0) {
        /* an island whose copy failed sends an empty file, which rank 0 passes over */
        evo_err why = {0};
        if (s != EVO_OK) {
            remove_db(copy);
            FILE *f = dir ? fopen(copy, "w") : NULL;
            if (f) fclose(f);
        }
        evo_status sent = evo_comm_send_file(is->comm, 0, copy, s == EVO_OK ? err : &why);
        if (s == EVO_OK) s = sent;
    } else {
        evo_store *o = NULL;
        evo_status so = evo_store_open(out_db, EVO_STORE_READWRITE, &o, s == EVO_OK ? err : NULL);
        if (s == EVO_OK) s = so;
        int merged = 0;
        for (int r = 0; r < n; r++) {
            evo_str q = {0};
            evo_str_appendf(&q, "%s/island%d.db", dir ? dir : "/nonexistent", r);
            char *from = evo_str_take(&q);
            evo_err why = {0};
            evo_status sr = EVO_OK;
            size_t bytes = 0;
            if (r == 0) {
                if (rename(copy, from) != 0) sr = EVO_E_IO;
                struct stat sb;
                bytes = sr == EVO_OK && stat(from, &sb) == 0 ? (size_t)sb.st_size : 0;
            } else {
                sr = evo_comm_recv_file(is->comm, r, from, &bytes, &why);
            }
            if (sr == EVO_OK && bytes == 0) {
                if (!quiet) fprintf(out, "islands: island %d sent no store (its copy failed; see its own error)\n", r);
            } else if (sr == EVO_OK && o) {
                evo_merge_counts a, k;
                sr = evo_store_merge(o, from, &a, &k, &why);
                if (sr == EVO_OK) {
                    merged++;
                    if (!quiet)
                        fprintf(out,
                                "islands: merged island %d into %s: %lld runs, %lld candidates (%lld there already), "
                                "%lld evaluations, %lld lineage edges, %lld generations\n",
                                r, out_db, (long long)a.runs, (long long)a.candidates, (long long)k.candidates,
                                (long long)a.evaluations, (long long)a.lineage, (long long)a.generations);
                }
            }
            if (sr != EVO_OK && s == EVO_OK) s = evo_fail(err, sr, "islands: island %d: %s", r, why.msg);
            remove_db(from);
            free(from);
        }
        evo_store_close(o);
        if (!quiet && s == EVO_OK)
            fprintf(out, "islands: %d of %d island stores merged into %s (the islands' own stores stay: %s.rank<R>)\n",
                    merged, n, out_db, out_db);
    }
    remove_db(copy);
    free(copy);
    if (dir) rmdir(dir);
    free(dir);
    return s;
}
