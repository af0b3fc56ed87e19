#!/usr/bin/env python3
"""compare_sdpa.py — an exported evo kernel against PyTorch SDPA (flash, efficient and cuDNN backends, fp16) and
cuDNN's FP8 SDPA (cudnn-frontend graph.sdpa_fp8, e4m3 with per-tensor scales) on the same inputs, in one process,
every contender timed the same two ways; errors against FP32 references.
Needs python3, PyTorch with CUDA and nvcc on the GPU host; the cuDNN FP8 column needs the nvidia-cudnn-frontend
wheel on PYTHONPATH (without it the column says why it is n/a).

  python3 tools/bench/compare_sdpa.py variants/X.cu [--causal both|on|off] [--out DIR] [--reps N] [--replays N]
                                [--presets mission,long] [--shapes B,H,S,D;...] [--peers flash,cudnn,efficient,cudnn_fp8]
                                [--arch sm_90] [--nvcc PATH] [--lib LIB.so] [--incoherent]
  python3 tools/bench/compare_sdpa.py --peers-only [--shapes ...] ...   (the peers alone, no exported kernel)
  python3 tools/bench/compare_sdpa.py variants/X.cu --rmse      (RMSE against FP64 attention on outlier inputs, no timing)
  python3 tools/bench/compare_sdpa.py variants/X.cu --dry-run   (no GPU, no PyTorch: the arguments and the file only)
--incoherent rotates Q and K along D before quantizing (incoherent processing), with the quantizer's fixed rotation
(tasks/quantize_fp8/evo_quantize_abi.h): each row x becomes x·M, M = diag(s)·H/sqrt(D), H the Walsh-Hadamard matrix;
(Q·M)(K·M)ᵀ = Q·Kᵀ, so the kernel is unchanged. --rmse measures, on the FlashAttention-3 paper's outlier inputs
(Q, K, V ~ N(0,1) + N(0,100)·Bernoulli(0.001)), the output's RMSE against FP64 attention on the unquantized inputs:
per-head quantization, the same with incoherent processing, and fp16 SDPA.
"""
import argparse
import contextlib
import ctypes
import datetime
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

PRESETS = [  # name, batch, heads, seq, head_dim
    ("mission", 1, 8, 512, 64),
    ("small", 2, 8, 512, 64),
    ("long", 2, 8, 2048, 64),
    ("wide", 2, 8, 512, 128),
    ("stress", 4, 8, 2048, 64),
]
GRAPH_CALLS = 20            # calls back to back in one CUDA graph
FLUSH_BYTES = 256 << 20     # written before each event-timed call: several times any GPU's L2
SLEEP_CYCLES = 100_000_000  # GPU-side sleep (~50 ms) the host queues a whole measurement behind
WARMUP = 3
E4M3_MAX = 448.0
BACKENDS = [("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"), ("efficient", "EFFICIENT_ATTENTION")]
LABELS = {"flash": "flash", "cudnn": "cuDNN", "efficient": "efficient", "cudnn_fp8": "cuDNN FP8"}
PEERS = [label for label, _ in BACKENDS] + ["cudnn_fp8"]
RMSE_SHAPES = [(1, 16, 2048, 64), (1, 16, 2048, 128), (2, 8, 4096, 128)]  # (batch, heads, seq, head_dim)
SIGN_SEED = 0x51554E5446503845  # EVO_QUANT_SIGN_SEED, evo_quantize_abi.h
MASK64 = (1 << 64) - 1


class NotAnExport(Exception):
    pass


# ---- the exported file ----

