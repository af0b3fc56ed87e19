/* test_quantize_nvrtc.c — tasks/quantize_fp8/quantize_fp8.cu compiles with NVRTC (no GPU needed): a sample of
 * genomes of every mode (modes 4 to 6 and 8 on sm_90 only) for sm_80 and sm_90, with evo_quantize_abi.h given in memory as evo's compile service does;
 * every kernel of each plan is there under its name expression, none spills; the static_asserts reject what an
 * architecture cannot run (CVT = 1 and clusters on sm_80) and illegal knobs.
 * Run: ctest --test-dir build -R test_quantize_nvrtc --output-on-failure
 */
#include "check.h"
#include "util.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *g_src, *g_abi;

/* Compiles g_src for arch with the name expressions; 0 on success, with the lowered names and the log (malloc'd). */
static int compile(const char *arch, const char *const *exprs, int n_exprs, char **lowered, char **log)
{
    char opt_arch[64];
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
    const char *opts[] = {opt_arch, "-std=c++17", "--ptxas-options=-v"};
    const char *hdr_names[] = {"evo_quantize_abi.h"};
    const char *hdrs[] = {g_abi};
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, g_src, "quantize_fp8.cu", 1, hdrs, hdr_names) != NVRTC_SUCCESS) return -1;
    for (int i = 0; i < n_exprs; i++) nvrtcAddNameExpression(prog, exprs[i]);
    nvrtcResult r = nvrtcCompileProgram(prog, 3, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    *log = evo_xcalloc(log_size + 1, 1);
    nvrtcGetProgramLog(prog, *log);
    if (r == NVRTC_SUCCESS) {
        for (int i = 0; i < n_exprs; i++) {
            const char *name = NULL;
            lowered[i] = nvrtcGetLoweredName(prog, exprs[i], &name) == NVRTC_SUCCESS && name ? evo_strdup(name) : NULL;
        }
    }
    nvrtcDestroyProgram(&prog);
    return r == NVRTC_SUCCESS ? 0 : -1;
}

/* "N bytes stack frame, N bytes spill stores, N bytes spill loads" of kernel `name` in a ptxas -v log. */
static int spills(const char *log, const char *name)
{
    char key[512];
    snprintf(key, sizeof key, "Function properties for %s\n", name);
    const char *p = strstr(log, key);
    if (!p) return -1;
    p += strlen(key);
    while (*p && *p != '\n' && (*p < '0' || *p > '9')) p++;
    int stack, st, ld;
    if (sscanf(p, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack, &st, &ld) != 3)
        return -1;
    return stack + st + ld;
}

/* Compiles one genome's kernels (main, plus absmax for mode 0 and rotate for a separate rotation) and checks them. */
static void check_genome(const char *arch, const char *targs, int mode, int sep_rot)
{
    char exprs[3][256];
    const char *ex[3];
    int n = 0;
    snprintf(exprs[n], sizeof exprs[n], "evo_quant<%s>", targs);
    ex[n] = exprs[n], n++;
    if (mode == 0) {
        snprintf(exprs[n], sizeof exprs[n], "evo_quant_absmax<%s>", targs);
        ex[n] = exprs[n], n++;
    }
    if (sep_rot) {
        snprintf(exprs[n], sizeof exprs[n], "evo_quant_rotate<%s>", targs);
        ex[n] = exprs[n], n++;
    }
    char *lowered[3] = {NULL, NULL, NULL}, *log = NULL;
    int rc = compile(arch, ex, n, lowered, &log);
    if (rc != 0) fprintf(stderr, "%s <%s>:\n%s\n", arch, targs, log);
    CHECK_EQ_INT(rc, 0);
    for (int i = 0; rc == 0 && i < n; i++) {
        CHECK(lowered[i] != NULL);
        int s = lowered[i] ? spills(log, lowered[i]) : -1;
        if (s != 0) fprintf(stderr, "%s %s: stack+spills %d\n", arch, ex[i], s);
        CHECK_EQ_INT(s, 0);
        free(lowered[i]);
    }
    free(log);
}

/* The genome must fail to compile, with `why` in the log. */
static void check_rejected(const char *arch, const char *targs, const char *why)
{
    char expr[256];
    snprintf(expr, sizeof expr, "evo_quant<%s>", targs);
    const char *ex[1] = {expr};
    char *lowered[1] = {NULL}, *log = NULL;
    CHECK(compile(arch, ex, 1, lowered, &log) != 0);
    CHECK_CONTAINS(log, why);
    free(lowered[0]);
    free(log);
}

