/* test_islands.c — the island model's parts that need no MPI: seeds from (seed, rank), store names, the GPU share of
 * a rank, runs.island, and the migrants' message (round trip, size, refusals). `mpirun` itself: tests/cli_islands.sh.
 * Run: build/tests/test_islands
 */
#include "check.h"
#include "islands.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_seeds(void)
{
    CHECK(evo_island_seed(1, 0) == 1); /* one island is the plain run */
    CHECK(evo_island_seed(42, 0) == 42);
    uint64_t s[16];
    for (int r = 0; r < 16; r++) {
        s[r] = evo_island_seed(7, r);
        CHECK(s[r] <= (uint64_t)INT64_MAX); /* the store keeps a signed 64-bit seed */
        for (int q = 0; q < r; q++) CHECK(s[q] != s[r]);
    }
    CHECK(evo_island_seed(7, 3) == s[3]); /* a function of (seed, rank) only */
    CHECK(evo_island_seed(8, 3) != s[3]);
    CHECK(evo_island_seed(1, 1) == 6878622605533214259ull); /* what a job of seed 1 stored for island 1 */
}

static void test_names_and_gpus(void)
{
    char *p = evo_island_store_path("runs/pop.db", 12);
    CHECK_STR(p, "runs/pop.db.rank12");
    free(p);
    int g[8], n;
    n = evo_island_gpu_share(1, 2, 8, g, 8); /* 8 GPUs, 2 ranks on the host: every other GPU */
    CHECK_EQ_INT(n, 4);
    CHECK(g[0] == 1 && g[1] == 3 && g[2] == 5 && g[3] == 7);
    n = evo_island_gpu_share(0, 2, 2, g, 8); /* two GPUs, two ranks: one each */
    CHECK(n == 1 && g[0] == 0);
    n = evo_island_gpu_share(1, 2, 2, g, 8);
    CHECK(n == 1 && g[0] == 1);
    n = evo_island_gpu_share(3, 4, 1, g, 8); /* srun --gpus-per-task=1: each rank sees one GPU, ordinal 0 */
    CHECK(n == 1 && g[0] == 0);
    n = evo_island_gpu_share(2, 4, 3, g, 8); /* fewer GPUs than ranks: ranks share */
    CHECK(n == 1 && g[0] == 2);
}

static void test_json(void)
{
    int rank, n, every, m, pipe = -1;
    uint64_t seed;
    evo_err err = {0};
    CHECK_EQ_INT(evo_island_parse_json("{\"rank\":2,\"islands\":4,\"migrate_every\":5,\"migrants\":2,\"seed\":9,"
                                       "\"pipelined\":1}",
                                       &rank, &n, &every, &m, &seed, &pipe, &err),
                 EVO_OK);
    CHECK(rank == 2 && n == 4 && every == 5 && m == 2 && seed == 9 && pipe == 1);
    /* a job of the first, lock-step islands has no "pipelined" */
    CHECK_EQ_INT(evo_island_parse_json("{\"rank\":2,\"islands\":4,\"migrate_every\":5,\"migrants\":2,\"seed\":9}",
                                       &rank, &n, &every, &m, &seed, &pipe, &err),
                 EVO_OK);
    CHECK(pipe == 0);
    CHECK_EQ_INT(evo_island_parse_json("{\"rank\":2,\"islands\":4,\"migrate_every\":5,\"migrants\":2,\"seed\":9,"
                                       "\"pipelined\":2}",
                                       &rank, &n, &every, &m, &seed, &pipe, &err),
                 EVO_E_DB);
    CHECK_EQ_INT(evo_island_parse_json("{\"rank\":2,\"islands\":4,\"migrants\":2,\"seed\":9}", &rank, &n, &every, &m,
                                       &seed, &pipe, &err),
                 EVO_E_DB);
    CHECK(strstr(err.msg, "runs.island: not what evo writes") != NULL);
    CHECK_EQ_INT(evo_island_parse_json(NULL, &rank, &n, &every, &m, &seed, &pipe, &err), EVO_E_DB);
}