def read_export(path):
    """What the file says about itself: format, genome, key, arch and the head dims it has variants for."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8", errors="replace")
    fmt = re.search(r"^#define EVO_EXPORT_FORMAT (EVO_FORMAT_E4M3|EVO_FORMAT_U8SIM)\s*$", text, re.M)
    genome = re.search(r'^#define EVO_EXPORT_GENOME "([^"]*)"', text, re.M)
    key = re.search(r'^#define EVO_EXPORT_KEY "([0-9a-f]*)"', text, re.M)
    arch = re.search(r'^#define EVO_EXPORT_ARCH "(sm_[0-9]+[af]?)"', text, re.M)
    dims = sorted({int(d) for d in re.findall(r"^template __global__ void evo_attn_(?:fwd|sm90)<(\d+),", text, re.M)})
    if not (fmt and genome and dims and "evo_attention_forward(" in text):
        raise NotAnExport(f"{path}: not a kernel exported by evo (no EVO_EXPORT_FORMAT / EVO_EXPORT_GENOME / "
                          f"instantiations); make one with `evo export`")
    return {
        "path": path,
        "format": "e4m3" if fmt.group(1) == "EVO_FORMAT_E4M3" else "u8sim",
        "genome": genome.group(1),
        "key": key.group(1) if key else "",
        "arch": arch.group(1) if arch else "sm_90",
        "head_dims": dims,
    }


def build_command(nvcc, arch, src, lib):
    # an arch-specific target (sm_90a) names its code and its PTX explicitly: nvcc's -arch=sm_90a also emits
    # compute_90 PTX, which cannot hold wgmma or setmaxnreg
    target = (f"-gencode=arch=compute_{arch[3:]},code={arch}" if arch[-1] in "af" else f"-arch={arch}")
    return [nvcc, "-shared", "-Xcompiler", "-fPIC", target, "-O3", "-o", lib, src]


def find_nvcc(given):
    if given:
        return given
    found = shutil.which("nvcc")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.access(os.path.join(root, "bin", "nvcc"), os.X_OK):
            return os.path.join(root, "bin", "nvcc")
    return "nvcc"


def flops(b, h, s, d, causal):
    pairs = s * (s + 1) / 2 if causal else s * s
    return 4.0 * b * h * pairs * d


def parse_shapes(text):
    """'B,H,S,D;B,H,S,D' -> [(B, H, S, D)] (none for an empty text); ValueError naming the item at fault."""
    out = []
    for spec in (x.strip() for x in text.split(";") if x.strip()):
        try:
            b, h, n, d = (int(v) for v in spec.split(","))
        except ValueError:
            raise ValueError(f"'{spec}' is not B,H,S,D") from None
        if min(b, h, n) < 1 or d not in (64, 128):
            raise ValueError(f"'{spec}' needs positive B, H, S and D 64 or 128")
        out.append((b, h, n, d))
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(description="Time an exported evo kernel against PyTorch SDPA.")
    p.add_argument("file", nargs="?", help="a .cu file written by `evo export` (not with --peers-only)")
    p.add_argument("--peers-only", action="store_true", help="time the peers alone, no exported kernel")
    p.add_argument("--peers", default=",".join(PEERS), help="comma-separated peers (default: all: %(default)s)")
    p.add_argument("--shapes", default="", help="extra shapes 'B,H,S,D;B,H,S,D' timed after the presets")
    p.add_argument("--causal", choices=("both", "on", "off"), default="both")
    p.add_argument("--out", default="results", help="directory for the JSON and markdown (default: results)")
    p.add_argument("--reps", type=int, default=50, help="event-timed calls per contender (default 50)")
    p.add_argument("--replays", type=int, default=20, help="CUDA graph replays per contender (default 20)")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds in which the contenders are timed in turn, each with its share of --reps and "
                        "--replays; a contender's time is the median of its round medians (default 3)")
    p.add_argument("--presets", default=",".join(n for n, *_ in PRESETS), help="comma-separated preset names")
    p.add_argument("--arch", help="nvcc -arch (default: the file's, else sm_90)")
    p.add_argument("--nvcc", help="nvcc to build with (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    p.add_argument("--lib", help="a library already built from the file (skips nvcc)")
    p.add_argument("--incoherent", action="store_true", help="rotate Q and K along D before quantizing")
    p.add_argument("--rmse", action="store_true",
                   help="RMSE on outlier inputs against FP64: per-head vs incoherent vs fp16 SDPA (no timing)")
    p.add_argument("--seeds", type=int, default=3, help="--rmse: input draws per shape, RMSE averaged (default 3)")
    p.add_argument("--dry-run", action="store_true", help="check the arguments and the file; no GPU, no PyTorch")
    a = p.parse_args(argv)
    if a.reps < 1 or a.replays < 1 or a.seeds < 1 or a.rounds < 1:
        p.error("--reps, --replays, --seeds and --rounds want a positive count")
    names = [n.strip() for n in a.presets.split(",") if n.strip()]
    known = {n for n, *_ in PRESETS}
    bad = [n for n in names if n not in known]
    if bad or not names:
        p.error(f"--presets: unknown {', '.join(bad) or '(none given)'}; choose from {', '.join(sorted(known))}")
    a.preset_list = [pr for pr in PRESETS if pr[0] in names]
    try:
        a.preset_list += [(f"{b}x{h}x{n}x{d}", b, h, n, d) for b, h, n, d in parse_shapes(a.shapes)]
    except ValueError as e:
        p.error(f"--shapes: {e}")
    a.peer_list = [x.strip() for x in a.peers.split(",") if x.strip()]
    bad = [x for x in a.peer_list if x not in PEERS]
    if bad:
        p.error(f"--peers: unknown {', '.join(bad)}; choose from {', '.join(PEERS)}")
    if a.peers_only == bool(a.file):
        p.error("give an exported .cu file, or --peers-only without one")
    if a.peers_only and (a.rmse or a.incoherent or a.lib):
        p.error("--rmse, --incoherent and --lib need an exported .cu file (not --peers-only)")
    a.causal_list = {"both": [False, True], "on": [True], "off": [False]}[a.causal]
    return a


def out_paths(args, k):
    stem = os.path.splitext(os.path.basename(k["path"]))[0]
    kind = "rmse" if args.rmse else "sdpa-incoherent" if args.incoherent else "sdpa"
    return os.path.join(args.out, f"{kind}-{stem}.json"), os.path.join(args.out, f"{kind}-{stem}.md")


def print_plan(args, k, cmd):
    print(f"file {k['path']}")
    print(f"genome {k['genome']}")
    print(f"format {k['format']}, arch {args.arch or k['arch']}, key {k['key'][:8]}")
    print(f"head dims {' '.join(str(d) for d in k['head_dims'])}")
    print(f"causal: {args.causal}")
    print(f"peers: {', '.join(LABELS[x] for x in args.peer_list)}")
    print(f"quantization: per (batch, head){', Q and K rotated first (incoherent)' if args.incoherent else ''}")
    if args.rmse:
        print("rmse: outlier inputs N(0,1) + N(0,100)·Bernoulli(0.001), against FP64 attention, shapes " +
              ", ".join(str(sh) for sh in RMSE_SHAPES) + f", {args.seeds} draws each")
    print(f"timing: CUDA graph of {GRAPH_CALLS} back-to-back calls x {args.replays} replays (L2 warm); "
          f"CUDA events, {FLUSH_BYTES >> 20} MiB L2 flush before each call, reps {args.reps}; "
          f"the contenders in turn over {args.rounds} rounds")
    print("build: " + " ".join(cmd))
    print("presets:")
    for name, b, h, s, d in args.preset_list:
        note = "" if d in k["head_dims"] else f"   (no variant for head dim {d}: ours n/a)"
        print(f"  {name:<9} ({b}, {h}, {s}, {d}){note}")
    j, m = out_paths(args, k)
    print(f"results: {j}, {m}")


# ---- quantization and references (PyTorch) ----

def quantize(torch, x, fmt):
    """fp16 [B, H, S, D] -> (uint8 codes [B, H, S, D], float32 scales [B*H]) by evo's rules (evo_attention_abi.h):
    scale = absmax/448 per (batch, head), 1 for an all-zero head; e4m3 codes = e4m3(x/scale) saturating, rounded to
    nearest even; u8sim codes = clamp(roundf(x/(scale*448)*127 + 128), 0, 255), halves away from zero."""
    xf = x.float()
    amax = xf.abs().amax(dim=(2, 3))
    # a tensor divisor: PyTorch's CUDA division by a Python number multiplies by its reciprocal (1 ulp off at times)
    scale = torch.where(amax == 0, torch.ones_like(amax), amax / torch.full_like(amax, E4M3_MAX))
    s = scale[:, :, None, None]
    if fmt == "e4m3":
        codes = (xf / s).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
    else:
        y = (xf / (s * E4M3_MAX)) * 127.0 + 128.0
        a = y.abs()
        fl = a.floor()
        r = torch.where(a - fl >= 0.5, fl + 1.0, fl) * y.sign()
        codes = r.clamp_(0, 255).to(torch.uint8)
    return codes.contiguous(), scale.reshape(-1).contiguous()


def sign_vector(d):
    """The quantizer's signs s_0..s_{d-1}: s_i = -1 where bit i mod 64 of word i / 64 is set; word w is the splitmix64
    finalizer of SIGN_SEED + (w + 1)·0x9e3779b97f4a7c15 (evo_quant_sign_word)."""
    signs = []
    for i in range(d):
        z = (SIGN_SEED + ((i >> 6) + 1) * 0x9E3779B97F4A7C15) & MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z ^= z >> 31
        signs.append(-1.0 if (z >> (i & 63)) & 1 else 1.0)
    return signs


def rotation(torch, d, device):
    """M [d, d] float64 with x·M = evo's rotation of each row x: M = diag(s)·H/sqrt(d),
    H[i][j] = (-1)^popcount(i & j)."""
    idx = torch.arange(d, device=device)
    bits = torch.bitwise_and(idx[:, None], idx[None, :])
    parity = torch.zeros_like(bits)
    while bool((bits != 0).any()):
        parity ^= bits & 1
        bits = bits >> 1
    h = 1.0 - 2.0 * parity.double()
    s = torch.tensor(sign_vector(d), dtype=torch.float64, device=device)
    return s[:, None] * h / math.sqrt(d)


def rotate(torch, x, m):
    """x [B, H, S, D] (any float dtype) times M along D, in float64, returned as float32."""
    return torch.matmul(x.double(), m).float()


def dequantize(torch, codes, scales, fmt):
    b, h = codes.shape[0], codes.shape[1]
    s = scales.reshape(b, h, 1, 1)
    if fmt == "e4m3":
        return codes.view(torch.float8_e4m3fn).float() * s
    return (codes.float() - 128.0) / 127.0 * 448.0 * s


def attention_fp32(torch, q, k, v, causal, scale):
    """softmax(q·kᵀ·scale [causal]) · v in FP32 (TF32 off), one batch at a time to bound memory."""
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    n = q.shape[2]
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu_(1) if causal else None
    for b in range(q.shape[0]):
        s = torch.matmul(q[b].float(), k[b].float().transpose(-1, -2)) * scale
        if mask is not None:
            s.masked_fill_(mask, float("-inf"))
        out[b] = torch.matmul(torch.softmax(s, dim=-1), v[b].float())
    return out


def errors(torch, out, ref):
    o = out.float()
    d = o - ref
    fin = torch.isfinite(o)
    return {
        "rel_l2": (d.norm() / ref.norm()).item(),
        "max_abs": d.abs().max().item(),
        "nonfinite": int((~fin).sum().item()),
    }


_CUDNN = {}


def cudnn_fp8_call(torch, q, k, v, causal, scale):
    """cuDNN's FP8 SDPA on e4m3 codes of q, k, v with one scale per tensor (absmax/448), P scaled by 448, FP8 output
    scaled by 448/absmax(v) (cuDNN on Hopper writes FP8 O). Returns (call, output-as-float); raises RuntimeError with
    the reason when the frontend or the graph is unavailable."""
    try:
        import cudnn
    except ImportError as e:
        raise RuntimeError(f"cudnn-frontend not importable ({e})") from e
    if "handle" not in _CUDNN:
        _CUDNN["handle"] = cudnn.create_handle()
        _CUDNN["plans"] = {}
    handle = _CUDNN["handle"]
    f8, f32 = cudnn.data_type.FP8_E4M3, cudnn.data_type.FLOAT

    def per_tensor(x):
        amax = x.float().abs().amax().item()
        sc = amax / E4M3_MAX if amax > 0 else 1.0
        return (x.float() / sc).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).contiguous(), sc

    (q8, sq), (k8, sk), (v8, sv) = per_tensor(q), per_tensor(k), per_tensor(v)
    b, h, n, d = q.shape
    scale_o = E4M3_MAX / max(v.float().abs().amax().item(), 1e-30)
    try:
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        graph = cudnn.pygraph(io_data_type=f8, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
        tq, tk, tv = (graph.tensor(name=nm, dim=list(t.shape), stride=list(t.stride()), data_type=f8)
                      for nm, t in (("q", q8), ("k", k8), ("v", v8)))
        scal = [graph.tensor(name=nm, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32)
                for nm in ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")]
        o, _, amax_s, amax_o = graph.sdpa_fp8(q=tq, k=tk, v=tv, descale_q=scal[0], descale_k=scal[1],
                                              descale_v=scal[2], descale_s=scal[3], scale_s=scal[4], scale_o=scal[5],
                                              is_inference=True, attn_scale=scale, use_causal_mask=causal)
        o.set_output(True).set_dim([b, h, n, d]).set_stride([h * n * d, n * d, d, 1]).set_data_type(f8)
        for a in (amax_s, amax_o):
            a.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(f32)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
    except Exception as e:  # cudnn raises its own error types
        raise RuntimeError(f"cuDNN FP8 graph: {first_line(e)}") from e
    one = lambda x: torch.full((1, 1, 1, 1), x, dtype=torch.float32, device="cuda")  # noqa: E731
    o8 = torch.empty((b, h, n, d), dtype=torch.float8_e4m3fn, device="cuda")
    a_s, a_o = one(0.0), one(0.0)
    pack = {tq: q8, tk: k8, tv: v8, scal[0]: one(sq), scal[1]: one(sk), scal[2]: one(sv),
            scal[3]: one(1.0 / E4M3_MAX), scal[4]: one(E4M3_MAX), scal[5]: one(scale_o), o: o8, amax_s: a_s,
            amax_o: a_o}
    best, ws = fastest_cudnn_plan(torch, cudnn, graph, pack, handle)
    if ws is None:
        raise RuntimeError(f"cuDNN FP8 graph: no plan builds ({best})")
    _CUDNN["plans"][(b, h, n, d, bool(causal))] = best

    def call():
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        graph.execute(pack, ws, handle=handle)
    return call, lambda: o8.float() / scale_o


def fastest_cudnn_plan(torch, cudnn, graph, pack, handle):
    """Every plan cuDNN's heuristics offer for the graph (modes A and FALLBACK) built and timed as the peers are (a
    CUDA graph of GRAPH_CALLS executions, the median of 3 replays: device time, not the host's launch cost); the
    fastest is selected for graph.execute. Returns (summary, workspace tensor) — the summary lists each plan's name
    and µs per call, or why it did not build — or (reason, None) when none builds."""
    timer = Timer(torch, 1, 3, flush=False)
    tried, best_i, best_t, best_ws = [], None, None, None
    for i in range(graph.get_execution_plan_count()):
        try:
            name = graph.get_plan_name_at_index(i)
        except Exception:  # a name is only for the report
            name = f"plan {i}"
        try:
            graph.build_plan_at_index(i)
            ws = torch.empty(max(graph.get_workspace_size(), 1), dtype=torch.uint8, device="cuda")

            def run(ws=ws):
                cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
                graph.execute(pack, ws, handle=handle)
            t = timer.graph(run)["median_us"]
        except Exception as e:  # a plan that declines or fails is skipped, and said so
            tried.append(f"{name}: {first_line(e)}")
            continue
        tried.append(f"{name}: {t:.1f} us")
        if best_t is None or t < best_t:
            best_i, best_t, best_ws = i, t, ws
    if best_i is None:
        return "; ".join(tried) or "no plans", None
    graph.build_plan_at_index(best_i)
    return f"plan {best_i} of {len(tried)} ({'; '.join(tried)})", best_ws


# ---- timing ----

class Timer:
    """Both methods queue a whole measurement behind a GPU-side sleep, so no host gap falls inside one."""

    def __init__(self, torch, reps, replays, flush=True, rounds=1):
        self.torch = torch
        self.reps = reps
        self.replays = replays
        self.rounds = max(1, rounds)
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda") if flush else None  # events only

    def _sleep(self):
        if hasattr(self.torch.cuda, "_sleep"):
            self.torch.cuda._sleep(SLEEP_CYCLES)

    @staticmethod
    def _stats(ts):
        ts = sorted(ts)
        n = len(ts)
        return {"median_us": ts[n // 2], "p10_us": ts[(n - 1) // 10], "p90_us": ts[(n - 1) * 9 // 10]}

    def _share(self, n, split):
        """n, or with split its share of one round (timed_rounds), at least 3."""
        return max(3, -(-n // self.rounds)) if split else n

    def events(self, fn, split=False):
        """One call between two events, the L2 flushed (256 MiB written) before each; median/p10/p90 in µs."""
        torch = self.torch
        for _ in range(WARMUP):
            fn()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(self._share(self.reps, split))]
        self._sleep()
        for i, (a, b) in enumerate(ev):
            self.flush.fill_(i & 0xFF)
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return self._stats([1000.0 * a.elapsed_time(b) for a, b in ev])

    def graph(self, fn, split=False):
        """GRAPH_CALLS calls captured back to back in one CUDA graph; per-call time = replay time / GRAPH_CALLS;
        median/p10/p90 over the replays, in µs. L2 stays warm (inputs are reused), as in a model's forward pass."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(GRAPH_CALLS):
                fn()
        g.replay()
        torch.cuda.synchronize()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(self._share(self.replays, split))]
        self._sleep()
        for a, b in ev:
            a.record()
            g.replay()
            b.record()
        torch.cuda.synchronize()
        r = self._stats([1000.0 * a.elapsed_time(b) / GRAPH_CALLS for a, b in ev])
        del g
        return r


