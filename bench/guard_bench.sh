#!/usr/bin/env bash
# guard_bench.sh: what a while loop's trip costs on the device in graph
# mode, by how its body is unrolled (issue #17; backends/cuda/condgraph.c,
# ir/loops.h). Runs from the repository root with a prebuilt dist/
# (tools/build_dist.sh), or from dist/ itself; needs python3. About 10 s
# of device time at the default TRIPS.
#
# The body is loops_bench.sh's: a 1 µs `spin`, `axpy_f32` counting a
# one-element counter down from TRIPS and `set_while_gt_f32` setting the
# condition (three one-thread kernels, all guardable). TRIPS defaults to
# 10007, a prime, so that every unroll > 1 stops in the middle of a trip:
# the trips column must read TRIPS on every while row (the device counts
# the copies that ran), or a copy ran past the stop condition.
#   (a1) while, unroll 1            one WHILE launch, one body per trip
#                                   (DAGRUN_WHILE_UNROLL=1: before #17's
#                                   guards)
#   (aI) while, IF-guarded x4       4 copies per trip, copies 2-4 each in
#                                   an IF node (DAGRUN_WHILE_GUARD=if)
#   (aK) while, kernel-guarded      the default: U copies per trip as
#                                   --plan says (the U column), copies
#                                   2..U guarded by their kernels
#   (aK16) kernel-guarded x16       DAGRUN_WHILE_UNROLL=16, the cap
#   (f) repeat: N, unrolled         the body captured N times in one graph:
#                                   the reference the issue's 1.10x is of
#   (b) graph x N                   a one-iteration graph launched N times
# Device µs per trip: the run report's makespan over the trips (timing off);
# x(f): that over (f)'s. Wall µs per trip: the whole process over the trips.
# Issue #17's target: (aK) within 1.10x of (f) and faster than (b).
# Then the cost of graph mode's trip spans and body node times
# (backends/cuda/trips.c's ring: trip stamp kernels inside the bodies, and
# each body built-in's atomicMax of its end stamp): (a1), (aI), (aK) and
# (f) again with --timing=stamps (graph mode's default) and
# DAGRUN_TRIP_STAMPS=1, rows "... +trip stamps", and (aK) with the default
# timing alone (no trip stamps), row "... +stamps";
# x(off): their device time per trip over the same way's timing-off row.
# Those rows' makespan also holds the iteration's few node stamps (once
# per run, not per trip); (f) stamps only its first and last 32 trips.
# Then guard/{cond,device_loop}/{default,unroll3}: the guards' correctness
# on the device (the host backend's bytes and trips). Exit 1 when a trip
# count or a check is wrong.
#
# Usage: bash bench/guard_bench.sh        # TRIPS=10007 OUT=dir (guard.md)
# BACKEND=host runs it on the host backend (a smoke test of the script).
set -u
cd "$(dirname "$0")/.." || exit 1
DAGRUN=${DAGRUN:-}
if [ -z "$DAGRUN" ]; then
  if [ -x dist/dagrun ]; then DAGRUN=dist/dagrun; else DAGRUN=./dagrun; fi
fi
N=${TRIPS:-10007}
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
{ header repeat; setup; printf '  loop:\n    op: loop\n    repeat: %s\n    nodes:\n' "$N"; body "      "; } >"$tmp/repeat.yaml"
{ header while; setup; printf '  loop:\n    op: loop\n    while: go\n    nodes:\n'; body "      "; } >"$tmp/while.yaml"

# The default unroll and guard, as --plan says them.
plan_line=$("$DAGRUN" --plan --mode=graph "$tmp/while.yaml" 2>&1 | grep -m1 'graph mode: one CUDA WHILE node' || true)
U=$(printf '%s\n' "$plan_line" | sed -n 's/.*WHILE node, \([0-9]*\) cop.*/\1/p')
U=${U:-?}

