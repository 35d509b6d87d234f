#!/usr/bin/env python3
"""trip_spans.py TRACE [REFERENCE]: checks a dagrun --trace's loop trips.

For tests/gpu/run.sh (gpu/loops/trips/...). In TRACE, every loop node's
event ("X", args "trips": {LOOP: N}) has, per loop LOOP under it, exactly
N - trips_without_span[LOOP] trip events ("cat": "trip", args loop LOOP
and the node's iteration) on its track, min(N, 64) of them (the bound
keeps the first 32 and the last 32), each inside the node's event and
after the one before of the same loop; a top-level loop's trips (LOOP is
the node's name) are trips 0.. in order (the bound's gap aside). With REFERENCE (the host backend's trace of the same run), each
loop node's "trips" per iteration are the reference's. Prints one line per
loop node and iteration; exits 1 on the first failure. Body node events
("cat": "body", graph mode's last-trip times) lie inside the trip event
of their loop, iteration and trip number, with a positive duration; with
--body there must be some.
"""
import json
import sys

TOL_US = 1.0  # event and %globaltimer clocks read apart by a stamp launch
KEEP = 32  # report.h's DR_TRIP_SPANS_KEEP


def load(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    nodes, trips, body = [], [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        (trips if cat == "trip" else body if cat == "body" else nodes).append(e)
    return nodes, trips, body


def check_body(trips, body, want):
    by_trip = {}
    for t in trips:
        a = t["args"]
        by_trip[(a["iteration"], a["loop"], a["trip"], t["tid"])] = t
    for b in body:
        a = b["args"]
        t = by_trip.get((a["iteration"], a["loop"], a["trip"], b["tid"]))
        if t is None:
            fail("body node %s: no trip %d of %s" % (b["name"], a["trip"], a["loop"]))
        if b["ts"] < t["ts"] - 0.001 or b["ts"] + b["dur"] > t["ts"] + t["dur"] + 0.001 or b["dur"] <= 0:
            fail("body node %s [%.3f, +%.3f] outside its trip [%.3f, +%.3f]" %
                 (b["name"], b["ts"], b["dur"], t["ts"], t["dur"]))
    if want and not body:
        fail("no body node events")
    if body:
        print("%d body node events inside their trips" % len(body))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(path, want_body=False):
    nodes, trips, body = load(path)
    check_body(trips, body, want_body)
    by_key = {}
    for t in trips:
        a = t["args"]
        by_key.setdefault((a["iteration"], a["loop"], t["tid"]), []).append(t)
    counts = {}
    loops = 0
    for n in nodes:
        a = n.get("args", {})
        if "trips" not in a:
            continue
        it, name = a["iteration"], n["name"]
        counts[(it, name)] = a["trips"]
        lo, hi = n["ts"], n["ts"] + n["dur"]
        for loop, total in a["trips"].items():
            dropped = a.get("trips_without_span", {}).get(loop, 0)
            spans = by_key.get((it, loop, n["tid"]), [])
            if len(spans) != total - dropped or len(spans) != min(total, 2 * KEEP):
                fail("%s iteration %d: %d trip events of %s, want %d - %d (at most %d)" %
                     (name, it, len(spans), loop, total, dropped, 2 * KEEP))
            prev = lo - TOL_US
            for s in sorted(spans, key=lambda s: s["ts"]):
                if s["ts"] < lo - TOL_US or s["ts"] + s["dur"] > hi + TOL_US:
                    fail("%s trip %d outside %s [%.3f, %.3f]" % (loop, s["args"]["trip"], name, lo, hi))
                if s["dur"] < 0 or s["ts"] < prev - 0.001:
                    fail("%s trip %d starts before the one before ends" % (loop, s["args"]["trip"]))
                prev = s["ts"] + s["dur"]
            if loop != name:
                continue
            want = list(range(total)) if dropped == 0 else \
                list(range(KEEP)) + list(range(total - KEEP, total))
            got = [s["args"]["trip"] for s in sorted(spans, key=lambda s: s["ts"])]
            if got != want:
                fail("%s iteration %d: trips %s, want %s" % (name, it, got[:8], want[:8]))
        loops += 1
        print("%s iteration %d: %s" % (name, it, json.dumps(a["trips"], sort_keys=True)))
    if loops == 0:
        fail("no loop node with trips in " + path)
    return counts


def main():
    args = [a for a in sys.argv[1:] if a != "--body"]
    counts = check(args[0], "--body" in sys.argv[1:])
    if len(args) > 1:
        ref = check(args[1])
        if counts != ref:
            fail("trips %s, the reference's %s" % (counts, ref))
    print("ok")


if __name__ == "__main__":
    main()
