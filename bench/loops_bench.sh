#!/usr/bin/env bash
# loops_bench.sh: a 10,000-trip loop of a small body on the device, side by
# side in one run (issue #17 item 6). Runs from the repository root with a
# prebuilt dist/ (tools/build_dist.sh), or from dist/ itself; needs python3.
#
# The body: a 1 µs `spin` kernel, `axpy_f32` counting down a one-element
# counter and `set_while_gt_f32` setting the condition (3 one-thread
# kernels). Each way runs it N=10,000 times (TRIPS), timing off, and the
# table gives the device time per trip (the run report's makespan over the
# trips) and the host wall time per trip (the process, setup included):
#   (a) while, one WHILE launch      one iteration in graph mode: the while
#                                    is one CUDA WHILE node (condgraph.c),
#                                    its body the 3 kernels plus the
#                                    condition kernel, one trip per body
#                                    (no unrolling yet)
#   (a4), (aA)                       the same with DAGRUN_WHILE_UNROLL=4 and
#                                    =auto: each trip holds the body 4 times
#                                    (auto: as --plan says), copies after the
#                                    first guarded by IF nodes
#   (b) graph x N                    the body as a pipeline, --mode=graph
#                                    --iterations=N: a one-iteration graph
#                                    launched N times
#   (c) eager x N                    the same, --mode=streams --iterations=N
#   (d) repeat: N, streams           one iteration, a host-driven repeat
#                                    loop (trips issued, no read-back)
#   (e) while, streams               one iteration, a host-driven while loop
#                                    (4-byte read-back and a stream sync
#                                    per trip)
#   (f) repeat: N, graph (unrolled)  one iteration, the body captured N
#                                    times: the "fully unrolled" reference
#   (g) run.device_loop, one launch  the body as a pipeline with
#                                    run.device_loop: true, --mode=graph
#                                    --iterations=N: warmups and iterations
#                                    are the trips of one WHILE node launched
#                                    once, each timed by the counter kernel's
#                                    stamps (timing off does not apply)
# The issue's probe (H200, CUDA 13.0): a WHILE node 5.73 µs per trip, a
# one-iteration graph relaunched 2.46 µs, eager 4.41 µs.
#
# Usage: bash bench/loops_bench.sh      # TRIPS=10000 OUT=dir (loops.md)
# BACKEND=host runs the same table on the host backend (a smoke test:
# modes mean nothing there).
set -u
cd "$(dirname "$0")/.." || exit 1
DAGRUN=${DAGRUN:-}
if [ -z "$DAGRUN" ]; then
  if [ -x dist/dagrun ]; then DAGRUN=dist/dagrun; else DAGRUN=./dagrun; fi
fi
N=${TRIPS:-10000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

header() {
  cat <<YAML
dagrun: 1
name: $1
buffers:
  rem: {type: f32, count: 1}
  one: {type: f32, count: 1}
  go:  {type: i32, count: 1}
nodes:
YAML
}
body() { # $1: indent
  cat <<YAML
$1spin: {op: kernel, kernel: spin, args: {ns: 1000}}
$1dec:  {op: kernel, kernel: axpy_f32, args: {alpha: -1.0, x: one, y: rem}}
$1set:  {op: kernel, kernel: set_while_gt_f32, args: {x: rem, tol: 0.5, cond: go}}
YAML
}
setup() {
  cat <<YAML
  fill1: {op: kernel, kernel: fill_f32, args: {y: one, value: 1.0}}
  fillN: {op: kernel, kernel: fill_f32, args: {y: rem, value: $N.0}}
YAML
}
{ header flat; body "  "; } >"$tmp/flat.yaml"
sed 's/^nodes:$/run: {device_loop: true}\nnodes:/' "$tmp/flat.yaml" >"$tmp/dl.yaml"
{ header repeat; setup; printf '  loop:\n    op: loop\n    repeat: %s\n    nodes:\n' "$N"; body "      "; } >"$tmp/repeat.yaml"
{ header while; setup; printf '  loop:\n    op: loop\n    while: go\n    nodes:\n'; body "      "; } >"$tmp/while.yaml"

# run LABEL TRIPS_IN_RUN ARGS...: one dagrun run; prints a JSON line.
run() {
  local label=$1 trips=$2; shift 2
  local t0 t1 rc
  t0=$(date +%s%N)
  env ${RUN_ENV:-} "$DAGRUN" --backend=${BACKEND:-cuda} --timing=off --format=json "$@" >"$tmp/out.json" 2>"$tmp/err"
  rc=$?
  t1=$(date +%s%N)
  python3 - "$label" "$trips" "$rc" "$t0" "$t1" "$tmp/out.json" "$tmp/err" <<'PY'
import json, sys
label, trips, rc, t0, t1, out, err = sys.argv[1:]
trips, rc = int(trips), int(rc)
row = {"way": label, "rc": rc, "wall_us_per_trip": (int(t1) - int(t0)) / 1e3 / trips}
if rc == 0:
    d = json.load(open(out))
    # makespan_us is per iteration: times the iterations, over the trips.
    row["device_us_per_trip"] = d["makespan_us"] * d["iterations"] / trips
else:
    row["error"] = open(err).read().strip().splitlines()[-1][:160] if open(err).read().strip() else ""
print(json.dumps(row))
PY
}
{
  run "(a) while, one WHILE launch" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_ENV=DAGRUN_WHILE_UNROLL=4 run "(a4) while, WHILE launch, unroll 4" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_ENV=DAGRUN_WHILE_UNROLL=auto run "(aA) while, WHILE launch, unroll auto" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  run "(b) graph x N" "$N" --mode=graph --iterations="$N" --warmup=10 "$tmp/flat.yaml"
  run "(c) eager x N" "$N" --mode=streams --iterations="$N" --warmup=10 "$tmp/flat.yaml"
  run "(d) repeat: N, streams" "$N" --mode=streams --iterations=1 --warmup=1 "$tmp/repeat.yaml"
  run "(e) while, streams" "$N" --mode=streams --iterations=1 --warmup=1 "$tmp/while.yaml"
  run "(f) repeat: N, graph (unrolled)" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/repeat.yaml"
  run "(g) run.device_loop, one launch" "$N" --mode=graph --iterations="$N" --warmup=10 "$tmp/dl.yaml"
} >"$tmp/rows.jsonl"
python3 - "$tmp/rows.jsonl" "$N" <<'PY' | tee "$tmp/loops.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("loops bench: %s trips of spin(1 us) + axpy + set_while_gt_f32, timing off\n" % sys.argv[2])
print("| way | device us/trip | wall us/trip | note |")
print("| --- | ---: | ---: | --- |")
for r in rows:
    dev = "%.2f" % r["device_us_per_trip"] if "device_us_per_trip" in r else "-"
    note = "" if r["rc"] == 0 else "exit %d: %s" % (r["rc"], r.get("error", ""))
    print("| %s | %s | %.2f | %s |" % (r["way"], dev, r["wall_us_per_trip"], note))
PY
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$tmp/loops.md" "$tmp/rows.jsonl" "$OUT/"; fi
