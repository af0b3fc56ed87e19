/* test_sm90_family.c — the sm_90a attention family without a GPU: the host rules (attn_sm90_check), launch geometry,
 * shared-memory formula and name expressions of tasks/attention_fp8/attn_sm90_host.c, and an NVRTC compile of a sample
 * of legal genomes for sm_90a with no spills and no stack (what the worker's compile gate would see).
 */
#include "../tasks/attention_fp8/attn_sm90_host.c"

#include "check.h"

#include <nvrtc.h>
#include <stdlib.h>

static char *slurp(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", EVO_SOURCE_DIR, rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = 0;
    fclose(f);
    return buf;
}

/* 0 when g compiles for sm_90a with no spill and no stack frame; registers into *regs. */
static int compile_one(const char *src, const char *abi, const evo_sm90_genome *g, int d, int *regs)
{
    char expr[256];
    CHECK(attn_sm90_name_expr(g, d, expr, sizeof expr) > 0);
    nvrtcProgram prog;
    const char *names[] = {"evo_attention_abi.h"}, *hdrs[] = {abi};
    CHECK(nvrtcCreateProgram(&prog, src, "attention_fp8_sm90.cu", 1, hdrs, names) == NVRTC_SUCCESS);
    CHECK(nvrtcAddNameExpression(prog, expr) == NVRTC_SUCCESS);
    const char *opts[] = {"--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v"};
    const nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    char *log = calloc(n + 1, 1);
    nvrtcGetProgramLog(prog, log);
    int stack = -1, st = -1, ld = -1;
    *regs = -1;
    const char *u = strstr(log, "Used ");
    if (u) sscanf(u, "Used %d registers", regs);
    const char *sp = strstr(log, " bytes stack frame");
    if (sp) {
        while (sp > log && sp[-1] >= '0' && sp[-1] <= '9') sp--;
        sscanf(sp, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack, &st, &ld);
    }
    const int bad = r != NVRTC_SUCCESS || stack != 0 || st != 0 || ld != 0;
    if (bad) fprintf(stderr, "%s:\n%s\n", expr, log);
    free(log);
    nvrtcDestroyProgram(&prog);
    return bad;
}

static int has(const char *s, const char *word) { return s && strstr(s, word) != NULL; }

