#!/usr/bin/env python3
"""gen_pipeline.py: writes large dagrun pipelines (format v1) for benchmarks.

Every node is a real kernel node (`scale_f32` over element slices), so the
parser, the hazard pass and the planner do real work: the DAG is derived
from the slices each node reads and writes, never from `after:`. This is a
generator of inputs, not a test of their meaning; python3 standard library
only.

Shapes (W = --width, S = --slice elements per lane slot):
  chain     one lane: t[0:S] -> a[0:S], then ping-pong between a and b.
  layered   W lanes, each a chain over its own slot of buffers a/b; every
            --period levels all lanes meet in one join node: each lane's
            last node of a period writes its slot of the small shared
            buffer s, the join reads all of s and writes t, and each lane's
            first node of the next period reads its slot of t. Width W.
  forkjoin  one fork node (writes t), W lanes of depth (N-2)/W, one join
            node (reads s): a single fork-join. Width W.
  random    random layered DAG: levels of W nodes alternating between
            buffers a and b; node j of level k reads slot p (random, from
            the seeded generator below) of the previous level's buffer and
            writes slot j of its own, so it gets a RAW edge from (k-1, p),
            WAR edges from the nodes of level k-1 that read slot j, and a
            WAW edge from (k-2, j). Width about W.

The random generator is splitmix64, so bench/cuda/layered400.cu can build
exactly the same DAG from the same seed (see layered_pred there).

Usage:
  gen_pipeline.py --nodes N --width W --shape SHAPE --out FILE
                  [--slice S] [--period P] [--seed SEED] [--alpha A]
                  [--mode streams|graph] [--iterations N] [--warmup N]
"""

import argparse
import sys

MASK64 = (1 << 64) - 1


class SplitMix64:
    """splitmix64, bit-exact with splitmix64() in bench/cuda/common.h."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)


class Writer:
    """Collects the nodes section; emits one flow mapping per node line."""

    def __init__(self, out, alpha, limit):
        self.out = out
        self.alpha = alpha
        self.limit = limit
        self.count = 0
        self.chunk = []

    def full(self):
        return self.count >= self.limit

    def scale(self, node_id, x, y):
        self.chunk.append(
            '  %s: {op: kernel, kernel: scale_f32, args: {x: "%s", alpha: %s, y: "%s"}}\n'
            % (node_id, x, self.alpha, y))
        self.count += 1
        if len(self.chunk) >= 8192:
            self.flush()

    def flush(self):
        self.out.write("".join(self.chunk))
        self.chunk = []


def slot(buf, lane, s):
    return "%s[%d:%d]" % (buf, lane * s, (lane + 1) * s)


def gen_chain(w, args):
    s = args.slice
    w.scale("n0", slot("t", 0, s), slot("a", 0, s))
    cur, other = "a", "b"
    i = 1
    while not w.full():
        w.scale("n%d" % i, slot(cur, 0, s), slot(other, 0, s))
        cur, other = other, cur
        i += 1


def gen_lanes(w, args, period, fork_first):
    """Lanes with a join every `period` levels (see the file comment)."""
    width, s = args.width, args.slice
    cur = ["a"] * width
    level = 0
    join = 0
    if fork_first and not w.full():
        w.scale("fork", "s[0:%d]" % (width * s), "t[0:%d]" % (width * s))
    while not w.full():
        pos = level % period
        for lane in range(width):
            if w.full():
                break
            nid = "l%d_%d" % (lane, level)
            src = slot("t", lane, s) if pos == 0 else slot(cur[lane], lane, s)
            if pos == period - 1:
                dst = slot("s", lane, s)
            else:
                nxt = "b" if (pos != 0 and cur[lane] == "a") else "a"
                if pos == 0:
                    nxt = "a"
                dst = slot(nxt, lane, s)
                cur[lane] = nxt
            w.scale(nid, src, dst)
        level += 1
        if level % period == 0 and not w.full():
            w.scale("join%d" % join, "s[0:%d]" % (width * s), "t[0:%d]" % (width * s))
            join += 1


def gen_random(w, args):
    width, s = args.width, args.slice
    rng = SplitMix64(args.seed)
    level = 0
    while not w.full():
        src_buf = "t" if level == 0 else ("a" if level % 2 == 1 else "b")
        dst_buf = "a" if level % 2 == 0 else "b"
        for j in range(width):
            if w.full():
                break
            p = rng.next() % width
            w.scale("r%d_%d" % (level, j), slot(src_buf, p, s), slot(dst_buf, j, s))
        level += 1


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--width", type=int, default=1)
    ap.add_argument("--shape", choices=["chain", "layered", "forkjoin", "random"], default="layered")
    ap.add_argument("--out", required=True, help="output file, '-' for stdout")
    ap.add_argument("--slice", type=int, default=256, help="elements per lane slot")
    ap.add_argument("--period", type=int, default=8, help="layered: levels between joins")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--alpha", default="1.0")
    ap.add_argument("--name", default=None)
    ap.add_argument("--mode", choices=["streams", "graph"], default=None)
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--warmup", type=int, default=None)
    args = ap.parse_args(argv)
    if args.nodes < 1 or args.width < 1 or args.slice < 1 or args.period < 1:
        ap.error("--nodes, --width, --slice and --period must be >= 1")
    if args.shape == "chain":
        args.width = 1
    n = args.width * args.slice

    out = sys.stdout if args.out == "-" else open(args.out, "w", buffering=1 << 20)
    name = args.name or "%s-%d-w%d" % (args.shape, args.nodes, args.width)
    out.write("# generated by bench/gen_pipeline.py %s\n" % " ".join(argv))
    out.write("dagrun: 1\nname: %s\n" % name)
    run = []
    if args.mode:
        run.append("mode: %s" % args.mode)
    if args.iterations is not None:
        run.append("iterations: %d" % args.iterations)
    if args.warmup is not None:
        run.append("warmup: %d" % args.warmup)
    if run:
        out.write("run: {%s}\n" % ", ".join(run))
    out.write("buffers:\n")
    out.write("  t: {type: f32, count: %d, init: {random: %d}}\n" % (n, args.seed))
    out.write("  s: {type: f32, count: %d, init: {random: %d}}\n" % (n, args.seed + 1))
    for b in ("a", "b"):
        out.write("  %s: {type: f32, count: %d, init: zeros}\n" % (b, n))
    out.write("nodes:\n")

    w = Writer(out, args.alpha, args.nodes)
    if args.shape == "chain":
        gen_chain(w, args)
    elif args.shape == "layered":
        gen_lanes(w, args, args.period, fork_first=False)
    elif args.shape == "forkjoin":
        depth = max(1, (args.nodes - 2) // args.width)
        # One period as deep as the lanes: fork, lanes, one join at the end.
        gen_lanes(w, args, depth, fork_first=True)
    else:
        gen_random(w, args)
    w.flush()
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
