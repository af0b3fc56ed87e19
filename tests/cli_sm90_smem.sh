#!/usr/bin/env bash
# cli_sm90_smem.sh — the host's shared-memory formula of the sm_90a family (attn_sm90_smem_bytes, which sizes every
# launch and the can_implement check) equals the kernel's own plan (Sm90Cfg::SMEM in attention_fp8_sm90.cu, which
# the kernel checks against its dynamic shared memory and traps below) for every combination of the knobs that shape
# it (head dim, rows, consumers, key tile, stages, pipe, Q·Kᵀ and V paths, a persistent grid or not: the second Q
# buffer) that fits an sm_90 block: a mismatch would
# be a kernel trapping at launch on the GPU. Host code only: nvcc compiles the plan's constants, nothing runs on a GPU.
# Exits 77 (skipped) without nvcc or with EVO_TEST_NO_NVCC=1. Run: bash tests/cli_sm90_smem.sh build/evo .
set -u
SRC=$(realpath "${2:-.}")
[ "${EVO_TEST_NO_NVCC:-0}" = 1 ] && { echo "SKIP: EVO_TEST_NO_NVCC=1"; exit 77; }
NVCC=$(command -v nvcc || true)
for c in "${CUDA_HOME:-}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c
done
[ -n "$NVCC" ] || { echo "SKIP: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin)"; exit 77; }
T=$(mktemp -d /tmp/evo-cli-sm90-smem-XXXXXX)
trap 'rm -rf "$T"' EXIT
A=$SRC/tasks/attention_fp8

# 1: every combination the host says fits 227 KB, as chk<...>() lines
cat >"$T/list.c" <<'EOF'
#include "attn_sm90_host.h"
#include <stdio.h>
int main(void)
{
    static const int ds[] = {64, 128}, wgs[] = {64, 128}, tns[] = {64, 128, 192, 256};
    for (int di = 0; di < 2; di++)
        for (int wi = 0; wi < 2; wi++)
            for (int c = 1; c <= 3; c++)
                for (int ti = 0; ti < 4; ti++)
                    for (int st = 2; st <= 4; st++)
                        for (int pipe = 0; pipe <= 2; pipe++)
                            for (int qk = 0; qk <= 2; qk++)
                                for (int vp = 0; vp <= 5; vp++)
                                for (int pe = 0; pe <= 1; pe++) {
                                    if ((vp == 2 || vp == 3 || vp == 4 || vp == 5) && pipe != 2) continue;
                                    if (vp == 3 && qk != 2) continue;
                                    evo_sm90_genome g = {0};
                                    g.wg_rows = wgs[wi], g.consumers = c, g.tile_n = tns[ti], g.stages = st;
                                    g.pipe = pipe, g.qk_mode = qk, g.v_path = vp, g.persist = pe;
                                    const int h = attn_sm90_smem_bytes(&g, ds[di]);
                                    if (h > 227 * 1024) continue;
                                    printf("    chk<%d, %d, %d, %d, %d, %d, %d, %d, %d>(%d);\n", ds[di], wgs[wi], c,
                                           tns[ti], st, pipe, qk, vp, pe, h);
                                }
    return 0;
}
EOF
gcc -std=c11 -O1 -I"$A" "$T/list.c" "$A/attn_sm90_host.c" -o "$T/list" || { echo "FAIL: the host formula's lister does not build"; exit 1; }
"$T/list" >"$T/checks.inc"
n=$(wc -l <"$T/checks.inc")
[ "$n" -gt 500 ] || { echo "FAIL: only $n combinations fit (the lister is broken)"; exit 1; }

# 2: the kernel's plan for each, against the host's number
cat >"$T/check.cu" <<'EOF'
#include "attention_fp8_sm90.cu"
#include <cstdio>
static int fails = 0, checks = 0;
template <int D, int WG, int C, int TN, int ST, int PIPE, int QK, int VP, int PE> void chk(int host)
{
    const int kernel = evo_sm90::Sm90Cfg<D, WG, C, TN, ST, PIPE, QK, VP, PE>::SMEM;
    checks++;
    if (kernel != host) {
        fails++;
        printf("FAIL: D=%d WG_ROWS=%d CONSUMERS=%d TILE_N=%d STAGES=%d PIPE=%d QK_MODE=%d V_PATH=%d PERSIST=%d: kernel %d "
               "bytes, host %d\n", D, WG, C, TN, ST, PIPE, QK, VP, PE, kernel, host);
    }
}
int main()
{
#include "checks.inc"
    if (fails) {
        printf("%d of %d checks failed\n", fails, checks);
        return 1;
    }
    printf("%d checks passed\n", checks);
    return 0;
}
EOF
"$NVCC" -std=c++17 -arch=sm_90a -I"$A" -I"$T" "$T/check.cu" -o "$T/check" >"$T/nvcc.log" 2>&1 ||
  { echo "FAIL: nvcc: $(head -20 "$T/nvcc.log")"; exit 1; }
"$T/check"
