#!/usr/bin/env python3
"""fp8_accum_probe.py — what the FP32 accumulator of the FP8 tensor core keeps, measured on the GPU (Hopper: wgmma),
the fact the fp8 accuracy class's model rests on (attn_numerics.h: 13 explicit mantissa bits after each k-step of 32).

Each probe is one row of A times one column of B (M = N = 64; everything else zero) through torch._scaled_mm with
use_fast_accum=True (the tensor core's own accumulation, no promotion to FP32 registers), scales 1, FP32 output. The
products are powers of two or small integers, exact in e4m3 and in their product, so the result shows only what
the accumulation kept:
  inside a k-step: 2^16 + 2^(16-e) with both terms in the same 32 elements — the smallest e that is lost;
  across k-steps: the same with the second term 32 elements later;
  rounding: 2^16 followed (next k-step) by 6 = 0.75 of the 13-bit ulp (8), and by 4 = one half: truncation keeps 65536;
  sign: the same below zero;
  order: two half-ulps (4 + 4) in one k-step after 2^16 — 65544 when a step's products are summed exactly before the
  accumulator is cut (the model's rule), 65536 when each is cut on its own; and the same spread over two k-steps.
  python3 tools/bench/fp8_accum_probe.py [--k 64,128,256] [--json FILE]
"""
import argparse
import json
import sys


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", default="64,128,256", help="inner dimensions to probe (multiples of 32)")
    p.add_argument("--json", help="write the findings here")
    args = p.parse_args(argv)
    import torch
    dev = torch.device("cuda")
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev)
    name = torch.cuda.get_device_name()
    out = {"device": name, "torch": torch.__version__, "probes": []}

    def run(k, terms):
        """terms: list of (index, a, b); the dot product a·b of row 0 / column 0 as the tensor core sums it."""
        a = torch.zeros((64, k), device=dev)
        bt = torch.zeros((64, k), device=dev)
        for idx, x, y in terms:
            a[0, idx] += x
            bt[0, idx] += y
        a8, b8 = a.to(f8), bt.to(f8)
        assert torch.equal(a8.float(), a) and torch.equal(b8.float(), bt), "a term is not exact in e4m3"
        c = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.float32, use_fast_accum=True)
        return float(c[0, 0].item())

    def lost_at(k, second_index, sign=1.0):
        """the smallest e for which 2^16 + 2^(16-e) comes back as 2^16 (-1: never within 2^-18)"""
        for e in range(1, 35):
            ea = min(e, 17)
            x, y = 2.0 ** (8 - ea), 2.0 ** (8 - (e - ea))
            if y < 2.0 ** -9 or x < 2.0 ** -9:
                break
            r = run(k, [(0, 256.0 * sign, 256.0), (second_index, x * sign, y)])
            if r == 65536.0 * sign:
                return e
        return -1

    for k in [int(x) for x in args.k.split(",")]:
        row = {"k": k,
               "lost_inside_step": lost_at(k, 1),
               "lost_next_step": lost_at(k, 32),
               "lost_last_step": lost_at(k, k - 1)}
        row["plus_0.75ulp_next_step"] = run(k, [(0, 256.0, 256.0), (32, 2.0, 3.0)])
        row["plus_0.5ulp_next_step"] = run(k, [(0, 256.0, 256.0), (32, 2.0, 2.0)])
        row["minus_0.75ulp_next_step"] = run(k, [(0, -256.0, 256.0), (32, -2.0, 3.0)])
        row["plus_0.75ulp_same_step"] = run(k, [(0, 256.0, 256.0), (1, 2.0, 3.0)])
        # two half-ulps in one k-step: 65544 if the step's products are summed exactly before the accumulator is
        # cut, 65536 if each product is cut as it is added
        row["plus_two_half_ulps_same_step"] = run(k, [(0, 256.0, 256.0), (1, 2.0, 2.0), (2, 2.0, 2.0)])
        row["plus_two_half_ulps_two_steps"] = run(k, [(0, 256.0, 256.0), (1, 2.0, 2.0), (32, 2.0, 2.0)])
        # alignment: two 4s first, 2^16 at index g: 65544 when the 4s are summed before 2^16 arrives (g in a later
        # group of the adder, or a sequential sum), 65536 when 2^16 is aligned with them (they are cut to its unit)
        row["small_first_then_big_at"] = {g: run(k, [(0, 2.0, 2.0), (1, 2.0, 2.0), (g, 256.0, 256.0)])
                                          for g in (2, 3, 4, 8, 16, 31, 32) if g < k}
        out["probes"].append(row)
        kept = row["lost_next_step"] - 1
        print(f"K={k}: inside a k-step a term 2^-{row['lost_inside_step']} of the sum is lost "
              f"(so ~{row['lost_inside_step'] - 1} bits kept); in the next k-step 2^-{row['lost_next_step']} "
              f"(~{kept} bits); in the last k-step 2^-{row['lost_last_step']}; 65536 + 6 (0.75 ulp at 13 bits) "
              f"-> {row['plus_0.75ulp_next_step']:.0f}, + 4 -> {row['plus_0.5ulp_next_step']:.0f}, "
              f"-65536 - 6 -> {row['minus_0.75ulp_next_step']:.0f}; + 6 in the same k-step -> "
              f"{row['plus_0.75ulp_same_step']:.0f}; + 4 + 4 in one k-step -> "
              f"{row['plus_two_half_ulps_same_step']:.0f}, in two -> {row['plus_two_half_ulps_two_steps']:.0f}; "
              "4 + 4 first, 65536 at index g: " +
              ", ".join(f"g={g} -> {v:.0f}" for g, v in row["small_first_then_big_at"].items()))
    print(f"device: {name}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
