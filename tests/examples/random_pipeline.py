#!/usr/bin/env python3
"""random_pipeline.py: writes a random but valid dagrun pipeline: a random
program of kernels, copies and memsets over random slices of a few buffers,
with a stream-ordered scratch buffer of several lifetimes and a few explicit `after:` edges. Used
with --verify and random host delays, any dependency the scheduler misses
shows up as a difference against the serial run.

Usage: random_pipeline.py SEED [NODES] > pipeline.yaml
"""
import random
import sys


def main():
    seed = int(sys.argv[1])
    n_nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    rng = random.Random(seed)
    n_buf = rng.randint(2, 5)
    size = rng.choice([64, 256, 1000])
    out = [f"# random pipeline, seed {seed}", "dagrun: 1", f"name: random-{seed}",
           "run: {iterations: 2, warmup: 1}", "buffers:"]
    for b in range(n_buf):
        out.append(f"  b{b}: {{type: f32, count: {size}, init: {{random: {seed * 10 + b}}}}}")
    out.append(f"  h0: {{type: f32, count: {size}, where: host, init: iota}}")
    out.append(f"  t0: {{type: f32, count: {size}}}")
    out.append("nodes:")

    def out_buf(bufs, *inputs):
        """An output buffer: any buffer none of the inputs read, so no
        kernel or copy reads and writes overlapping memory (which would be
        a race inside one GPU kernel, not a scheduling question)."""
        used = {x.split("[")[0].strip('"') for x in inputs}
        free = [b for b in bufs if b not in used]
        return rng.choice(free) if free else None

    def sl(buf, length=None):
        if length is None:
            length = rng.randint(1, size)
        start = rng.randint(0, size - length)
        return f'"{buf}[{start}:{start + length}]"', length

    ids = []
    # t0 has one to four lifetimes (alloc -> uses -> free, again and
    # again): its allocs and frees alternate at random points.
    n_lives = rng.randint(1, 4)
    toggles = sorted(rng.sample(range(n_nodes), min(n_nodes, 2 * n_lives)))
    scratch_live = False
    for i in range(n_nodes):
        nid = f"n{i}"
        if toggles and i == toggles[0]:
            toggles.pop(0)
            if scratch_live:
                out.append(f"  {nid}: {{op: free, buffer: t0}}")
            else:
                # Stream-ordered memory starts undefined: fill it right away.
                out.append(f"  {nid}: {{op: alloc, buffer: t0}}")
                out.append(f"  {nid}_init: {{op: memset, dst: t0, value: {rng.randint(0, 3)}}}")
            scratch_live = not scratch_live
            ids.append(nid)
            continue
        bufs = [f"b{b}" for b in range(n_buf)] + (["t0"] if scratch_live else [])
        kind = rng.choice(["scale", "add", "axpy", "copy", "memset", "copy_host", "noop"])
        after = ""
        if ids and rng.random() < 0.1:
            after = f", after: [{rng.choice(ids)}]"
        if kind == "scale":
            x, n = sl(rng.choice(bufs))
            yb = out_buf(bufs, x)
            if yb is None:
                continue
            y, _ = sl(yb, n)
            out.append(f"  {nid}: {{op: kernel, kernel: scale_f32, args: {{x: {x}, alpha: {rng.choice([0.5, 2.0, -1.0])}, y: {y}}}{after}}}")
        elif kind == "add":
            a, n = sl(rng.choice(bufs))
            b, _ = sl(rng.choice(bufs), n)
            yb = out_buf(bufs, a, b)
            if yb is None:
                continue
            y, _ = sl(yb, n)
            out.append(f"  {nid}: {{op: kernel, kernel: add_f32, args: {{a: {a}, b: {b}, y: {y}}}{after}}}")
        elif kind == "axpy":
            x, n = sl(rng.choice(bufs))
            yb = out_buf(bufs, x)
            if yb is None:
                continue
            y, _ = sl(yb, n)
            out.append(f"  {nid}: {{op: kernel, kernel: axpy_f32, args: {{alpha: 0.25, x: {x}, y: {y}}}{after}}}")
        elif kind == "copy":
            s, n = sl(rng.choice(bufs))
            db = out_buf(bufs, s)
            if db is None:
                continue
            d, _ = sl(db, n)
            out.append(f"  {nid}: {{op: copy, src: {s}, dst: {d}{after}}}")
        elif kind == "copy_host":
            s, n = sl("h0")
            d, _ = sl(rng.choice(bufs), n)
            if rng.random() < 0.5:
                s, d = d, s
            out.append(f"  {nid}: {{op: copy, src: {s}, dst: {d}{after}}}")
        elif kind == "memset":
            d, _ = sl(rng.choice(bufs))
            out.append(f"  {nid}: {{op: memset, dst: {d}, value: {rng.randint(0, 255)}{after}}}")
        else:
            out.append(f"  {nid}: {{op: noop{after}}}")
        ids.append(nid)
    if scratch_live:
        out.append("  free_t0: {op: free, buffer: t0}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
