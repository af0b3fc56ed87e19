#!/usr/bin/env python3
"""quantize_export.py — writes a standalone quantize_fp8 kernel (.cu) for one genome, by hand: what `evo export` will
write for the quantizer task (header, evo_quantize_abi.h and quantize_fp8.cu inlined, the genome section, then
tasks/quantize_fp8/quantize_export_harness.cu). Until the exporter knows the task, tests and the GPU scripts build
with it.

  python3 tools/quantize_export.py -o q.cu [--knobs vec=16,warps=16,...] [--head-dims 64,128] [--dtypes fp16,bf16]
                                   [--rotate 0,1] [--arch sm_90] [--shapes NAME:B,H,S,D,DTYPE,ROT;...]
"""
import argparse
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import outpath  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK = os.path.join(ROOT, "tasks", "quantize_fp8")
KNOBS = ["vec", "warps", "mode", "cluster", "keep", "unroll", "iters", "cvt", "cache", "fused_rot", "slack"]
# A cluster-mode genome: one kernel, no scratch, the head kept in registers (16 CTAs per head).
DEFAULT_KNOBS = "vec=16,warps=16,mode=2,cluster=8,keep=16,unroll=2,iters=1,cvt=1,cache=1,fused_rot=1,slack=0"
DEFAULT_SHAPES = ("big:4,16,4096,128,fp16,0;big_bf16:4,16,4096,128,bf16,0;big_rot:4,16,4096,128,fp16,1;"
                  "long64:1,16,16384,64,fp16,0;mission:1,8,512,64,fp16,0;small:2,8,512,64,fp16,0;"
                  "long:2,8,2048,64,fp16,0;wide:2,8,512,128,fp16,0;stress:4,8,2048,64,fp16,0;"
                  "stress_rot:4,8,2048,64,fp16,1")
DTYPES = {"fp16": 0, "bf16": 1}


def fail(msg):
    print(f"quantize_export: {msg}", file=sys.stderr)
    sys.exit(2)


def parse_knobs(text):
    k = {}
    for part in text.split(","):
        name, _, val = part.partition("=")
        name = name.strip()
        if name not in KNOBS or not val.strip().lstrip("-").isdigit():
            fail(f"--knobs: '{part}' is not KNOB=INT with KNOB one of {', '.join(KNOBS)}")
        k[name] = int(val)
    missing = [n for n in KNOBS if n not in k]
    if missing:
        fail(f"--knobs: missing {', '.join(missing)}")
    return k


def parse_shapes(text):
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(";"))):
        m = re.fullmatch(r"(\w+):(\d+),(\d+),(\d+),(\d+),(fp16|bf16),([01])", item)
        if not m:
            fail(f"--shapes: '{item}' is not NAME:B,H,S,D,fp16|bf16,0|1")
        shapes.append((m.group(1), *map(int, m.group(2, 3, 4, 5)), DTYPES[m.group(6)], int(m.group(7))))
    return shapes


def targs(k, d, bf16, rot):
    fused = k["fused_rot"] if rot else 1  # canonical: no rotation takes fused_rot 1
    vals = [d, bf16, rot, k["vec"], k["warps"], k["mode"], k["cluster"], k["keep"], k["unroll"], k["iters"], k["cvt"],
            k["cache"], fused]
    return ",".join(str(v) for v in vals), fused