def first_line(e):
    s = str(e).strip().splitlines()
    return s[0] if s else type(e).__name__


def timed(timer, fn, entry):
    """Fills entry["graph"] and entry["events"], each a dict of times or {"error": ...}."""
    for method in ("graph", "events"):
        try:
            entry[method] = getattr(timer, method)(fn)
        except Exception as e:  # a contender that cannot be captured or run is reported, not fatal
            entry[method] = {"error": first_line(e)}
            timer.torch.cuda.synchronize()


def timed_rounds(timer, contenders):
    """Every contender timed by both methods in timer.rounds rounds, the contenders in turn within each round (ours,
    then the peers, then ours again ...), so that the GPU's clock and power state under load, which drifts over a
    minute of back-to-back work, falls on all of them alike. Each round takes 1/rounds of the repetitions; an entry
    gets, per method, the median of its round medians (p10/p90: the medians of the rounds' p10/p90) and the round
    medians themselves. A contender that fails is reported and left out of later rounds."""
    torch = timer.torch
    rounds = {id(e): {"graph": [], "events": []} for e, _, _, _ in contenders}
    for _ in range(timer.rounds):
        for entry, fn, ctx, _ in contenders:
            for method in ("graph", "events"):
                if "error" in entry.get(method, {}):
                    continue
                try:
                    with (ctx or contextlib.nullcontext)():
                        rounds[id(entry)][method].append(getattr(timer, method)(fn, split=True))
                except Exception as e:  # a contender that cannot be captured or run is reported, not fatal
                    entry[method] = {"error": first_line(e)}
                    torch.cuda.synchronize()
    for entry, _, _, after in contenders:
        for method in ("graph", "events"):
            rs = rounds[id(entry)][method]
            if "error" in entry.get(method, {}) or not rs:
                continue
            mid = lambda key: sorted(x[key] for x in rs)[len(rs) // 2]  # noqa: E731
            entry[method] = {"median_us": mid("median_us"), "p10_us": mid("p10_us"), "p90_us": mid("p90_us"),
                             "round_medians_us": [x["median_us"] for x in rs]}
        if after is not None:
            after()


# ---- the comparison ----

FORWARD_ARGTYPES = [ctypes.c_void_p] * 7 + [ctypes.c_int] * 5 + [ctypes.c_float, ctypes.c_void_p]
LAUNCHERS = ("evo_attention_forward", "evo_attention_forward_v16", "evo_attention_forward_kv16")


def bind_launchers(lib):
    """Types of the launchers an exported file's library has: evo_attention_forward and, where the file holds FP16
    twins, evo_attention_forward_v16 / _kv16 with their evo_attention_v16_supported / _kv16_supported queries.
    Returns lib."""
    for name in LAUNCHERS:
        if hasattr(lib, name):
            f = getattr(lib, name)
            f.restype, f.argtypes = ctypes.c_int, FORWARD_ARGTYPES
        query = name.replace("forward_", "") + "_supported"
        if name != LAUNCHERS[0] and hasattr(lib, query):
            q = getattr(lib, query)
            q.restype, q.argtypes = ctypes.c_int, [ctypes.c_int] * 5
    if hasattr(lib, "evo_attention_workspace_bytes") and hasattr(lib, "evo_attention_forward_ws"):
        lib.evo_attention_workspace_bytes.restype = ctypes.c_size_t
        lib.evo_attention_workspace_bytes.argtypes = [ctypes.c_int] * 5
        lib.evo_attention_forward_ws.restype = ctypes.c_int
        lib.evo_attention_forward_ws.argtypes = FORWARD_ARGTYPES[:-1] + [ctypes.c_void_p, ctypes.c_size_t,
                                                                         ctypes.c_void_p]
    return lib


def load_library(torch, k, args, workdir):
    if args.lib:
        lib_path = args.lib
        print(f"library: {lib_path} (prebuilt)")
    else:
        lib_path = os.path.join(workdir, "libevo_attn.so")
        cmd = build_command(find_nvcc(args.nvcc), args.arch or k["arch"], k["path"], lib_path)
        print("building: " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nvcc failed ({r.returncode}):\n{r.stdout}")
    lib = bind_launchers(ctypes.CDLL(lib_path))
    lib.evo_attention_genome.restype = ctypes.c_char_p
    lib.evo_attention_format.restype = ctypes.c_int
    want = 0 if k["format"] == "e4m3" else 1
    if lib.evo_attention_format() != want or lib.evo_attention_genome().decode() != k["genome"]:
        raise RuntimeError("the built library does not say what the file says (format or genome)")
    return lib


def ours_call(torch, lib, q8, k8, v8, qs, ks, vs, o, shape, causal, scale):
    """One call of the file's launcher. An entry that prepares its operands every call (V_PATH 3: K and V to FP16,
    V_PATH 5: Vᵀ) gets a workspace allocated once, as cuDNN's graph gets its own (evo_attention_forward_ws); without
    one the launcher would allocate and free it on the stream in every call (inside the timed graph, too)."""
    b, h, s, d = shape
    args = (q8.data_ptr(), k8.data_ptr(), v8.data_ptr(), qs.data_ptr(), ks.data_ptr(), vs.data_ptr(), o.data_ptr(),
            b, h, s, d, 1 if causal else 0, scale)
    wb = 0
    if hasattr(lib, "evo_attention_workspace_bytes") and hasattr(lib, "evo_attention_forward_ws"):  # bind_launchers
        wb = lib.evo_attention_workspace_bytes(b, h, s, d, 1 if causal else 0)
    if wb:
        ws = torch.empty(wb, dtype=torch.uint8, device="cuda")

        def call():
            rc = lib.evo_attention_forward_ws(*args, ws.data_ptr(), wb, torch.cuda.current_stream().cuda_stream)
            if rc != 0:
                raise RuntimeError(f"evo_attention_forward_ws returned cudaError {rc}")
        call.workspace_bytes = wb
        return call

    def call():
        rc = lib.evo_attention_forward(*args, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"evo_attention_forward returned cudaError {rc}")
    call.workspace_bytes = 0
    return call


def run_preset(torch, F, sdpa_kernel, SDPBackend, lib, timer, k, preset, causal, seed, peers,
               incoherent=False):
    name, b, h, s, d = preset
    row = {"preset": name, "batch": b, "heads": h, "seq": s, "head_dim": d, "causal": causal,
           "flops": flops(b, h, s, d, causal)}
    gen = torch.Generator(device="cuda").manual_seed(seed)
    q, kk, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    scale = 1.0 / math.sqrt(d)
    ref16 = attention_fp32(torch, q, kk, v, causal, scale)
    contenders = []  # (entry, call, context factory or None, check after timing or None): timed in rounds below

    ours = {}
    if k is None:
        ours["error"] = "peers only"
    elif d in k["head_dims"]:
        fmt = k["format"]
        quant = {}
        m = rotation(torch, d, q.device) if incoherent else None
        prep = (lambda x: rotate(torch, x, m)) if incoherent else (lambda x: x)  # noqa: E731
        timed(timer, lambda: [quantize(torch, prep(x), fmt) for x in (q, kk)] + [quantize(torch, v, fmt)], quant)
        row["quant"] = quant
        (q8, qs), (k8, ks), (v8, vs) = (quantize(torch, x, fmt) for x in (prep(q), prep(kk), v))
        ref_deq = attention_fp32(torch, dequantize(torch, q8, qs, fmt), dequantize(torch, k8, ks, fmt),
                                 dequantize(torch, v8, vs, fmt), causal, scale)
        o = torch.full_like(q, float("nan"))
        call = ours_call(torch, lib, q8, k8, v8, qs, ks, vs, o, (b, h, s, d), causal, scale)
        ours["workspace_bytes"] = call.workspace_bytes
        try:
            call()
            torch.cuda.synchronize()
            checked = o.clone()
            ours["err_deq"] = errors(torch, o, ref_deq)
            ours["err_e2e"] = errors(torch, o, ref16)
            after = lambda: ours.__setitem__("same_output_after_timing", bool(torch.equal(o, checked)))  # noqa: E731
            contenders.append((ours, call, None, after))
        except RuntimeError as e:
            ours["error"] = first_line(e)
    else:
        ours["error"] = f"no variant for head dim {d}"
    row["ours"] = ours

    for label, attr in BACKENDS:
        entry = {}
        backend = getattr(SDPBackend, attr, None)
        if label not in peers:
            entry["error"] = "not asked for (--peers)"
        elif backend is None:
            entry["error"] = f"SDPBackend.{attr} is not in this PyTorch"
        else:
            fn = lambda: F.scaled_dot_product_attention(q, kk, v, is_causal=causal)  # noqa: E731
            try:
                with warnings.catch_warnings(record=True) as caught, sdpa_kernel([backend]):
                    warnings.simplefilter("always")
                    try:
                        out = fn()
                        torch.cuda.synchronize()
                    except RuntimeError as e:
                        why = "; ".join(first_line(w.message) for w in caught) or first_line(e)
                        raise RuntimeError(why) from e
                    entry["err_e2e"] = errors(torch, out, ref16)
                    del out
                    contenders.append((entry, fn, lambda backend=backend: sdpa_kernel([backend]), None))
            except RuntimeError as e:
                entry = {"error": first_line(e)}
        row[label] = entry

    entry = {}
    if "cudnn_fp8" not in peers:
        entry["error"] = "not asked for (--peers)"
    else:
        try:
            call, result = cudnn_fp8_call(torch, q, kk, v, causal, scale)
            call()
            torch.cuda.synchronize()
            entry["err_e2e"] = errors(torch, result(), ref16)
            entry["plan"] = _CUDNN["plans"].get((b, h, s, d, bool(causal)), "")
            contenders.append((entry, call, None, None))
        except RuntimeError as e:
            entry = {"error": first_line(e)}
    row["cudnn_fp8"] = entry
    timed_rounds(timer, contenders)
    return row


# ---- RMSE on outlier inputs (--rmse) ----

def outlier_inputs(torch, shape, gen):
    """N(0,1) + N(0,100)·Bernoulli(0.001), drawn in float32 and rounded to fp16: the user's tensors."""
    x = torch.randn(shape, generator=gen, device="cuda")
    spike = torch.randn(shape, generator=gen, device="cuda") * 10.0
    hit = torch.rand(shape, generator=gen, device="cuda") < 0.001
    return (x + spike * hit).half()


def attention_fp64(torch, q, k, v, scale):
    """softmax(q·kᵀ·scale)·v in FP64 on the given (unquantized) inputs, four heads at a time."""
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    for b in range(q.shape[0]):
        for h in range(0, q.shape[1], 4):
            s = torch.matmul(q[b, h:h + 4].double(), k[b, h:h + 4].double().transpose(-1, -2)) * scale
            out[b, h:h + 4] = torch.matmul(torch.softmax(s, dim=-1), v[b, h:h + 4].double())
    return out


def rmse_of(out, ref):
    return math.sqrt(((out.double() - ref) ** 2).mean().item())


def run_rmse(torch, F, lib, k, args):
    rows = []
    for b, h, s, d in RMSE_SHAPES:
        row = {"batch": b, "heads": h, "seq": s, "head_dim": d, "per_head": [], "incoherent": [], "sdpa_fp16": []}
        if d not in k["head_dims"]:
            row["error"] = f"no variant for head dim {d}"
            rows.append(row)
            continue
        m = rotation(torch, d, "cuda")
        scale = 1.0 / math.sqrt(d)
        for seed in range(args.seeds):
            print(f"  ({b}, {h}, {s}, {d}) draw {seed + 1} ...", flush=True)
            gen = torch.Generator(device="cuda").manual_seed(7000 + 101 * seed + d)
            q, kk, v = (outlier_inputs(torch, (b, h, s, d), gen) for _ in range(3))
            ref = attention_fp64(torch, q, kk, v, scale)
            for label, prep in (("per_head", lambda x: x), ("incoherent", lambda x: rotate(torch, x, m))):
                (q8, qs), (k8, ks) = (quantize(torch, prep(x), k["format"]) for x in (q, kk))
                v8, vs = quantize(torch, v, k["format"])
                o = torch.full_like(q, float("nan"))
                ours_call(torch, lib, q8, k8, v8, qs, ks, vs, o, (b, h, s, d), False, scale)()
                torch.cuda.synchronize()
                row[label].append(rmse_of(o, ref))
            row["sdpa_fp16"].append(rmse_of(F.scaled_dot_product_attention(q, kk, v), ref))
            del ref
            torch.cuda.empty_cache()
        for label in ("per_head", "incoherent", "sdpa_fp16"):
            row[label + "_mean"] = sum(row[label]) / len(row[label])
        rows.append(row)
    return rows


def rmse_table(rows, seeds):
    lines = ["| shape (B,H,S,D) | evo FP8, per-head e4m3 | evo FP8, per-head + incoherent | incoherent gain | "
             "fp16 SDPA |", "|---|---:|---:|---:|---:|"]
    for r in rows:
        shape = f"({r['batch']},{r['heads']},{r['seq']},{r['head_dim']})"
        if "error" in r:
            lines.append(f"| {shape} | n/a | n/a | n/a | n/a ({r['error']}) |")
            continue
        lines.append(f"| {shape} | {r['per_head_mean']:.2e} | {r['incoherent_mean']:.2e} | "
                     f"{r['per_head_mean'] / r['incoherent_mean']:.2f}x | {r['sdpa_fp16_mean']:.2e} |")
    lines += ["", f"RMSE of the output against FP64 attention on the fp16 inputs, mean over {seeds} draws; inputs "
              "Q, K, V ~ N(0,1) + N(0,100)·Bernoulli(0.001) rounded to fp16, softmax scale 1/sqrt(D), not causal. "
              "Incoherent: Q and K times M = diag(s)·H/sqrt(D) (evo_quantize_abi.h) before quantizing."]
    return lines


# ---- reporting ----

def cell_time(entry, method):
    t = entry.get(method) if "error" not in entry else None
    if not t or "median_us" not in t:
        return None
    return t["median_us"]


def fmt_us(t, entry=None, method=None):
    if t is None:
        return "n/a"
    if method == "events":
        e = entry[method]
        return f"{t:.1f} [{e['p10_us']:.1f}–{e['p90_us']:.1f}]"
    return f"{t:.1f}"


def rounds_note(args):
    return (f"; the contenders in turn over {args.rounds} rounds, each one's time the median of its round medians"
            if args.rounds > 1 else "")


def table(rows, causal, method, title):
    lines = [f"### {'causal' if causal else 'non-causal'} — {title}", "",
             "| preset | ours µs | TFLOP/s | flash µs | ratio | cuDNN µs | ratio | efficient µs | ratio | cuDNN FP8 µs | "
             "TFLOP/s | ratio | errors (rel-L2) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r["causal"] != causal:
            continue
        ours = r["ours"]
        t = cell_time(ours, method)
        cells = [f"{r['preset']} ({r['batch']},{r['heads']},{r['seq']},{r['head_dim']})",
                 fmt_us(t, ours, method), f"{r['flops'] / (t * 1e-6) / 1e12:.1f}" if t else "n/a"]
        for label in PEERS:
            e = r[label]
            tb = cell_time(e, method)
            cells.append(fmt_us(tb, e, method))
            if label == "cudnn_fp8":
                cells.append(f"{r['flops'] / (tb * 1e-6) / 1e12:.1f}" if tb else "n/a")
            cells.append(f"{tb / t:.2f}" if tb and t else "n/a")
        errs = []
        if "err_deq" in ours:
            errs.append(f"ours {ours['err_deq']['rel_l2']:.1e} deq / {ours['err_e2e']['rel_l2']:.1e} e2e")
        else:
            errs.append("ours n/a")
        for label in PEERS:
            if "err_e2e" in r[label]:
                errs.append(f"{LABELS[label]} {r[label]['err_e2e']['rel_l2']:.1e}")
        cells.append("; ".join(errs))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def error_table(rows, causal):
    lines = [f"### {'causal' if causal else 'non-causal'} — errors and quantization", "",
             "| preset | quantize q,k,v µs | ours vs dequantized: rel-L2 / max-abs | ours vs fp16 inputs | "
             "flash | cuDNN | efficient | cuDNN FP8 | n/a reasons |",
             "|---|---:|---|---|---|---|---|---|---|"]

    def pair(e):
        return f"{e['rel_l2']:.2e} / {e['max_abs']:.2e}" + (f" ({e['nonfinite']} non-finite)" if e["nonfinite"] else "")

    for r in rows:
        if r["causal"] != causal:
            continue
        ours = r["ours"]
        q = r.get("quant", {}).get("events", {})
        cells = [r["preset"], f"{q['median_us']:.1f}" if "median_us" in q else "n/a",
                 pair(ours["err_deq"]) if "err_deq" in ours else "n/a",
                 pair(ours["err_e2e"]) if "err_e2e" in ours else "n/a"]
        reasons = []
        for who, e in [("ours", ours)] + [(LABELS[label], r[label]) for label in PEERS]:
            if who != "ours":
                cells.append(pair(e["err_e2e"]) if "err_e2e" in e else "n/a")
            if "error" in e:
                reasons.append(f"{who}: {e['error']}")
            for m in ("graph", "events"):
                if isinstance(e.get(m), dict) and "error" in e[m]:
                    reasons.append(f"{who} {m}: {e[m]['error']}")
        if ours.get("same_output_after_timing") is False:
            reasons.append("ours: output changed between the check and the timed calls")
        cells.append("; ".join(reasons).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def finite_or_none(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: finite_or_none(v) for k, v in x.items()}
    if isinstance(x, list):
        return [finite_or_none(v) for v in x]
    return x


def load_torch(prog):
    """(torch, torch.nn.functional, SDPBackend, sdpa_kernel) with a CUDA device, or None after saying why on stderr
    (prog names the tool)."""
    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print(f"{prog}: needs PyTorch 2.3 or newer with CUDA ({e})", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print(f"{prog}: PyTorch sees no CUDA device", file=sys.stderr)
        return None
    return torch, F, SDPBackend, sdpa_kernel


def main(argv=None):
    args = parse_args(argv)
    if args.peers_only:
        k = None
        json_path, md_path = os.path.join(args.out, "sdpa-peers.json"), os.path.join(args.out, "sdpa-peers.md")
        if args.dry_run:
            print(f"peers only: {', '.join(LABELS[x] for x in args.peer_list)}; causal: {args.causal}")
            for name, b, h, n, d in args.preset_list:
                print(f"  {name:<9} ({b}, {h}, {n}, {d})")
            print("dry run: nothing built, run or written")
            return 0
    else:
        try:
            k = read_export(args.file)
        except (OSError, NotAnExport) as e:
            print(f"compare_sdpa: {e}", file=sys.stderr)
            return 2
        json_path, md_path = out_paths(args, k)
        if args.dry_run:
            print_plan(args, k, build_command(find_nvcc(args.nvcc), args.arch or k["arch"], k["path"],
                                              "<tmp>/libevo_attn.so"))
            print("dry run: nothing built, run or written")
            return 0

    mods = load_torch("compare_sdpa")
    if mods is None:
        return 2
    torch, F, SDPBackend, sdpa_kernel = mods
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    kk = k or {"path": "(peers only)", "genome": "", "key": "", "format": "e4m3", "arch": args.arch or "sm_90"}
    info = {
        "file": kk["path"], "genome": kk["genome"], "key": kk["key"], "format": kk["format"],
        "arch": args.arch or kk["arch"], "device": torch.cuda.get_device_name(),
        "capability": "sm_%d%d" % torch.cuda.get_device_capability(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "graph_calls": GRAPH_CALLS, "graph_replays": args.replays, "event_reps": args.reps,
        "flush_bytes": FLUSH_BYTES,
    }
    print(f"device {info['device']} ({info['capability']}), torch {info['torch']}, CUDA {info['cuda']}, "
          f"cuDNN {info['cudnn']}, {info['date']}")
    print(f"kernel {kk['path']}: {kk['genome']} ({kk['format']})")

    workdir = tempfile.mkdtemp(prefix="evo-sdpa-")
    if args.rmse:
        try:
            rows = run_rmse(torch, F, load_library(torch, k, args, workdir), k, args)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        md = [f"# {os.path.basename(k['path'])}: RMSE on outlier inputs", "",
              f"{info['device']} ({info['capability']}), torch {info['torch']}, CUDA {info['cuda']}, {info['date']}.",
              f"Kernel: `{k['genome']}`, format {k['format']}, key {k['key'][:8]}.", ""] + rmse_table(rows, args.seeds)
        return write_report(args, info, rows, md, json_path, md_path)
    try:
        lib = load_library(torch, k, args, workdir) if k else None
        timer = Timer(torch, args.reps, args.replays, rounds=args.rounds)
        rows = []
        for causal in args.causal_list:
            for i, preset in enumerate(args.preset_list):
                print(f"  {preset[0]}{' causal' if causal else ''} ...", flush=True)
                rows.append(run_preset(torch, F, sdpa_kernel, SDPBackend, lib, timer, k, preset, causal, 1000 + i,
                                       args.peer_list, args.incoherent))
                torch.cuda.empty_cache()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    md = [f"# {os.path.basename(kk['path'])} vs PyTorch SDPA and cuDNN FP8", "",
          f"{info['device']} ({info['capability']}), torch {info['torch']}, CUDA {info['cuda']}, cuDNN {info['cudnn']}, "
          f"{info['date']}.", f"Kernel: `{kk['genome']}`, format {kk['format']}, key {kk['key'][:8]}.", "",
          "Kernel time only; inputs fp16 `torch.randn`, ours on 8-bit codes quantized per (batch, head) beforehand "
          + ("after rotating Q and K (incoherent processing) " if args.incoherent else "") +
          "(timed separately). Ratio = peer time / our time (> 1: ours is faster). TFLOP/s counts 4·B·H·S²·D "
          "(causal: S(S+1)/2 pairs). cuDNN FP8: `graph.sdpa_fp8`, e4m3 codes with one scale per tensor, FP8 output. "
          "Errors: rel-L2 against FP32 attention, ours on the dequantized inputs (deq) and every contender on the "
          "fp16 inputs (e2e).", ""]
    ws = sorted({(r["preset"], r["ours"]["workspace_bytes"]) for r in rows if r["ours"].get("workspace_bytes")})
    if ws:
        md += ["Ours with a workspace allocated once (evo_attention_forward_ws, as cuDNN's graph gets its own): "
               + ", ".join(f"{p} {b >> 20} MiB" for p, b in ws) + ".", ""]
    for causal in args.causal_list:
        md += table(rows, causal, "graph",
                    f"CUDA graph replay: {GRAPH_CALLS} calls back to back, median per-call time over {args.replays} "
                    f"replays (L2 warm){rounds_note(args)}") + [""]
        md += table(rows, causal, "events",
                    f"CUDA events around each call, {FLUSH_BYTES >> 20} MiB written before each (L2 cold); median "
                    f"[p10–p90] over {args.reps} calls{rounds_note(args)}") + [""]
        md += error_table(rows, causal) + [""]
    plans = [f"- {r['preset']}{' causal' if r['causal'] else ''}: {r['cudnn_fp8']['plan']}" for r in rows
             if r.get("cudnn_fp8", {}).get("plan")]
    if plans:
        md += ["cuDNN FP8's plans: every plan its heuristics (modes A and FALLBACK) offer built and timed, the fastest "
               f"kept (µs per call: a CUDA graph of {GRAPH_CALLS} calls, the median of 3 replays):"] + plans + [""]
    return write_report(args, info, rows, md, json_path, md_path)


def write_report(args, info, rows, md, json_path, md_path):
    text = "\n".join(md)
    print()
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(finite_or_none({**info, "incoherent": args.incoherent, "results": rows}), f, indent=2)
        f.write("\n")
    with open(md_path, "w") as f:
        f.write(text + "\n")
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