static evo_migrant migrant(const char *genome, double f)
{
    evo_migrant m;
    memset(&m, 0, sizeof m);
    snprintf(m.genome, sizeof m.genome, "%s", genome);
    m.fitness = f, m.fitness_lo = f - 0.01, m.fitness_hi = f + 0.01;
    snprintf(m.gpu, sizeof m.gpu, "NVIDIA H200 (GPU 1)");
    static const char *shapes[] = {"mission(1,8,512,64)", "small(2,8,512,64)", "long(2,8,2048,64)", "wide(2,8,512,128)",
                                   "stress(4,8,2048,64)"};
    for (int k = 0; k < 5; k++) {
        snprintf(m.shapes[k].shape, sizeof m.shapes[k].shape, "%s", shapes[k]);
        m.shapes[k].median_us = 6.5 + 10 * k;
        m.shapes[k].speedup = f + 0.001 * k;
    }
    m.n_shapes = 5;
    return m;
}

static void test_message(void)
{
    /* a genome of attention's full space, as configs/hopper.yaml writes one */
    const char *g = "TILE_M=64,TILE_N=128,WARPS_M=4,WARPS_N=1,STAGES=2,SWIZZLE=1,PV_MMA=1,QK_8BIT=1,F16_SMEM=0,"
                    "MIN_BLOCKS=1,FAST_EXP=1,CAUSAL_PAIR=1,BIG_TILE_M=128,BIG_TILE_N=64,FAMILY=1,H_WG_ROWS=64,"
                    "H_CONSUMERS=2,H_TILE_N=128,H_STAGES=2,H_PIPE=1,H_QK_MODE=0,H_V_PATH=1,H_OVERLAP=1,"
                    "H_PINGPONG=0,H_O_ACC=0,H_PERSIST=0,H_PRODUCER_REGS=40";
    evo_migrant out[2] = {migrant(g, 1.25), migrant("TILE_M=32,TILE_N=64", 1.125)};
    out[1].fitness_lo = out[1].fitness_hi = NAN; /* unknown travels as absent */
    char *text = evo_island_encode(3, 10, out, 2);
    /* docs/architecture.md quotes this size: two migrants with five shapes, the larger genome of hopper.yaml */
    printf("migrants message: %zu bytes for 2 migrants (5 shapes each)\n", strlen(text));
    CHECK(strlen(text) < 2000);
    evo_migrant *in = NULL;
    int n = 0;
    evo_err err = {0};
    CHECK_EQ_INT(evo_island_decode(text, 10, &in, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK_STR(in[0].genome, g);
        CHECK(in[0].fitness == 1.25 && in[0].fitness_lo == 1.24 && in[0].fitness_hi == 1.26);
        CHECK_STR(in[0].gpu, "NVIDIA H200 (GPU 1)");
        CHECK_EQ_INT(in[0].n_shapes, 5);
        CHECK_STR(in[0].shapes[4].shape, "stress(4,8,2048,64)");
        CHECK(in[0].shapes[4].median_us == 46.5);
        CHECK(isnan(in[1].fitness_lo) && isnan(in[1].fitness_hi) && in[1].fitness == 1.125);
    }
    free(in);
    /* a message for another generation is not taken for this one */
    CHECK_EQ_INT(evo_island_decode(text, 11, &in, &n, &err), EVO_E_COMM);
    CHECK(strstr(err.msg, "migrants for generation 11: another generation's message") != NULL);
    free(text);
    const char *bad[] = {"", "[]", "{\"migrants\":[]}", "{\"evo_migrants\":\"0.1.0\",\"generation\":10}",
                         "{\"evo_migrants\":\"0.1.0\",\"generation\":10,\"migrants\":[{\"gpu\":\"x\",\"shapes\":[]}]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = '\0';
        CHECK_EQ_INT(evo_island_decode(bad[i], 10, &in, &n, &err), EVO_E_COMM);
        CHECK(strstr(err.msg, "migrants for generation 10") != NULL);
    }
    /* no migrants at all is a message too (an island with nothing OK yet) */
    text = evo_island_encode(0, 5, NULL, 0);
    CHECK_EQ_INT(evo_island_decode(text, 5, &in, &n, &err), EVO_OK);
    CHECK_EQ_INT(n, 0);
    free(in);
    free(text);
}

int main(void)
{
    test_seeds();
    test_names_and_gpus();
    test_json();
    test_message();
    return check_result();
}