int main(void)
{
    size_t len;
    evo_err err = {0};
    if (evo_read_file(EVO_SOURCE_DIR "/tasks/quantize_fp8/quantize_fp8.cu", &g_src, &len, &err) != EVO_OK ||
        evo_read_file(EVO_SOURCE_DIR "/tasks/quantize_fp8/evo_quantize_abi.h", &g_abi, &len, &err) != EVO_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    /* D, IN_BF16, ROTATE, VEC, WARPS, MODE, CLUSTER, KEEP, UNROLL, ITERS, CVT, CACHE, FUSED_ROT */
    check_genome("sm_80", "128,0,0,16,8,0,1,0,4,2,0,1,1", 0, 0);
    check_genome("sm_80", "64,1,1,16,8,1,1,0,4,1,0,1,1", 1, 0);
    check_genome("sm_80", "128,0,1,16,8,1,1,0,4,1,0,0,0", 1, 1);
    check_genome("sm_80", "64,0,1,16,16,2,1,8,2,1,0,0,1", 2, 0);
    check_genome("sm_90", "128,0,0,32,8,3,1,0,2,2,1,1,1", 3, 0);
    check_genome("sm_90", "128,0,0,16,16,2,8,16,2,1,1,1,1", 2, 0);
    check_genome("sm_90", "128,0,1,16,16,2,16,8,2,1,1,1,1", 2, 0);
    check_genome("sm_90", "128,0,0,32,8,4,1,0,1,4,1,1,1", 4, 0);
    check_genome("sm_90", "64,1,1,16,16,4,1,0,2,4,1,0,1", 4, 0);
    check_genome("sm_90", "128,0,1,16,8,4,1,0,1,4,1,1,0", 4, 1);
    check_genome("sm_90", "128,0,0,16,8,5,16,0,4,1,1,1,1", 5, 0);
    check_genome("sm_90", "128,1,1,32,4,5,8,0,2,1,1,0,1", 5, 0);
    check_genome("sm_90", "64,0,1,8,16,5,16,0,1,1,0,1,0", 5, 1);
    check_genome("sm_90", "128,0,0,16,8,6,1,0,4,2,1,1,1", 6, 0);
    check_genome("sm_90", "64,1,0,32,4,6,1,0,2,2,1,0,1", 6, 0);
    check_genome("sm_90", "128,0,1,16,8,6,1,0,2,2,1,1,1", 6, 0);
    check_genome("sm_90", "128,1,1,16,8,6,1,0,2,2,0,1,0", 6, 1);
    check_genome("sm_80", "128,0,0,16,8,7,1,0,4,1,0,1,1", 7, 0);
    check_genome("sm_90", "128,1,1,32,4,7,1,0,2,1,1,1,1", 7, 0);
    check_genome("sm_90", "64,0,1,16,8,7,1,0,4,1,1,0,0", 7, 1);
    check_genome("sm_90", "128,0,1,32,4,7,1,1,2,1,1,1,1", 7, 0); /* the rotated floats kept in shared memory */
    check_genome("sm_90", "64,1,1,16,8,7,1,1,2,1,0,0,1", 7, 0);
    check_genome("sm_90", "128,1,0,32,8,7,1,1,2,1,1,1,1", 7, 0); /* unrotated: KEEP 1 changes nothing */
    check_genome("sm_90", "128,0,0,32,16,8,8,0,2,1,1,1,1", 8, 0);
    check_genome("sm_90", "64,1,1,16,16,8,4,0,2,2,1,0,1", 8, 0);
    check_genome("sm_90", "128,0,1,32,4,8,16,0,2,2,0,1,0", 8, 1);
    check_rejected("sm_80", "128,0,0,16,8,1,1,0,4,1,1,1,1", "CVT = 1 needs sm_89");
    check_rejected("sm_80", "128,0,0,16,8,6,1,0,4,2,0,1,1", "MODE 6 (streamed) needs sm_90");
    check_rejected("sm_80", "128,0,0,16,16,2,8,16,2,1,0,1,1", "CLUSTER > 1 needs sm_90");
    check_rejected("sm_80", "128,0,0,16,8,4,1,0,1,4,0,1,1", "MODE 4 (resident) needs sm_90");
    check_rejected("sm_90", "128,0,0,16,8,1,1,4,4,1,1,1,1",
                   "CLUSTER is a knob of modes 2, 5 and 8, KEEP of modes 2 and 7");
    check_rejected("sm_80", "128,0,0,16,8,8,8,0,2,1,0,1,1", "MODE 8 (piped) needs sm_90");
    check_rejected("sm_90", "128,0,0,16,32,8,8,0,2,1,1,1,1", "mode 8: KEEP 0, at most 16 consumer warps");
    check_rejected("sm_80", "128,0,0,16,8,5,1,0,4,1,1,1,1", "MODE 5 (staged) needs sm_90");
    check_rejected("sm_90", "128,0,0,16,8,5,16,4,4,1,1,1,1", "mode 5 keeps the head in shared memory: KEEP 0");
    check_rejected("sm_90", "128,0,1,32,4,7,1,2,2,1,1,1,1", "KEEP of modes 2 and 7 (mode 7: 0 or 1");
    check_rejected("sm_90", "96,0,0,16,8,1,1,0,4,1,1,1,1", "D must be 32, 64, 128 or 256");
    check_rejected("sm_90", "256,0,1,8,8,1,1,0,4,1,1,1,1", "a row must span at most 32 lanes");
    check_rejected("sm_90", "128,0,0,32,8,1,1,0,4,2,1,1,1", "two chunks of UNROLL*ITERS*VEC/4 registers");
    free(g_src);
    free(g_abi);
    return check_result();
}
