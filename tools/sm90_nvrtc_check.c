/* sm90_nvrtc_check.c — compiles genomes of the sm_90a attention family with NVRTC the way evo's worker would
 * (--gpu-architecture=sm_90a -std=c++17, the ABI header in memory) and reports registers, spills and shared memory.
 *   cc -std=c11 -O2 -Itemplates -Itasks/attention_fp8 -I/usr/local/cuda/include tools/sm90_nvrtc_check.c \
 *      tasks/attention_fp8/attn_sm90_host.c -L/usr/local/cuda/lib64 -lnvrtc -o sm90_nvrtc_check
 *   ./sm90_nvrtc_check [--every N] [--d 64|128] [--cubin-dir DIR] [--slack LO,HI] [--persist] [--distinct]
 *                      [--producer-below R] [--vpath N] [--qk N] [--oacc N] [EVO_DIR]
 *   exit 1 on a failure, a spill or serialized wgmma. --slack keeps the genomes whose consumer registers less their
 *   accumulators (attn_sm90_reg_slack) lie in [LO, HI]; --persist those with PERSIST 1 or 2; --distinct leaves out a
 *   genome that differs from one already kept only in STAGES (the rest sets the registers);
 *   --producer-below R those with a producer warpgroup of fewer than R registers (PIPE 2, two consumers or more);
 *   --vpath N, --qk N, --oacc N those with V_PATH N, QK_MODE N, O_ACC N.
 */
#include "attn_sm90_host.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
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

/* Every genome of the knob grid that attn_sm90_check accepts at head dim d, in a fixed order. */
static int enumerate(int d, evo_sm90_genome *out, int cap)
{
    static const int rows[] = {64, 128}, cons[] = {1, 2, 3}, tiles[] = {64, 128, 192, 256}, stages[] = {2, 3, 4};
    static const int regs[] = {24, 32, 40, 56}, vpaths[] = {0, 1, 3, 4, 5}; /* the genomes' V_PATH values */
    int n = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 4; c++)
                for (int s = 0; s < 3; s++)
                    for (int pipe = 0; pipe < 3; pipe++)
                        for (int qk = 0; qk < 3; qk++)
                            for (int v = 0; v < 5; v++)
                                for (int ov = 0; ov < 2; ov++)
                                    for (int pp = 0; pp < 2; pp++)
                                        for (int oa = 0; oa < 2; oa++)
                                            for (int r = 0; r < 4; r++)
                                                for (int pe = 0; pe < 3; pe++) {
                                                    evo_sm90_genome g = {rows[a], cons[b], tiles[c], stages[s], pipe,
                                                                         qk,      vpaths[v], ov,     pp,        oa,
                                                                         regs[r], pe};
                                                    if (attn_sm90_check(&g, d, 227 * 1024)) continue;
                                                    if (n < cap) out[n] = g;
                                                    n++;
                                                }
    return n;
}

/* g and h differ at most in STAGES */
static int same_but_stages(const evo_sm90_genome *g, const evo_sm90_genome *h)
{
    evo_sm90_genome a = *g, b = *h;
    a.stages = b.stages = 0;
    return !memcmp(&a, &b, sizeof a);
}

