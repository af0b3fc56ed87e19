#!/usr/bin/env python3
"""rmse_model.py — a CPU model of the FP8 attention kernel's numerics on the FlashAttention-3 paper's outlier inputs
(Q, K, V ~ N(0,1) + N(0,100)·Bernoulli(0.001), rounded to fp16), to find where the error against FP64 attention
comes from and what a change of the quantization would buy before any GPU time is spent.

Model: per-head e4m3 exactly as evo_quantize_abi.h (scale = absmax/448 in float, code = e4m3fn(RN(x/scale))),
dequantized in float64; S = Q·Kᵀ/sqrt(D) and the softmax in float64 (the kernel accumulates in fp32: negligible
here); P rounded to fp16 before P·V as the kernel's PV_MMA path does; the output rounded to fp16. Incoherent
processing: Q and K times an orthogonal diag(s)·H/sqrt(D) (random signs; the kernel's fixed signs are one draw).
Variants switch single roundings off or change the quantization (per 64-row blocks, V rotated and the output
rotated back, K centred over S, Q left in fp16). Prints the RMSE of each against FP64 attention on the fp16 inputs,
mean over the seeds.

  pip install numpy ml_dtypes;  python3 tools/bench/rmse_model.py [--dim 64] [--seeds 0 1]

Validated against the H200 measurements of tools/bench/compare_sdpa.py --rmse (docs/results.md).
"""
import argparse
import time

import ml_dtypes
import numpy as np

E4M3 = ml_dtypes.float8_e4m3fn


def hadamard(d):
    h = np.array([[1.0]])
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return h


def quant(x, rows=None):
    """x [H, S, D] -> dequantized e4m3 with one scale per head (rows: per block of that many rows instead)."""
    h, s, d = x.shape
    xb = x.reshape(h, -1, rows or s, d)
    amax = np.abs(xb).max(axis=(2, 3), keepdims=True).astype(np.float32)
    scale = np.where(amax == 0, np.float32(1), amax / np.float32(448)).astype(np.float32)
    codes = (xb.astype(np.float32) / scale).astype(E4M3)
    return (codes.astype(np.float64) * scale).reshape(h, s, d)


def attention(q, k, v, p_fp16=True):
    s = np.einsum("hsd,htd->hst", q, k) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    denom = p.sum(-1, keepdims=True)
    if p_fp16:
        p = p.astype(np.float16).astype(np.float64)
    return np.einsum("hst,htd->hsd", p, v) / denom


def outlier_inputs(heads, seq, dim, seed):
    rng = np.random.default_rng(seed)

    def one():
        x = rng.standard_normal((heads, seq, dim))
        x += rng.standard_normal((heads, seq, dim)) * 10.0 * (rng.random((heads, seq, dim)) < 0.001)
        return x.astype(np.float16).astype(np.float64)

    return one(), one(), one()


VARIANTS = {
    "per-head e4m3": lambda q, k, v, m: attention(quant(q), quant(k), quant(v)),
    "incoherent (Q, K rotated)": lambda q, k, v, m: attention(quant(q @ m), quant(k @ m), quant(v)),
    "  only Q quantized": lambda q, k, v, m: attention(quant(q), k, v),
    "  only K quantized": lambda q, k, v, m: attention(q, quant(k), v),
    "  only V quantized": lambda q, k, v, m: attention(q, k, quant(v)),
    "incoherent, V exact": lambda q, k, v, m: attention(quant(q @ m), quant(k @ m), v),
    "incoherent, P exact": lambda q, k, v, m: attention(quant(q @ m), quant(k @ m), quant(v), p_fp16=False),
    "incoherent + V rotated": lambda q, k, v, m: attention(quant(q @ m), quant(k @ m), quant(v @ m)) @ m.T,
    "incoherent + 64-row blocks": lambda q, k, v, m: attention(quant(q @ m, 64), quant(k @ m, 64), quant(v, 64)),
    "incoherent + K centred": lambda q, k, v, m: attention(quant(q @ m), quant((k - k.mean(1, keepdims=True)) @ m),
                                                           quant(v)),
    "incoherent, Q in fp16": lambda q, k, v, m: attention(q @ m, quant(k @ m), quant(v)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    a = ap.parse_args()
    signs = np.where(np.random.default_rng(99).random(a.dim) < 0.5, -1.0, 1.0)
    m = signs[:, None] * hadamard(a.dim) / np.sqrt(a.dim)  # orthogonal: x @ m rotates every row
    t0 = time.time()
    err = {name: [] for name in VARIANTS}
    for seed in a.seeds:
        q, k, v = outlier_inputs(a.heads, a.seq, a.dim, seed)
        ref = attention(q, k, v, p_fp16=False)
        for name, f in VARIANTS.items():
            o = f(q, k, v, m).astype(np.float16).astype(np.float64)
            err[name].append(float(np.sqrt(np.mean((o - ref) ** 2))))
    print(f"(1,{a.heads},{a.seq},{a.dim}), seeds {a.seeds}: RMSE against FP64 attention on the fp16 inputs")
    for name, e in err.items():
        print(f"  {name:30s} {np.mean(e):.3e}")
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
