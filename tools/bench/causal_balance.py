#!/usr/bin/env python3
"""causal_balance.py — max/mean work per block of the sm_90a family's persistent causal orders (a model, no GPU).

Each work item (query tile of BM rows, batch·head) costs its key tiles plus OVH tiles of overhead; a persistent grid
of min(items, SMs) blocks walks the items in Sched's order (tasks/attention_fp8/attention_fp8_sm90.cu):
  stride  level by level, heaviest first, item w to block w mod G (the order before 2026-11-29)
  snake   the same, every second wave of G items walked backwards (Sched::item now)
  greedy  the same list handed out one at a time to the least-loaded block (what an atomic counter would give)
  head    head by head, heaviest first within a head (PERSIST 2's non-causal order), with the snake
Usage: tools/bench/causal_balance.py [--sms 132] [--bm 128] [--tile-n 128,192] [--ovh 1] [B,H,S,D ...]
"""
import argparse
import heapq
import math
import signal


def items(b, h, s, bm, tn, ovh, head_major):
    nq, nbh = (s + bm - 1) // bm, b * h
    out = []
    for w in range(nq * nbh):
        r = w % nq if head_major else w // nbh
        qt = nq - 1 - r
        out.append(math.ceil(min(s, qt * bm + bm) / tn) + ovh)
    return out


def balance(work, sms, order):
    n = len(work)
    g = min(sms, n)
    load = [0.0] * g
    if order == "greedy":
        heap = [(0.0, i) for i in range(g)]
        for c in work:
            t, i = heapq.heappop(heap)
            heapq.heappush(heap, (t + c, i))
        load = [t for t, _ in heap]
    else:
        for w, c in enumerate(work):
            k, i = divmod(w, g)
            if order != "stride" and k % 2:
                i = min(g, n - k * g) - 1 - i
            load[i] += c
    return max(load) / (sum(work) / g)


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--bm", type=int, default=128, help="query rows per block (CONSUMERS x WG_ROWS)")
    ap.add_argument("--tile-n", default="128,192")
    ap.add_argument("--ovh", type=float, default=1.0, help="per-item overhead in key tiles")
    ap.add_argument("shapes", nargs="*", default=["2,8,2048,64", "4,8,2048,64", "4,16,4096,128", "1,16,16384,64"])
    a = ap.parse_args()
    shapes = []
    for sh in a.shapes:
        try:
            b, h, s, _ = (int(x) for x in sh.split(","))
        except ValueError:
            ap.error("a shape is B,H,S,D (four integers), not '%s'" % sh)
        if min(b, h, s) < 1:
            ap.error("a shape's B, H and S are at least 1, not '%s'" % sh)
        shapes.append((sh, b, h, s))
    try:
        tiles = [int(x) for x in a.tile_n.split(",")]
    except ValueError:
        ap.error("--tile-n takes key tiles like 128,192, not '%s'" % a.tile_n)
    if a.sms < 1 or a.bm < 1 or min(tiles) < 1:
        ap.error("--sms, --bm and every --tile-n are at least 1")
    print("%-16s %6s %8s %8s %8s %8s" % ("B,H,S,D causal", "TILE_N", "stride", "snake", "greedy", "head"))
    for sh, b, h, s in shapes:
        for tn in tiles:
            lv = items(b, h, s, a.bm, tn, a.ovh, False)
            hd = items(b, h, s, a.bm, tn, a.ovh, True)
            cols = (balance(lv, a.sms, "stride"), balance(lv, a.sms, "snake"), balance(lv, a.sms, "greedy"),
                    balance(hd, a.sms, "snake"))
            print("%-16s %6d %8.3f %8.3f %8.3f %8.3f" % ((sh, tn) + cols))


if __name__ == "__main__":
    main()