# run LABEL UNROLL TRIPS_IN_RUN ARGS...: one dagrun run; prints a JSON line.
run() {
  local label=$1 unroll=$2 trips=$3; shift 3
  local t0 t1 rc
  t0=$(date +%s%N)
  env ${RUN_ENV:-} "$DAGRUN" --backend=${BACKEND:-cuda} --timing=${RUN_TIMING:-off} --format=json "$@" >"$tmp/out.json" 2>"$tmp/err"
  rc=$?
  t1=$(date +%s%N)
  python3 - "$label" "$unroll" "$trips" "$rc" "$t0" "$t1" "$tmp/out.json" "$tmp/err" <<'PY'
import json, sys
label, unroll, trips, rc, t0, t1, out, err = sys.argv[1:]
trips, rc = int(trips), int(rc)
row = {"way": label, "unroll": unroll, "rc": rc, "wall_us_per_trip": (int(t1) - int(t0)) / 1e3 / trips}
if rc == 0:
    d = json.load(open(out))
    row["device_us_per_trip"] = d["makespan_us"] * d["iterations"] / trips
    loops = d.get("loops") or []
    if loops:
        row["trips"] = loops[0].get("trips_max")
else:
    text = open(err).read().strip()
    row["error"] = text.splitlines()[-1][:160] if text else ""
print(json.dumps(row))
PY
}
{
  RUN_ENV=DAGRUN_WHILE_UNROLL=1 run "(a1) while, unroll 1" 1 "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_ENV="DAGRUN_WHILE_UNROLL=4 DAGRUN_WHILE_GUARD=if" run "(aI) while, IF-guarded x4" 4 "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  run "(aK) while, kernel-guarded (default)" "$U" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_ENV=DAGRUN_WHILE_UNROLL=16 run "(aK16) while, kernel-guarded x16" 16 "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  run "(f) repeat: N, graph (unrolled)" "$N" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/repeat.yaml"
  run "(b) graph x N" 1 "$N" --mode=graph --iterations="$N" --warmup=10 "$tmp/flat.yaml"
  RUN_TIMING=stamps run "(aK) while, kernel-guarded (default) +stamps" "$U" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_TIMING=stamps RUN_ENV="DAGRUN_TRIP_STAMPS=1 DAGRUN_WHILE_UNROLL=1" run "(a1) while, unroll 1 +trip stamps" 1 "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_TIMING=stamps RUN_ENV="DAGRUN_TRIP_STAMPS=1 DAGRUN_WHILE_UNROLL=4 DAGRUN_WHILE_GUARD=if" run "(aI) while, IF-guarded x4 +trip stamps" 4 "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_TIMING=stamps RUN_ENV=DAGRUN_TRIP_STAMPS=1 run "(aK) while, kernel-guarded (default) +trip stamps" "$U" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/while.yaml"
  RUN_TIMING=stamps RUN_ENV=DAGRUN_TRIP_STAMPS=1 run "(f) repeat: N, graph (unrolled) +trip stamps" "$N" "$N" --mode=graph --iterations=1 --warmup=1 "$tmp/repeat.yaml"
} >"$tmp/rows.jsonl"
python3 - "$tmp/rows.jsonl" "$N" "$plan_line" <<'PY' | tee "$tmp/guard.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
print("guard bench: %d trips of spin(1 us) + axpy + set_while_gt_f32, timing off" % n)
print("--plan: %s\n" % sys.argv[3].strip())
ref = next((r.get("device_us_per_trip") for r in rows if r["way"].startswith("(f)")), None)
print("| way | U | device us/trip | x(f) | x(off) | trips | wall us/trip | note |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
bad = 0
off = {r["way"]: r.get("device_us_per_trip") for r in rows}
for r in rows:
    dev = r.get("device_us_per_trip")
    ratio = "%.2f" % (dev / ref) if dev and ref else "-"
    suffix = next((x for x in (" +trip stamps", " +stamps") if r["way"].endswith(x)), None)
    twin = off.get(r["way"][: -len(suffix)]) if suffix else None
    vs_off = "%.2f" % (dev / twin) if dev and twin else "-"
    note = "" if r["rc"] == 0 else "exit %d: %s" % (r["rc"], r.get("error", ""))
    trips = r.get("trips")
    if r["way"].startswith("(a") and r["rc"] == 0 and trips != n:
        note += " TRIPS WRONG (want %d)" % n
        bad += 1
    print("| %s | %s | %s | %s | %s | %s | %.2f | %s |" % (r["way"], r["unroll"], "%.2f" % dev if dev else "-",
                                                          ratio, vs_off, trips if trips is not None else "-",
                                                          r["wall_us_per_trip"], note))
sys.exit(1 if bad else 0)
PY
rc=${PIPESTATUS[0]}

# Correctness of the guards on the device: tests/gpu/loops/{cond,device_loop}.yaml
# (kernel-guarded whiles by default, as --plan says; also forced to 3
# copies, so the stop falls mid-trip) in graph mode against the host
# backend: the same bytes of `out` and the same trips per loop. One
# PASS/FAIL line each.
gpu_dir=tests/gpu
[ -d dist/tests/gpu ] && gpu_dir=dist/tests/gpu
# guard_check NAME YAML ENV: one graph-mode run of YAML against the host's.
guard_check() {
  local name=$1 yaml=$2 env_words=$3
  sed "s|^\(  out: *{.*\)}\s*$|\1, save: '$tmp/h.bin'}|" "$yaml" >"$tmp/h.yaml"
  sed "s|^\(  out: *{.*\)}\s*$|\1, save: '$tmp/c.bin'}|" "$yaml" >"$tmp/c.yaml"
  if "$DAGRUN" --backend=host --mode=streams "$tmp/h.yaml" 2>&1 | grep '^loop' | cut -d, -f1 >"$tmp/th" &&
    env $env_words "$DAGRUN" --backend=${BACKEND:-cuda} --mode=graph "$tmp/c.yaml" 2>&1 | grep '^loop' | cut -d, -f1 >"$tmp/tc" &&
    [ -s "$tmp/th" ] && diff "$tmp/th" "$tmp/tc" >/dev/null && cmp -s "$tmp/h.bin" "$tmp/c.bin"; then
    echo "PASS guard/$name"
  else
    echo "FAIL guard/$name: trips host [$(tr '\n' ' ' <"$tmp/th")] graph [$(tr '\n' ' ' <"$tmp/tc")]"
    rc=1
  fi
  rm -f "$tmp/h.bin" "$tmp/c.bin"
}
for y in cond device_loop; do
  [ -f "$gpu_dir/loops/$y.yaml" ] || continue
  guard_check "$y/default" "$gpu_dir/loops/$y.yaml" "" | tee -a "$tmp/guard.md"
  guard_check "$y/unroll3" "$gpu_dir/loops/$y.yaml" "DAGRUN_WHILE_UNROLL=3" | tee -a "$tmp/guard.md"
done
grep -q '^FAIL guard/' "$tmp/guard.md" && rc=1
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$tmp/guard.md" "$tmp/rows.jsonl" "$OUT/"; fi
exit "$rc"
