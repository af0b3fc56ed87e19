#!/usr/bin/env python3
"""peer_ncu.py — one call of a peer attention kernel inside a profiler range, for Nsight Compute.

  ncu --profile-from-start off --set full -o REPORT python3 tools/bench/peer_ncu.py cudnn_fp8 4,16,4096,128 [--causal]

Builds the peer's call (cuDNN FP8 SDPA through cudnn-frontend, as tools/bench/compare_sdpa.py does, or PyTorch's fp16
SDPA on the cuDNN or flash backend) on random [B, H, S, D] inputs, makes three warm-up calls, then one call between
cudaProfilerStart and cudaProfilerStop, so that a profiler started with --profile-from-start off sees only that call's
kernels. Prints the peer, the shape and the call's time (CUDA events, outside the profiled range) on stdout.
Exit 2 on a bad argument, 1 when the peer cannot run here.
"""
import math
import os
import sys

PEERS = ("cudnn_fp8", "cudnn", "flash")
USAGE = "usage: peer_ncu.py {cudnn_fp8|cudnn|flash} B,H,S,D [--causal]"


def parse(argv):
    if len(argv) not in (2, 3) or argv[0] not in PEERS or (len(argv) == 3 and argv[2] != "--causal"):
        raise ValueError(USAGE)
    try:
        shape = tuple(int(x) for x in argv[1].split(","))
    except ValueError:
        raise ValueError(f"{USAGE}\nshape '{argv[1]}': four positive integers B,H,S,D") from None
    if len(shape) != 4 or min(shape) < 1:
        raise ValueError(f"{USAGE}\nshape '{argv[1]}': four positive integers B,H,S,D")
    return argv[0], shape, len(argv) == 3


def main(argv):
    try:
        peer, (b, h, s, d), causal = parse(argv)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import compare_sdpa

    gen = torch.Generator(device="cuda").manual_seed(1)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    if peer == "cudnn_fp8":
        try:
            call, _ = compare_sdpa.cudnn_fp8_call(torch, q, k, v, causal, 1.0 / math.sqrt(d))
        except RuntimeError as e:
            print(f"peer_ncu: {peer}: {e}", file=sys.stderr)
            return 1
    else:
        backend = SDPBackend.CUDNN_ATTENTION if peer == "cudnn" else SDPBackend.FLASH_ATTENTION

        def call():
            with sdpa_kernel([backend]):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    call()
    t1.record()
    torch.cuda.synchronize()
    cudart = torch.cuda.cudart()
    cudart.cudaProfilerStart()
    call()
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()
    print(f"peer {peer} shape ({b},{h},{s},{d}) causal {int(causal)} device {torch.cuda.get_device_name()} "
          f"call {t0.elapsed_time(t1) * 1e3:.1f} us (events, warm L2, outside the profiled range)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
