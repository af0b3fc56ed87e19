#!/usr/bin/env python3
"""ab_table.py — two sm90_bench timing logs side by side: per genome and shape, the CUDA-event medians of every run in
log A and in log B (a log may hold several runs, appended), and B's median over A's (< 1: B is faster).

Usage: tools/bench/ab_table.py A.log B.log [--names A,B]   (tools/gpu_ci.sh sm90ab writes the two logs)
"""
import argparse
import os
import re
import signal
import statistics
import sys

LINE = re.compile(r"^(\S+)\s+(\(\d+,\d+,\d+,\d+\)(?: causal)?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")


def read(path):
    """(genome, shape) -> [(events median, graph median)] per run in the log, and the keys in their first order.
    Raises OSError for a path that is not a readable regular file (a FIFO would block the read)."""
    if not os.path.isfile(path):
        raise OSError("not a regular file (a log of sm90_bench --time)")
    runs = {}
    order = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = LINE.match(line)
            if not m:
                continue
            key = (m.group(1), m.group(2))
            if key not in runs:
                runs[key] = []
                order.append(key)
            runs[key].append((float(m.group(3)), float(m.group(6))))
    return runs, order


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--names", default="A,B")
    args = ap.parse_args()
    na, nb = args.names.split(",", 1)
    logs = []
    for path in (args.a, args.b):
        try:
            runs, keys = read(path)
        except OSError as e:
            print("ab_table.py: %s: %s" % (path, e.strerror or e), file=sys.stderr)
            return 2
        if not runs:
            print("ab_table.py: %s: no timing lines (sm90_bench --time)" % path, file=sys.stderr)
            return 2
        logs.append((runs, keys))
    (ra, order), (rb, order_b) = logs
    order += [k for k in order_b if k not in ra]
    print("| genome | shape | %s events µs | %s events µs | %s / %s | %s graph µs | %s graph µs |"
          % (na, nb, nb, na, na, nb))
    print("|---|---|---:|---:|---:|---:|---:|")
    for key in order:
        a, b = ra.get(key, []), rb.get(key, [])
        fa = " / ".join("%.1f" % e for e, _ in a) or "-"
        fb = " / ".join("%.1f" % e for e, _ in b) or "-"
        ratio = "%.3f" % (statistics.median(e for e, _ in b) / statistics.median(e for e, _ in a)) if a and b else "-"
        ga = " / ".join("%.1f" % g for _, g in a) or "-"
        gb = " / ".join("%.1f" % g for _, g in b) or "-"
        print("| %s | %s | %s | %s | %s | %s | %s |" % (key[0], key[1], fa, fb, ratio, ga, gb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
