#!/usr/bin/env python3
"""bench_table.py: the markdown tables of bench/gpu_bench.sh (and so of
bench/graph_ab.sh) from its JSON lines.

Usage: bench_table.py BENCH.jsonl [RUNS]
RUNS is gpu_bench.sh's run list ("NAME:FLAGS;..."), for the order of the
rows. Per case and dagrun run: the median over the rounds (ALTERNATE) of
dagrun's makespan and of the compared hand-written variant's, the median
of the per-round ratio dagrun / hand-written with its min-max and the
number of rounds where both sides ran (n), and "/ first", the median
per-round ratio to the case's first run (an A/B of two runs). Then every
hand-written variant, its median over the rounds.
"""
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
run_names = sys.argv[2].split(";") if len(sys.argv) > 2 else []
run_names = [r.split(":", 1)[0] for r in run_names if r]
# Without RUNS: the runs in the order the lines have them.
for r in rows:
    name = r.get("run") if r.get("source") == "dagrun" else str(r.get("source", ""))[len("dagrun-"):] \
        if str(r.get("source", "")).startswith("dagrun-") else None
    if name and name not in run_names:
        run_names.append(name)
# Cases in the order dagrun ran them, then any only a baseline measured.
cases = []
for r in sorted(rows, key=lambda r: not str(r.get("source", "")).startswith("dagrun")):
    if r["case"] not in cases:
        cases.append(r["case"])
NO_BASELINE = "no baseline program for this case"


def us(v):
    return "%.1f" % v if isinstance(v, (int, float)) else "-"


def num(r):
    return r is not None and "error" not in r and isinstance(r.get("makespan_us"), (int, float)) \
        and r["makespan_us"] > 0


def rounds():
    return sorted({r.get("round", 1) for r in rows})


def hand(case, mode, rnd):
    for r in rows:
        if r.get("source") == "hand" and r.get("case") == case and r.get("compare") == mode \
           and r.get("round", 1) == rnd and "error" not in r:
            return r
    return None


def hand_error(case):
    for r in rows:
        if r.get("source") == "hand" and r.get("case") == case and "error" in r:
            return r["error"]
    return None


def dag(case, run, rnd):
    for r in rows:
        if r.get("case") == case and r.get("round", 1) == rnd and \
           ((r.get("source") == "dagrun" and r.get("run") == run) or r.get("source") == "dagrun-" + run):
            return r
    return None


def med(xs):
    return statistics.median(xs) if xs else None


def ratio_cells(pairs):
    """pairs: [(a, b)] makespans of one round each: median a/b, min-max."""
    rs = [a / b for a, b in pairs]
    if not rs:
        return "-", "-"
    return "%.3f" % med(rs), "%.3f-%.3f" % (min(rs), max(rs))


print("| case | dagrun run | dagrun µs | plan streams / events | hand-written µs (variant) "
      "| ratio | ratio min-max | n | / first |")
print("| --- | --- | ---: | --- | --- | ---: | --- | ---: | ---: |")
for c in cases:
    runs = [n for n in run_names if any(dag(c, n, k) for k in rounds())]
    for run in runs:
        mode = "streams" if any(dag(c, run, k) and dag(c, run, k).get("compare") == "streams"
                                for k in rounds()) else "graph"
        ds = [dag(c, run, k) for k in rounds()]
        hs = [hand(c, mode, k) for k in rounds()]
        good = [d for d in ds if num(d)]
        errs = [d for d in ds if d is not None and "error" in d]
        if not good:
            dcell = "FAIL: " + errs[0]["error"][:80] if errs else "-"
            pcell = ""
        else:
            dcell = us(med([d["makespan_us"] for d in good]))
            if any(d.get("verified") is False for d in good):
                dcell += " (verify FAILED)"
            if errs:
                dcell += " (%d failed)" % len(errs)
            pcell = "%s / %s" % (good[0].get("plan_streams", "?"), good[0].get("plan_events", "?"))
        hgood = [h for h in hs if num(h)]
        if hgood:
            hcell = "%s (%s)" % (us(med([h["makespan_us"] for h in hgood])), hgood[0]["variant"])
        else:
            err = hand_error(c)
            hcell = "none" if err == NO_BASELINE else "FAIL: " + err[:80] if err else "-"
        pairs = [(d["makespan_us"], h["makespan_us"]) for d, h in zip(ds, hs) if num(d) and num(h)]
        ratio, spread = ratio_cells(pairs)
        first = [dag(c, runs[0], k) for k in rounds()]
        ab = "-"
        if run != runs[0]:
            ab = ratio_cells([(d["makespan_us"], f["makespan_us"]) for d, f in zip(ds, first)
                              if num(d) and num(f)])[0]
        print("| %s | %s | %s | %s | %s | %s | %s | %d | %s |" % (
            c, run, dcell, pcell, hcell, ratio, spread, len(pairs), ab))

print()
print("ratio = dagrun / hand-written (1.000: as fast), the median over n paired rounds "
      "(ALTERNATE) of each round's ratio; dagrun µs and hand-written µs are the medians of the "
      "rounds' makespans; / first = median per-round ratio to the case's first run. "
      "All hand-written variants (median over the rounds):")
print()
print("| case | variant | streams | makespan µs | min µs | max µs | rounds | notes |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
skip = {"case", "variant", "compare", "nodes", "streams", "iterations", "makespan_us",
        "min_us", "max_us", "source", "round"}
seen = []
for r in rows:
    if r.get("source") != "hand":
        continue
    if "error" in r:
        if r["error"] != NO_BASELINE:
            print("| %s | FAIL | | | | | %s | %s |" % (r["case"], r.get("round", 1), r["error"]))
        continue
    key = (r["case"], r["variant"])
    if key in seen:
        continue
    seen.append(key)
    same = [x for x in rows if x.get("source") == "hand" and "error" not in x
            and (x["case"], x["variant"]) == key]
    notes = ", ".join("%s=%s" % (k, v) for k, v in r.items() if k not in skip)
    print("| %s | %s | %s | %s | %s | %s | %d | %s |" % (
        r["case"], r["variant"], r["streams"], us(med([x["makespan_us"] for x in same])),
        us(min(x["min_us"] for x in same)), us(max(x["max_us"] for x in same)), len(same), notes))
