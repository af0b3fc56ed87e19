/* nvrtc_support.h — compiles templates/support.cu with NVRTC for one architecture, for the tests that need it
 * (test_support_nvrtc.c without a GPU, gpu_support.c with one). Header-only: each test is one program.
 * The options are the ones the worker must use: architecture and ptxas verbosity, nothing that loosens
 * floating point (support.cu relies on accurate expf and IEEE division).
 */
#ifndef EVO_TESTS_NVRTC_SUPPORT_H
#define EVO_TESTS_NVRTC_SUPPORT_H

#include "templates.h"
#include "util.h"

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *image; /* cubin (arch "sm_XX") or PTX (arch "compute_XX"), malloc'd */
    size_t size;
    char *log; /* compiler and ptxas output, malloc'd, NUL-terminated */
} support_build;

/* 0 on success; on failure -1 with b->log holding the reason. name: the program's name; extra_header: one more
 * embedded header it includes besides evo_numerics.cuh (NULL: none). */
static int support_compile_named(const char *src, const char *name, const char *extra_header, const char *arch,
                                 support_build *b)
{
    memset(b, 0, sizeof *b);
    char opt_arch[64];
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);
    int cubin = strncmp(arch, "sm_", 3) == 0;
    const char *opts[] = {opt_arch, "--ptxas-options=-v"};
    nvrtcProgram prog;
    const char *numerics = "", *extra = "";
    evo_template_get("evo_numerics.cuh", &numerics, NULL, NULL);
    if (extra_header) evo_template_get(extra_header, &extra, NULL, NULL);
    const char *hdr_names[] = {"evo_numerics.cuh", extra_header}, *hdr_texts[] = {numerics, extra};
    nvrtcResult r = nvrtcCreateProgram(&prog, src, name, extra_header ? 2 : 1, hdr_texts, hdr_names);
    if (r != NVRTC_SUCCESS) {
        b->log = evo_strdup(nvrtcGetErrorString(r));
        return -1;
    }
    r = nvrtcCompileProgram(prog, cubin ? 2 : 1, opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    b->log = evo_xcalloc(log_size + 64, 1);
    nvrtcGetProgramLog(prog, b->log);
    if (r != NVRTC_SUCCESS) {
        size_t n = strlen(b->log);
        snprintf(b->log + n, 64, "\n(%s)", nvrtcGetErrorString(r));
        nvrtcDestroyProgram(&prog);
        return -1;
    }
    if (cubin) {
        nvrtcGetCUBINSize(prog, &b->size);
        b->image = evo_xmalloc(b->size);
        nvrtcGetCUBIN(prog, b->image);
    } else {
        nvrtcGetPTXSize(prog, &b->size);
        b->image = evo_xmalloc(b->size);
        nvrtcGetPTX(prog, b->image);
    }
    nvrtcDestroyProgram(&prog);
    return 0;
}

static inline int support_compile(const char *src, const char *arch, support_build *b)
{
    return support_compile_named(src, "support.cu", NULL, arch, b);
}

static void support_build_free(support_build *b)
{
    free(b->image);
    free(b->log);
    memset(b, 0, sizeof *b);
}

/* The kernels support.cu must define (extern "C", so these are also their symbol names). */
static const char *const support_kernels[] = {
    "evo_gen_inputs",   "evo_half_to_float",        "evo_compare_reset",  "evo_compare",
    "evo_canary_check", "evo_compare_slices_reset", "evo_compare_slices",
};
/* tasks/attention_fp8/attn_ref.cu's (attention's reference kernels). */
static const char *const attn_ref_kernels[] = {"evo_quantize", "evo_dequantize", "evo_reference_attention",
                                               "evo_reference_attention_rowwise", "evo_perturb_codes"};
/* tasks/attention_fp8/attn_support.cu's (it includes attn_numerics.h). */
static const char *const attn_support_kernels[] = {"evo_gen_probe", "evo_fp8_model_attention"};

#endif