int main(void)
{
    /* rules: concrete accept / reject with the reason */
    const evo_sm90_genome best = {64, 2, 128, 4, 2, 1, 0, 1, 1, 0, 40, 0};
    CHECK(attn_sm90_check(&best, 128, 227 * 1024) == NULL);
    CHECK(attn_sm90_check(&best, 96, 227 * 1024) != NULL);
    CHECK(attn_sm90_smem_bytes(&best, 128) == 16384 + 8 * 16384 + 4 * 16384 + (3 + 28) * 8 + 1024);
    CHECK(attn_sm90_check(&best, 128, 100 * 1024) != NULL); /* over a smaller device's shared memory */
    evo_sm90_genome g = best;
    g.o_acc = 1; /* Q in registers, S, O and the P·V tile: 224 of 232 registers */
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "registers"));
    g = best;
    g.producer_regs = 24;
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "PRODUCER_REGS"));
    g = best;
    g.persist = 1; /* the persistent loop needs 56 producer registers */
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) != NULL);
    g.producer_regs = 56;
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) == NULL);
    g.persist = 2; /* head by head: the same rules */
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) == NULL);
    g.producer_regs = 40;
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "PRODUCER_REGS"));
    g.persist = 3;
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "PERSIST must be 0, 1"));
    /* V_PATH 5 (Vᵀ by TMA, e4m3 scores): the producer only issues TMA, so 24 registers do, 32 with PERSIST 2 (head by
     * head), where 24 spilled (tools/sm90_nvrtc_check --producer-below 56 --vpath 5) */
    const evo_sm90_genome tma5 = {64, 2, 192, 2, 2, 0, 5, 1, 1, 0, 24, 0};
    CHECK(attn_sm90_check(&tma5, 128, 227 * 1024) == NULL);
    g = tma5;
    g.persist = 1;
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) == NULL);
    g.persist = 2;
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "PRODUCER_REGS"));
    g.producer_regs = 32; /* and the consumers get (3 · 168 − 32) / 2, 232: 40 free beside the 192-key tile */
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) == NULL && attn_sm90_reg_slack(&g, 128) == 40);
    g.qk_mode = 2, g.tile_n = 128, g.persist = 0; /* FP16 scores: the producer converts K, 40 needed */
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "PRODUCER_REGS"));
    /* FP16 scores with PERSIST and a producer warpgroup: V_PATH 1 and 3 only (the rest spills at head dim 64) */
    g.producer_regs = 56, g.persist = 2;
    CHECK(has(attn_sm90_check(&g, 64, 227 * 1024), "PERSIST with QK_MODE=2"));
    g.v_path = 3; /* K and V given in FP16: the exact class's large-problem genome, persistent */
    CHECK(attn_sm90_check(&g, 64, 227 * 1024) == NULL && attn_sm90_check(&g, 128, 227 * 1024) == NULL);
    g.pipe = 1, g.overlap = 0, g.pingpong = 0, g.v_path = 0; /* no producer warpgroup: no such rule */
    CHECK(attn_sm90_check(&g, 64, 227 * 1024) == NULL);
    g = best;
    g.pingpong = 1, g.consumers = 3;
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "PINGPONG"));
    g = best;
    g.pipe = 1;
    CHECK(has(attn_sm90_check(&g, 128, 227 * 1024), "OVERLAP"));
    /* three consumers, 128 keys a tile, V_PATH 5: 192-row blocks at head dim 64; at 128 the accumulators (S 64 + O 68
     * + P̃ 16 + 4) and 32 free exceed the 152 registers each of three gets, so that kernel is built with two */
    const evo_sm90_genome c3 = {64, 3, 128, 2, 2, 0, 5, 1, 0, 0, 56, 0};
    CHECK(attn_sm90_check(&c3, 64, 227 * 1024) == NULL);
    CHECK(has(attn_sm90_check(&c3, 128, 227 * 1024), "registers"));
    evo_sm90_genome at = attn_sm90_at_dim(&c3, 64);
    CHECK(at.consumers == 3 && attn_sm90_threads(&at) == 512 && attn_sm90_rows_per_block(&at) == 192);
    at = attn_sm90_at_dim(&c3, 128);
    CHECK(at.consumers == 2 && at.pingpong == 0 && attn_sm90_threads(&at) == 384 &&
          attn_sm90_rows_per_block(&at) == 128);
    CHECK(attn_sm90_check(&at, 128, 227 * 1024) == NULL);
    at.consumers = 3; /* the rest of the genome is unchanged */
    CHECK(memcmp(&at, &c3, sizeof at) == 0);
    at = attn_sm90_at_dim(&best, 128); /* two consumers: as given */
    CHECK(memcmp(&at, &best, sizeof at) == 0);
    g = c3;
    g.persist = 2; /* V_PATH 5: the persistent loop needs 32 free registers as well (every such genome compiled
                      without spills, tools/sm90_nvrtc_check --slack 32,47 --persist), and three leave 32 */
    CHECK(attn_sm90_reg_slack(&g, 64) == 32 && attn_sm90_check(&g, 64, 227 * 1024) == NULL);
    g.v_path = 0, g.persist = 0; /* e4m3 P·V summed by the softmax: 40 free, enough without PERSIST... */
    CHECK(attn_sm90_reg_slack(&g, 64) == 40 && attn_sm90_check(&g, 64, 227 * 1024) == NULL);
    g.persist = 2; /* ...but not with it (48), so three do not fit at head dim 64 (illegal genome) */
    at = attn_sm90_at_dim(&g, 64);
    CHECK(at.consumers == 3 && has(attn_sm90_check(&at, 64, 227 * 1024), "registers"));
    /* 192-key tiles at head dim 128 with PERSIST 2 and V_PATH 5: S 96 + O 68 + P̃ 24 + 4, 32 of 224 free */
    const evo_sm90_genome t192 = {64, 2, 192, 2, 2, 0, 5, 1, 1, 0, 56, 2};
    CHECK(attn_sm90_reg_slack(&t192, 128) == 32 && attn_sm90_check(&t192, 128, 227 * 1024) == NULL);
    g = t192;
    g.v_path = 0; /* e4m3 P·V summed by the softmax: 40 free, short of the 48 PERSIST needs there */
    CHECK(attn_sm90_reg_slack(&g, 128) == 40 && has(attn_sm90_check(&g, 128, 227 * 1024), "registers"));
    g.persist = 0;
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) == NULL);
    g = c3;
    g.tile_n = 256, g.o_acc = 1; /* S 128 + O 68 twice + P̃ 32: two do not fit at 128 either, so three stay */
    at = attn_sm90_at_dim(&g, 128);
    CHECK(at.consumers == 3 && has(attn_sm90_check(&at, 128, 227 * 1024), "registers"));
    /* 256-key tiles, two consumers, V_PATH 5, PERSIST 2: at head dim 64 S 128 + O 36 + P̃ 32 + 4 leave 24 of 224
     * (enough for two 64-row consumers with V_PATH 4 and 5: tools/sm90_nvrtc_check --slack 24,31); at 128 they do not
     * fit, and that kernel is built with 192-key tiles */
    const evo_sm90_genome t256 = {64, 2, 256, 2, 2, 0, 5, 1, 1, 0, 56, 2};
    CHECK(attn_sm90_reg_slack(&t256, 64) == 24 && attn_sm90_check(&t256, 64, 227 * 1024) == NULL);
    CHECK(has(attn_sm90_check(&t256, 128, 227 * 1024), "registers"));
    at = attn_sm90_at_dim(&t256, 64);
    CHECK(memcmp(&at, &t256, sizeof at) == 0);
    at = attn_sm90_at_dim(&t256, 128);
    CHECK(at.tile_n == 192 && attn_sm90_check(&at, 128, 227 * 1024) == NULL);
    at.tile_n = 256; /* the rest of the genome is unchanged */
    CHECK(memcmp(&at, &t256, sizeof at) == 0);
    g = t256;
    g.qk_mode = 1; /* Q in registers (D/8 more): 16 free at 64, short of the 28 that needs */
    CHECK(has(attn_sm90_check(&g, 64, 227 * 1024), "registers"));
    g = t256;
    g.v_path = 1; /* FP16 P·V (P̃ 64 registers): neither head dim fits, so 128 keeps the genome's tile */
    CHECK(has(attn_sm90_check(&g, 64, 227 * 1024), "registers"));
    at = attn_sm90_at_dim(&g, 128);
    CHECK(at.tile_n == 256);
    g = best;
    g.tile_n = 96;
    CHECK(attn_sm90_check(&g, 128, 227 * 1024) != NULL);
    /* V_PATH 2 (V given in FP16, the FP16-V entry of exported files): the TMA thread loads V, so PIPE 2 only; V_PATH
     * 1's shared memory but the raw V ring (STAGES · TILE_N · D bytes) */
    const evo_sm90_genome afb = {64, 2, 128, 2, 2, 1, 1, 1, 1, 0, 56, 0}; /* afb8908b, the fp8 class's best */
    evo_sm90_genome v1 = afb, v2 = afb;
    v2.v_path = 2;
    CHECK(attn_sm90_check(&v2, 128, 227 * 1024) == NULL);
    CHECK(attn_sm90_smem_bytes(&v2, 128) == attn_sm90_smem_bytes(&v1, 128) - 2 * 128 * 128);
    v2.pipe = 1, v2.overlap = 0, v2.pingpong = 0;
    CHECK(has(attn_sm90_check(&v2, 128, 227 * 1024), "V_PATH=2 and 3 need PIPE=2"));
    v2.v_path = 6, v2.pipe = 2, v2.overlap = 1, v2.pingpong = 1;
    CHECK(has(attn_sm90_check(&v2, 128, 227 * 1024), "V_PATH must be"));
    /* V_PATH 5 (V_PATH 4 with Vᵀ given, loaded by the TMA thread): V_PATH 4's plan without the raw V ring, PIPE 2 */
    evo_sm90_genome v5 = afb, v4b = afb;
    v5.v_path = 5, v4b.v_path = 4;
    CHECK(attn_sm90_check(&v5, 128, 227 * 1024) == NULL && attn_sm90_check(&v5, 64, 227 * 1024) == NULL);
    CHECK(attn_sm90_smem_bytes(&v5, 128) == attn_sm90_smem_bytes(&v4b, 128) - 2 * 128 * 128);
    CHECK(attn_sm90_smem_bytes(&v5, 64) == attn_sm90_smem_bytes(&v4b, 64) - 2 * 128 * 64);
    v5.pipe = 1, v5.overlap = 0, v5.pingpong = 0;
    CHECK(has(attn_sm90_check(&v5, 128, 227 * 1024), "V_PATH=5 needs PIPE=2"));
    CHECK(attn_sm90_vt_seq(1) == 16 && attn_sm90_vt_seq(16) == 16 && attn_sm90_vt_seq(4097) == 4112);
    /* V_PATH 4 (e4m3 P·V whose GEMM also sums P̃): V_PATH 0's plan with 8 rows of ones in each Vᵀ column block (a
     * stage of TILE_N · (D + 8) bytes, rounded up to 1 KiB), the producer's transform warps only (PIPE 2) */
    evo_sm90_genome v0 = afb, v4 = afb;
    v0.v_path = 0, v4.v_path = 4;
    CHECK(attn_sm90_check(&v4, 128, 227 * 1024) == NULL && attn_sm90_check(&v4, 64, 227 * 1024) == NULL);
    CHECK(attn_sm90_smem_bytes(&v4, 128) == attn_sm90_smem_bytes(&v0, 128) + 2 * 1024);
    CHECK(attn_sm90_smem_bytes(&v4, 64) == attn_sm90_smem_bytes(&v0, 64) + 2 * 1024);
    v4.pipe = 1, v4.overlap = 0, v4.pingpong = 0;
    CHECK(has(attn_sm90_check(&v4, 128, 227 * 1024), "V_PATH=4 needs PIPE=2"));
    /* V_PATH 3 (K and V in FP16: the FP16-K-and-V entry, and a genome whose K and V are converted once per call):
     * for the FP16 Q·Kᵀ only; V_PATH 1's shared memory but the raw K and V rings */
    v2.v_path = 3;
    CHECK(has(attn_sm90_check(&v2, 128, 227 * 1024), "V_PATH=3 needs QK_MODE=2"));
    const evo_sm90_genome e1f = {64, 3, 64, 2, 2, 2, 1, 1, 0, 0, 56, 0}; /* e1f273e5, the exact class's best */
    evo_sm90_genome k1 = e1f, k3 = e1f;
    k3.v_path = 3;
    CHECK(attn_sm90_check(&k3, 128, 227 * 1024) == NULL && attn_sm90_check(&k3, 64, 227 * 1024) == NULL);
    /* without the raw K and V rings (2 stages of 64 x 128 bytes each), k3 has room for the output staging rows (3
     * consumer warpgroups x 4 warps x 16 rows of 2 * 128 + 16 bytes), k1 has not (189576 + 52224 > 227 KB) */
    CHECK(attn_sm90_smem_bytes(&k1, 128) == 189576);
    CHECK(attn_sm90_smem_bytes(&k3, 128) == attn_sm90_smem_bytes(&k1, 128) - 2 * 2 * 64 * 128 + 3 * 4 * 16 * 272);
    /* at head dim 64 they fit beside k1's plan: Q 192 x 64, rings 2 x (K, V raw 64 x 64) + 2 x (FP16 V and ones 64 x 128
     * x 2, FP16 K 64 x 64 x 2), FP16 Q, staging 12 warps x 16 x (128 + 16), 17 barriers, 1 KiB alignment slack */
    CHECK(attn_sm90_smem_bytes(&k1, 64) == 12288 + 65536 + 24576 + 12 * 16 * 144 + 17 * 8 + 1024);

    /* geometry */
    CHECK(attn_sm90_threads(&best) == 384);
    CHECK(attn_sm90_rows_per_block(&best) == 128);
    unsigned grid[3];
    attn_sm90_grid(&best, 4, 16, 4097, 132, grid);
    CHECK(grid[0] == 33 && grid[1] == 16 && grid[2] == 4);
    g = best;
    g.persist = 1, g.producer_regs = 56;
    attn_sm90_grid(&g, 4, 16, 4097, 132, grid);
    CHECK(grid[0] == 132 && grid[1] == 1 && grid[2] == 1);
    attn_sm90_grid(&g, 1, 1, 77, 132, grid); /* fewer items than SMs */
    CHECK(grid[0] == 1);
    char expr[128];
    CHECK(attn_sm90_name_expr(&best, 128, expr, sizeof expr) > 0);
    CHECK(strcmp(expr, "evo_attn_sm90<128,64,2,128,4,2,1,0,1,1,0,40,0>") == 0);
    CHECK(attn_sm90_name_expr(&best, 128, expr, 10) == -1);

    /* NVRTC, sm_90a: the genomes the bench measured plus a spread of the legal grid, no spills. Skipped where
     * EVO_TEST_NO_NVRTC is set (tools/test.sh's sanitizer build: the time is NVRTC's, the rules above are evo's). */
    if (getenv("EVO_TEST_NO_NVRTC")) {
        printf("test_sm90_family: NVRTC compiles skipped (EVO_TEST_NO_NVRTC)\n");
        return check_result();
    }
    char *src = slurp("tasks/attention_fp8/attention_fp8_sm90.cu"),
         *abi = slurp("tasks/attention_fp8/evo_attention_abi.h");
    CHECK(src && abi);
    const evo_sm90_genome sample[] = {
        {64, 2, 128, 4, 2, 1, 0, 1, 1, 0, 40, 0},
        {64, 2, 128, 3, 2, 1, 0, 1, 1, 0, 56, 1},
        {64, 2, 64, 2, 2, 2, 1, 1, 1, 0, 40, 0},
        {64, 1, 128, 2, 0, 0, 0, 0, 0, 0, 40, 0},
        {64, 1, 128, 2, 1, 0, 0, 0, 0, 0, 40, 0},
        {64, 3, 128, 3, 2, 1, 0, 1, 0, 0, 40, 0},
        {64, 2, 192, 2, 2, 1, 0, 1, 1, 0, 40, 0},
        {128, 2, 64, 3, 2, 1, 0, 1, 0, 0, 40, 0},
        /* V_PATH 4 (the row sum from the e4m3 GEMM) at both head dims, and with exact scores */
        {64, 2, 128, 2, 2, 1, 4, 1, 1, 0, 56, 0},
        {64, 2, 128, 3, 2, 1, 4, 1, 1, 0, 56, 1},
        {64, 2, 64, 2, 2, 2, 4, 1, 1, 1, 56, 0},
        /* PERSIST 2 (head by head): e4m3 Q·Kᵀ with Q in shared memory and FP16 P·V, and V_PATH 4 */
        {64, 2, 128, 2, 2, 0, 1, 1, 0, 0, 56, 2},
        {64, 2, 128, 3, 2, 1, 4, 1, 1, 0, 56, 2},
        /* V_PATH 5 (Vᵀ given): the (4,16,4096,128) shape with PERSIST 2, and TILE_N 192 (64-key column blocks) */
        {64, 2, 128, 2, 2, 0, 5, 1, 1, 0, 56, 2},
        {64, 2, 192, 2, 2, 1, 5, 1, 1, 0, 56, 1},
    };
    const int dims[] = {128, 128, 128, 128, 128, 64, 128, 64, 128, 64, 128, 128, 64, 128, 64};
    /* the fp8 class's shipped winners with V given in FP16: afb8908b at D = 128, 057834dd (persistent, Q in shared
     * memory) at D = 64; the exact class's e1f273e5 with K and V given in FP16 at both; no spill, no stack */
    const evo_sm90_genome v16[] = {{64, 2, 128, 2, 2, 1, 2, 1, 1, 0, 56, 0},
                                   {64, 2, 128, 2, 2, 0, 2, 1, 1, 0, 56, 1},
                                   {64, 3, 64, 2, 2, 2, 3, 1, 0, 0, 56, 0},
                                   {64, 3, 64, 2, 2, 2, 3, 1, 0, 0, 56, 0}};
    const int v16_dims[] = {128, 64, 128, 64};
    int v16_compiled = 0;
    for (size_t i = 0; i < 4; i++) {
        CHECK(attn_sm90_check(&v16[i], v16_dims[i], 227 * 1024) == NULL);
        int regs;
        CHECK(compile_one(src, abi, &v16[i], v16_dims[i], &regs) == 0);
        CHECK(regs > 0 && regs <= 255);
        v16_compiled++;
    }
    CHECK(v16_compiled == 4);
    int compiled = 0;
    for (size_t i = 0; i < sizeof sample / sizeof sample[0]; i++) {
        CHECK(attn_sm90_check(&sample[i], dims[i], 227 * 1024) == NULL);
        int regs;
        CHECK(compile_one(src, abi, &sample[i], dims[i], &regs) == 0);
        CHECK(regs > 0 && regs <= 255);
        compiled++;
    }
    CHECK(compiled == 15);
    free(src);
    free(abi);
    return check_result();
}
