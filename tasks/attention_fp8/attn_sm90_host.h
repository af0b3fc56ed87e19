/* attn_sm90_host.h — the host side of the sm_90a attention family (attention_fp8_sm90.cu): which genomes are legal,
 * their launch geometry, NVRTC name expressions, and the TMA tensor maps the kernel takes as its second parameter.
 *
 * Contract: plain C11, no CUDA header. Every function is pure except attn_sm90_fill_tmaps, which calls the
 * cuTensorMapEncodeTiled entry point it is given (the engine gets it from the dlopen'd driver, a standalone harness
 * from cudaGetDriverEntryPoint). Thread-safe. A launcher, for a genome g accepted by attn_sm90_check and the
 * params p (device pointers already set):
 *   1. attn_sm90_fill_tmaps(&t, &p, &g, encode)   (once per set of pointers/shape; PIPE 0 may skip it: zeros)
 *   2. set the kernel's max dynamic shared memory to attn_sm90_smem_bytes(&g, D)
 *   3. launch grid attn_sm90_grid(&g, &p, sm_count), block attn_sm90_threads(&g), that many dynamic smem bytes,
 *      arguments (p, t) by value
 */
#ifndef EVO_ATTN_SM90_HOST_H
#define EVO_ATTN_SM90_HOST_H

#include "evo_attention_abi.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef EVO_ATTN_TMAPS_DEFINED
#define EVO_ATTN_TMAPS_DEFINED
/* A CUtensorMap: 128 opaque bytes, 64-byte aligned (same layout as the definition in attention_fp8_sm90.cu). */
typedef struct {
#ifdef __cplusplus
    alignas(64) unsigned long long w[16];
#else
    _Alignas(64) unsigned long long w[16];
#endif
} evo_tmap;
typedef struct {
    evo_tmap q, k, v;
} evo_attn_tmaps;
#endif

/* The knobs, in template-parameter order after the head dim (docs/templates.md says what each trades). */
typedef struct {
    int wg_rows;       /* WG_ROWS: 64, 128 */
    int consumers;     /* CONSUMERS: 1, 2, 3 */
    int tile_n;        /* TILE_N: 64, 128, 192, 256 */
    int stages;        /* STAGES: 2, 3, 4 */
    int pipe;          /* PIPE: 0 cp.async, 1 TMA ring, 2 TMA + producer warpgroup */
    int qk_mode;       /* QK_MODE: 0 e4m3 (Q from smem), 1 e4m3 (Q in registers), 2 FP16 (Q, K converted in smem) */
    int v_path;        /* V_PATH: 0 e4m3 Vᵀ, 1 FP16 V; 2 V_PATH 1 with V given in FP16 (p.v: FP16 [B, H, S, D]; the
                          FP16-V entry of exported files, not a search value); 3 as 2 with K given in FP16 too
                          (p.k: FP16; QK_MODE 2 only; the FP16-K-and-V entry) */
    int overlap;       /* OVERLAP: 0, 1 (PIPE 2) */
    int pingpong;      /* PINGPONG: 0, 1 (OVERLAP 1, CONSUMERS 2) */
    int o_acc;         /* O_ACC: 0, 1 */
    int producer_regs; /* PRODUCER_REGS: 24, 32, 40, 56 */
    int persist;       /* PERSIST: 0, 1, 2 */
} evo_sm90_genome;

/* The signature of cuTensorMapEncodeTiled with plain C types (CUresult and the enums are ints). */
typedef int (*evo_tmap_encode_fn)(void *tensor_map, int data_type, unsigned rank, void *global_address,
                                  const unsigned long long *global_dim, const unsigned long long *global_strides,
                                  const unsigned *box_dim, const unsigned *element_strides, int interleave, int swizzle,
                                  int l2_promotion, int oob_fill);

/* NULL when g is a legal genome of the family at head dim d (64 or 128) that fits max_smem_optin bytes of shared
 * memory and compiles without spills (the register rules were measured with ptxas, docs/perf-notes.md); otherwise
 * a sentence naming the rule it breaks. */
const char *attn_sm90_check(const evo_sm90_genome *g, int d, int max_smem_optin);

/* The genome head dim d's kernel is built with: g, except that at head dim 128 three consumer warpgroups whose
 * accumulators do not fit their registers (a tile of 128 keys and more) become two, as family 0 halves its rows at
 * head dim 128: one genome, 192-row blocks at head dim 64 and 128-row blocks at 128 (PINGPONG is 0 with three
 * consumers and stays 0); and two consumer warpgroups whose 256-key tiles do not fit at head dim 128 take 192-key
 * tiles there (one genome, 256 keys a tile at head dim 64). Check and launch what this returns. */
evo_sm90_genome attn_sm90_at_dim(const evo_sm90_genome *g, int d);

/* A consumer thread's registers less its live accumulators at head dim d (attn_sm90_check's register rule). */
int attn_sm90_reg_slack(const evo_sm90_genome *g, int d);

int attn_sm90_threads(const evo_sm90_genome *g);           /* block size */
int attn_sm90_rows_per_block(const evo_sm90_genome *g);    /* WG_ROWS * CONSUMERS */
int attn_sm90_smem_bytes(const evo_sm90_genome *g, int d); /* dynamic shared memory; equals Sm90Cfg<...>::SMEM */

/* Grid for batch B, heads H, sequence S: PERSIST 0: (ceil(S/rows), H, B); PERSIST 1, 2: (min(items, sm_count), 1, 1)
 * with items = ceil(S/rows)·H·B. */
void attn_sm90_grid(const evo_sm90_genome *g, int batch, int heads, int seq, int sm_count, unsigned grid[3]);

/* "evo_attn_sm90<D,WG_ROWS,...,PERSIST>" into buf; returns the length, or -1 if it did not fit. */
int attn_sm90_name_expr(const evo_sm90_genome *g, int d, char *buf, size_t len);

/* V_PATH 5: the key count of a Vᵀ row, S rounded up to 16 (the tensor map's row stride must be a multiple of 16). */
int attn_sm90_vt_seq(int seq);

/* Fills t->q, t->k, t->v for the params' tensors and g's box sizes (V_PATH 2: t->v maps p->v as FP16; V_PATH 5:
 * p->v is Vᵀ, [B·H, D, attn_sm90_vt_seq(S)] bytes as evo_vt_transpose writes it). Returns 0, or the first non-zero
 * CUresult of encode (t is then unusable). */
int attn_sm90_fill_tmaps(evo_attn_tmaps *t, const evo_attn_params *p, const evo_sm90_genome *g,
                         evo_tmap_encode_fn encode);

#ifdef __cplusplus
}
#endif

#endif