def assemble(k, head_dims, dtypes, rotates, arch, shapes):
    abi = open(os.path.join(TASK, "evo_quantize_abi.h")).read()
    tmpl = open(os.path.join(TASK, "quantize_fp8.cu")).read()
    harness = open(os.path.join(TASK, "quantize_export_harness.cu")).read()
    genome = ",".join(f"{n}={k[n]}" for n in KNOBS)
    key = hashlib.sha256((genome + "\0" + arch + "\0" + tmpl + abi).encode()).hexdigest()
    tmpl = tmpl.replace('#include "evo_quantize_abi.h"', '/* #include "evo_quantize_abi.h": inlined above */', 1)
    inst, rows = [], []
    for d in head_dims:
        for bf in dtypes:
            for rot in rotates:
                a, fused = targs(k, d, bf, rot)
                inst.append(f"template __global__ void evo_quant<{a}>(const evo_quant_params);")
                main = f"evo_quant<{a}>"
                absmax = rotk = "NULL"
                if k["mode"] == 0:
                    inst.append(f"template __global__ void evo_quant_absmax<{a}>(const evo_quant_params);")
                    absmax = f"evo_quant_absmax<{a}>"
                if rot and not fused:
                    inst.append(f"template __global__ void evo_quant_rotate<{a}>(const evo_quant_params);")
                    rotk = f"evo_quant_rotate<{a}>"
                rows.append(f"    {{{d}, {bf}, {rot}, {main}, {absmax}, {rotk}}},")
    shape_rows = [f'    {{"{n}", {b}, {h}, {s}, {d}, {dt}, {r}, 0}},' for n, b, h, s, d, dt, r in shapes]
    out = [
        "/* quantize_fp8 kernel, specialised to one genome (standalone: plain nvcc builds it).",
        f" *   nvcc -arch={arch} -O3 -shared -Xcompiler -fPIC FILE -o libevo_quant.so        for ctypes",
        f" *   nvcc -arch={arch} -O3 -DEVO_SELFTEST FILE -o selftest && ./selftest          check and time",
        " * Launcher (extern \"C\"): evo_quantize_forward, evo_quantize_scratch_bytes,",
        " * evo_quantize_scratch_zero_bytes, evo_quantize_genome (contracts in the launcher section below).",
        f" * genome {genome}",
        f" * assembled by tools/quantize_export.py, key {key}",
        " */",
        "",
        "#include <cuda_runtime.h>",
        "",
        "/* ==== evo_quantize_abi.h, verbatim ==== */",
        abi,
        "/* ==== quantize_fp8.cu, verbatim but for its #include of the header above ==== */",
        tmpl,
        "/* ==== this genome (written by evo export) ==== */",
        f'#define EVO_EXPORT_GENOME "{genome}"',
        f'#define EVO_EXPORT_KEY "{key}"',
        f'#define EVO_EXPORT_ARCH "{arch}"',
        "",
        "/* vec, warps, mode, cluster, keep, unroll, iters, cvt, cache, fused_rot, slack */",
        "static const evo_quant_knobs evo_export_knobs = {" + ", ".join(str(k[n]) for n in KNOBS) + "};",
        "",
        *inst,
        "",
        "namespace evo_export {",
        "",
        "struct qvariant {",
        "    int head_dim, in_dtype, rotate;",
        "    void (*main)(const evo_quant_params);",
        "    void (*absmax)(const evo_quant_params);   /* mode split; NULL otherwise */",
        "    void (*rotate_k)(const evo_quant_params); /* rotate with fused_rot = 0; NULL otherwise */",
        "};",
        "static const qvariant variants[] = {",
        *rows,
        "};",
        "",
        "#ifdef EVO_SELFTEST",
        "/* The timed shapes, with the median evo measured (µs; 0: not measured). */",
        "struct qshape {",
        "    const char *name;",
        "    int batch, heads, seq, head_dim, in_dtype, rotate;",
        "    double evo_median_us;",
        "};",
        "static const qshape timed_shapes[] = {",
        *shape_rows,
        "};",
        "static const int timing_warmup = 3, timing_repetitions = 30, timing_flush_l2 = 1;",
        "#endif",
        "",
        "} // namespace evo_export",
        "",
        "/* ==== launcher and self-test, the same in every exported quantizer (quantize_export_harness.cu) ==== */",
        harness,
    ]
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description="Assemble a standalone quantize_fp8 .cu for one genome.")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--knobs", default=DEFAULT_KNOBS)
    p.add_argument("--head-dims", default="64,128")
    p.add_argument("--dtypes", default="fp16,bf16")
    p.add_argument("--rotate", default="0,1")
    p.add_argument("--arch", default="sm_90")
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help="timed shapes, NAME:B,H,S,D,fp16|bf16,0|1;...")
    a = p.parse_args(argv)
    k = parse_knobs(a.knobs)
    try:
        head_dims = [int(d) for d in a.head_dims.split(",")]
        rotates = [int(r) for r in a.rotate.split(",")]
        dtypes = [DTYPES[t.strip()] for t in a.dtypes.split(",")]
    except (ValueError, KeyError):
        fail("--head-dims, --rotate want integers, --dtypes fp16 and/or bf16")
    if not re.fullmatch(r"sm_\d+[af]?", a.arch):
        fail(f"--arch: '{a.arch}' is not sm_NN")
    shapes = [s for s in parse_shapes(a.shapes) if s[4] in head_dims and s[5] in dtypes and s[6] in rotates]
    try:
        outpath.check(a.output, "-o")
        outpath.write(a.output, assemble(k, head_dims, dtypes, rotates, a.arch, shapes), "-o")
    except (OSError, outpath.OutputError) as e:
        fail(str(e))
    print(f"wrote {a.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
