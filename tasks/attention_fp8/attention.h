/* attention.h — what the attention_fp8 task's files share (task.c: host side; gpu.c: worker side; export.c: the
 * standalone file): the indices of its shape fields, options and variant attributes, and its number formats.
 * Not an engine header: only this task's files include it.
 */
#ifndef EVO_TASK_ATTENTION_H
#define EVO_TASK_ATTENTION_H

#include "config.h"
#include "evo_attention_abi.h"
#include "task.h"

/* Shape fields, in the order of evo_shape.v (the order is part of the shape-set key: never reorder). */
enum { ATTN_BATCH, ATTN_HEADS, ATTN_SEQ, ATTN_DIM, ATTN_CAUSAL, ATTN_SCALE, ATTN_N_FIELDS };
/* Options: top-level config keys. */
enum { ATTN_OPT_FORMAT, ATTN_OPT_SCALE, ATTN_N_OPTIONS };
/* Variant attributes (evo_variant.attr). FAMILY: 0 the mma.sync template (attention_fp8.cu), 1 the sm_90a wgmma
 * template (attention_fp8_sm90.cu), whose launch also needs WG_ROWS and TILE_N (the tensor maps' boxes) and PERSIST
 * (the grid). A variant's arithmetic is its accuracy class (evo_variant.accuracy: ATTN_ACC_* of attn_gate.h).
 * ROLE (ATTN_ROLE_*): what the kernel is; a genome with H_V_PATH 3 is its attention kernels (KV16) and one kernel
 * that converts K and V to FP16 into a workspace before them (CONVERT; it serves no shape on its own); one with
 * H_V_PATH 5 is its attention kernels (VT) and one kernel that writes Vᵀ into a workspace before them (TRANSPOSE;
 * it serves no shape either). The role, not the name, says which: the worker sees a kernel's lowered symbol. */
enum {
    ATTN_V_DIM,
    ATTN_V_FORMAT,
    ATTN_V_ROWS,
    ATTN_V_MIN_WAVES,
    ATTN_V_FAMILY,
    ATTN_V_WG_ROWS,
    ATTN_V_TILE_N,
    ATTN_V_PERSIST,
    ATTN_V_ROLE,
    ATTN_N_VATTRS
};
enum {
    ATTN_ROLE_ATTN = 0,      /* attention on the codes */
    ATTN_ROLE_KV16 = 1,      /* attention on K and V in FP16, which the CONVERT kernel writes first, every call */
    ATTN_ROLE_CONVERT = 2,   /* before the attention kernel, every call: K and V codes to FP16 (their exact e4m3
                                values, both tensors in one launch; ATTN_CONVERT_NAME) */
    ATTN_ROLE_VT = 3,        /* attention on Vᵀ (V_PATH 5), which the TRANSPOSE kernel writes first */
    ATTN_ROLE_TRANSPOSE = 4, /* before the attention kernel, every call: V codes to Vᵀ (ATTN_TRANSPOSE_NAME) */
};
/* A kernel that runs before the attention kernel, every call, and serves no shape itself (CONVERT, TRANSPOSE). */
static inline int attn_role_is_pre(long long role) { return role == ATTN_ROLE_CONVERT || role == ATTN_ROLE_TRANSPOSE; }
/* The conversion kernel of the sm_90a template (evo_kv16_convert: no "evo_attn" in its name, so the profiler's and
 * the sanitizer's filter by the task's kernel prefix pick the attention kernel alone) and its block. */
#define ATTN_CONVERT_NAME "evo_kv16_convert<16>"
#define ATTN_CONVERT_THREADS 256
/* The transpose of V for V_PATH 5 (evo_vt_transpose: 128 keys a block, ATTN_CONVERT_THREADS threads, grid
 * (ceil(S16 / 128), B·H) with S16 = attn_sm90_vt_seq(S); arguments v, vt, seq, S16, head_dim). */
#define ATTN_TRANSPOSE_NAME "evo_vt_transpose<128>"
#define ATTN_TRANSPOSE_KEYS 128
enum { ATTN_FAMILY_MMA = 0, ATTN_FAMILY_SM90 = 1 };

/* EVO_FORMAT_E4M3 / EVO_FORMAT_U8SIM of evo_attention_abi.h, by name: "e4m3", "u8sim". */
const char *evo_attn_format_name(int format);
/* The config's format. */
int evo_attn_format(const evo_config *cfg);
/* The softmax scale of shape s: its own softmax_scale field when set, else the config's, else 1/sqrt(head_dim). */
double evo_attn_softmax_scale(const evo_config *cfg, const evo_shape *s);
/* `evo export --torch` (torch.c): the PyTorch module for an exported kernel and an exported quantizer. */
evo_status evo_attn_torch_module(const evo_torch_files *f, const char *module, char **py, evo_err *err);

#endif
