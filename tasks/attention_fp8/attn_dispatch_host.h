/* attn_dispatch_host.h — attention's dispatch buckets and the rule a dispatching export's launcher picks a kernel by
 * (docs/usage.md, "Per-shape elites and buckets", "A dispatching export").
 *
 * Contract: plain C (C11 or C++), no CUDA header, every function pure and thread-safe. evo's task code (task.c: the
 * bucket of a timed shape) and every dispatching export (inlined verbatim, with its table) share this text, so the
 * launcher's choice is the rule evo grouped the measurements by.
 *
 * A bucket is (head dim, causal, seq class, batch·heads class). Classes are powers of two: seq class k holds
 * 2^(k-1) < seq <= 2^k, the lowest (k = 8) everything up to 256; batch·heads class k holds 2^(k-1) < B·H <= 2^k,
 * the lowest (k = 3) everything up to 8. A problem runs the winner of its own bucket; a problem in no bucket of the
 * table runs the nearest bucket of its head dim (a kernel serves its head dim only): the same causal setting first,
 * then the fewest class steps |Δseq| + |Δbatch·heads|, then the fewest seq steps, then the first in table order (the
 * table is sorted by head dim, causal, seq class, batch·heads class: the smaller bucket). No bucket of that head
 * dim: -1.
 */
#ifndef EVO_ATTN_DISPATCH_HOST_H
#define EVO_ATTN_DISPATCH_HOST_H

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_SEQ_CLASS_MIN 8 /* seq <= 256 */
#define ATTN_BH_CLASS_MIN 3  /* batch·heads <= 8 */

/* One row of a dispatch table: the bucket and the index of the kernel entry that won it. */
typedef struct {
    int head_dim, causal, seq_class, bh_class;
    int entry;
} attn_dispatch_bucket;

/* The class of x >= 1: the smallest k >= lowest with x <= 2^k. */
static inline int attn_dispatch_class(long long x, int lowest)
{
    int k = lowest;
    while (k < 62 && x > (1LL << k)) k++;
    return k;
}

static inline int attn_dispatch_abs(int x) { return x < 0 ? -x : x; }

/* The row of table b (n rows, sorted as above) that serves the problem, or -1 when none has its head dim. */
static inline int attn_dispatch_pick(const attn_dispatch_bucket *b, int n, int batch, int heads, int seq, int head_dim,
                                     int causal)
{
    const int sk = attn_dispatch_class(seq, ATTN_SEQ_CLASS_MIN);
    const int bk = attn_dispatch_class((long long)batch * heads, ATTN_BH_CLASS_MIN);
    const int c = causal != 0;
    int best = -1, best_cost[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        if (b[i].head_dim != head_dim) continue;
        const int ds = attn_dispatch_abs(b[i].seq_class - sk), db = attn_dispatch_abs(b[i].bh_class - bk);
        const int cost[3] = {b[i].causal != c, ds + db, ds};
        int better = best < 0;
        for (int k = 0; k < 3 && !better; k++) {
            if (cost[k] != best_cost[k]) {
                better = cost[k] < best_cost[k];
                break;
            }
        }
        if (better) {
            best = i;
            for (int k = 0; k < 3; k++) best_cost[k] = cost[k];
        }
    }
    return best;
}

#ifdef __cplusplus
}
#endif

#endif