int main(int argc, char **argv)
{
    int every = 97, only_d = 0, slack_lo = -1000, slack_hi = 1000, persist_only = 0, distinct = 0, preg_below = 0;
    int vpath = -1, qk = -1, oacc = -1;
    const char *evo_dir = ".", *cubin_dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--every") && i + 1 < argc) every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--d") && i + 1 < argc) only_d = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cubin-dir") && i + 1 < argc) cubin_dir = argv[++i];
        else if (!strcmp(argv[i], "--slack") && i + 1 < argc) {
            if (sscanf(argv[++i], "%d,%d", &slack_lo, &slack_hi) != 2) {
                fprintf(stderr, "%s: --slack takes LO,HI (registers), not '%s'\n", argv[0], argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--persist")) persist_only = 1;
        else if (!strcmp(argv[i], "--distinct")) distinct = 1;
        else if (!strcmp(argv[i], "--producer-below") && i + 1 < argc) preg_below = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--vpath") && i + 1 < argc) vpath = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--qk") && i + 1 < argc) qk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--oacc") && i + 1 < argc) oacc = atoi(argv[++i]);
        else if (argv[i][0] != '-') evo_dir = argv[i];
        else {
            fprintf(stderr,
                    "usage: %s [--every N] [--d 64|128] [--cubin-dir DIR] [--slack LO,HI] [--persist] [--distinct] "
                    "[--producer-below R] [--vpath N] [--qk N] [--oacc N] [EVO_DIR]\n",
                    argv[0]);
            return 2;
        }
    }
    if (every < 1) every = 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/tasks/attention_fp8/attention_fp8_sm90.cu", evo_dir);
    char *src = read_file(path);
    snprintf(path, sizeof path, "%s/tasks/attention_fp8/evo_attention_abi.h", evo_dir);
    char *abi = read_file(path);
    if (!src || !abi) {
        fprintf(stderr, "%s: cannot read the template or the ABI header under %s\n", argv[0], evo_dir);
        return 2;
    }
    int failures = 0, compiled = 0;
    for (int d = 64; d <= 128; d += 64) {
        if (only_d && only_d != d) continue;
        static evo_sm90_genome all[200000];
        int n = enumerate(d, all, 200000);
        if (n > 200000) n = 200000;
        int kept = 0; /* the selection, in order, at the front of all */
        for (int i = 0; i < n; i++) {
            const int sl = attn_sm90_reg_slack(&all[i], d);
            if (sl < slack_lo || sl > slack_hi || (persist_only && !all[i].persist)) continue;
            if (preg_below && !(all[i].pipe == 2 && all[i].consumers >= 2 && all[i].producer_regs < preg_below)) continue;
            if ((vpath >= 0 && all[i].v_path != vpath) || (qk >= 0 && all[i].qk_mode != qk) ||
                (oacc >= 0 && all[i].o_acc != oacc))
                continue;
            int seen = 0;
            for (int k = 0; distinct && k < kept && !seen; k++) seen = same_but_stages(&all[k], &all[i]);
            if (seen) continue;
            all[kept++] = all[i];
        }
        printf("head dim %d: %d legal genomes, %d selected, compiling every %d-th\n", d, n, kept, every);
        n = kept;
        for (int i = 0; i < n; i += every) {
            char expr[256];
            attn_sm90_name_expr(&all[i], d, expr, sizeof expr);
            nvrtcProgram prog;
            const char *hdr_names[] = {"evo_attention_abi.h"}, *hdrs[] = {abi};
            if (nvrtcCreateProgram(&prog, src, "attention_fp8_sm90.cu", 1, hdrs, hdr_names) != NVRTC_SUCCESS) return 1;
            nvrtcAddNameExpression(prog, expr);
            const char *opts[] = {"--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v", "-DNDEBUG"};
            const nvrtcResult r = nvrtcCompileProgram(prog, 4, opts);
            size_t log_size = 0;
            nvrtcGetProgramLogSize(prog, &log_size);
            char *log = calloc(log_size + 1, 1);
            nvrtcGetProgramLog(prog, log);
            int regs = -1, spill_st = -1, spill_ld = -1, stack = -1;
            const char *u = strstr(log, "Used ");
            if (u) sscanf(u, "Used %d registers", &regs);
            const char *sp = strstr(log, " bytes stack frame");
            if (sp) { /* "ptxas . N bytes stack frame, N bytes spill stores, N bytes spill loads" */
                while (sp > log && sp[-1] >= '0' && sp[-1] <= '9') sp--;
                sscanf(sp, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack, &spill_st,
                       &spill_ld);
            }
            const int serialized = strstr(log, "C7512") || strstr(log, "C7513"); /* ptxas: wgmma serialized */
            const int bad = r != NVRTC_SUCCESS || spill_st != 0 || spill_ld != 0 || stack != 0 || serialized;
            printf("%-4s %-64s regs %3d stack %d spills %d/%d smem %d slack %d%s\n", bad ? "FAIL" : "ok", expr, regs,
                   stack, spill_st, spill_ld, attn_sm90_smem_bytes(&all[i], d), attn_sm90_reg_slack(&all[i], d),
                   serialized ? " (wgmma serialized)" : "");
            if (r != NVRTC_SUCCESS || getenv("SM90_LOG")) printf("%s\n", log);
            if (r == NVRTC_SUCCESS && cubin_dir) {
                size_t sz = 0;
                nvrtcGetCUBINSize(prog, &sz);
                char *cubin = malloc(sz);
                nvrtcGetCUBIN(prog, cubin);
                snprintf(path, sizeof path, "%s/sm90_d%d_%d.cubin", cubin_dir, d, i);
                FILE *f = fopen(path, "wb");
                if (f) fwrite(cubin, 1, sz, f), fclose(f);
                free(cubin);
            }
            failures += bad;
            compiled++;
            free(log);
            nvrtcDestroyProgram(&prog);
        }
    }
    printf("%d compiled, %d failed or spilled\n", compiled, failures);
    free(src);
    free(abi);
    return failures ? 1 : 0;
}
