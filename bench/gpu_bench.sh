#!/usr/bin/env bash
# gpu_bench.sh: dagrun against hand-written CUDA doing the same work, side
# by side in one run on the device machine. Runs from the repository root
# with a prebuilt dist/ (tools/build_dist.sh), or from a copy of dist/ alone
# (bash bench/gpu_bench.sh inside it: dist carries bench/ and the kernel
# library's sources); needs nvcc and python3, no Bazel.
#
# It builds bench/cuda/*.cu with nvcc -O3 -arch=sm_90, runs each program
# (one JSON line per variant, see bench/cuda/common.h), runs
#   dist/dagrun --backend=cuda --format=json --mode=streams|graph
#               --iterations=N --warmup=N bench/pipelines/CASE.yaml
# (and --mode=graph --max-streams=1024, the stream cap lifted) for each
# case, and prints a markdown table: per case and dagrun run, dagrun's
# makespan and plan shape, the hand-written variant marked for that mode
# ("compare"), and the ratio dagrun / hand-written (lower is better; 1.00 =
# as fast), then every hand-written variant. A failing build or run is reported in the
# tables and the sweep goes on.
#
# Usage: bash bench/gpu_bench.sh
# Environment:
#   DIST=dist                 where dagrun is (default . when run from dist/)
#   ITERATIONS=20 WARMUP=3    for both sides
#   CASES="chain2000 spin32 chunked chunked1 fanout8 fanout32 layered400"
#   DAGRUN_FLAGS=...          extra dagrun flags (e.g. to turn off per-node
#                             timing, if the CLI has such a switch)
#   NVCC=nvcc  BUILD=/tmp/dagrun-bench-cuda
#   BUDGET_S=240              steps not started within it are reported as
#                             skipped (failures), so the sweep stays bounded
#   OUT=dir                   raw JSON lines go to $OUT/bench.jsonl, the
#                             table to $OUT/bench.md
# Exit status: 0 when every build and run succeeded, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
# From a repository: dist/dagrun. From dist/ itself (dist/bench/gpu_bench.sh,
# no repository around it): ./dagrun.
if [ -z "${DIST:-}" ]; then
  if [ -x dagrun ] && [ ! -d dist ]; then DIST=.; else DIST=dist; fi
fi
DAGRUN=$DIST/dagrun
ITERATIONS=${ITERATIONS:-20}
WARMUP=${WARMUP:-3}
CASES=${CASES:-"chain2000 spin32 spin8x8 chunked chunked1 fanout8 fanout32 layered400 transformer"}
read -r -a dagrun_flags <<<"${DAGRUN_FLAGS:-}"
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
BUILD=${BUILD:-/tmp/dagrun-bench-cuda}
mkdir -p "$BUILD"
jsonl=$BUILD/bench.jsonl
: >"$jsonl"
status=0
BUDGET_S=${BUDGET_S:-240}
start=$SECONDS
# limit N: prints N, or the budget's remainder when smaller (at least 5);
# fails when the budget is spent.
limit() {
  local left=$((BUDGET_S - (SECONDS - start)))
  [ "$left" -gt 0 ] || return 1
  if [ "$1" -lt "$left" ]; then echo "$1"; else echo $((left < 5 ? 5 : left)); fi
}
# cuBLAS is loaded with dlopen("libcublas.so.13"): make sure the loader
# finds the toolkit's (or the Python wheel's) copy when ld.so.cache lacks it.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13'; then
  cublas=$(find /usr/local /opt /usr/lib -maxdepth 8 -name 'libcublas.so.13' 2>/dev/null | head -n 1)
  [ -n "$cublas" ] && LD_LIBRARY_PATH="${cublas%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && export LD_LIBRARY_PATH
fi

# record SOURCE CASE MESSAGE: a failure line in the JSON stream.
record_error() {
  python3 -c 'import json,sys; print(json.dumps({"source": sys.argv[1], "case": sys.argv[2], "error": sys.argv[3]}))' \
    "$1" "$2" "$3" >>"$jsonl"
  status=1
}

echo "== gpu_bench $(date -u +%FT%TZ)"
nvidia-smi -L 2>&1 | head -n 4

# Which program measures which case.
program_of() {
  case $1 in
    chain2000) echo chain2000 ;;
    spin32) echo spin32 ;;
    chunked | chunked1) echo chunked ;;
    fanout8 | fanout32) echo fanout ;;
    layered400) echo layered400 ;;
    spin8x8) echo spin8x8 ;;
    transformer) echo transformer ;;
    *) echo "" ;;
  esac
}

# record_prog_error PROGRAM MESSAGE: a failure of every case PROGRAM measures.
record_prog_error() {
  local cc
  for cc in $CASES; do
    [ "$(program_of "$cc")" = "$1" ] && record_error hand "$cc" "$2"
  done
}

# ---- hand-written baselines ----
declare -A ran=()
for c in $CASES; do
  prog=$(program_of "$c")
  [ -n "$prog" ] || { record_error hand "$c" "no baseline program for this case"; continue; }
  [ -n "${ran[$prog]:-}" ] && continue
  ran[$prog]=1
  if ! t=$(limit 300); then record_prog_error "$prog" "skipped: over the ${BUDGET_S}s budget"; continue; fi
  echo "-- nvcc $prog.cu"
  # transformer.cu launches dagrun's own kernel library (kernels/), so that
  # it compares scheduling only; the others are self-contained.
  extra=()
  if [ "$prog" = transformer ]; then
    extra=(--fmad=false -I. kernels/blas_abi.cu kernels/elementwise.cu kernels/reduce.cu kernels/rows.cu
      kernels/spin.cu kernels/blas.c kernels/checks.c kernels/gemm.c kernels/host.c kernels/registry.c -ldl)
  fi
  if ! timeout "$t" "$NVCC" -O3 -std=c++17 -arch=sm_90 -o "$BUILD/$prog" "bench/cuda/$prog.cu" "${extra[@]}" \
      >"$BUILD/$prog.build.log" 2>&1; then
    tail -n 20 "$BUILD/$prog.build.log"
    record_prog_error "$prog" "nvcc failed"
    continue
  fi
  if ! t=$(limit 180); then record_prog_error "$prog" "skipped: over the ${BUDGET_S}s budget"; continue; fi
  echo "-- $prog"
  timeout -k 5 "$t" "$BUILD/$prog" --iterations="$ITERATIONS" --warmup="$WARMUP" \
    >"$BUILD/$prog.out" 2>"$BUILD/$prog.err"
  rc=$?
  cat "$BUILD/$prog.err"
  grep '^{' "$BUILD/$prog.out" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    r["source"] = "hand"
    print(json.dumps(r))' >>"$jsonl"
  grep '^{' "$BUILD/$prog.out" | cut -c 1-160
  [ $rc -eq 0 ] || record_prog_error "$prog" "exit $rc: $(tail -n 1 "$BUILD/$prog.err" | cut -c 1-200)"
done

# ---- dagrun on the same pipelines ----
# Runs: streams, graph (the plan's default stream cap, so capture turns the
# cap's stream order into edges when the DAG is wider), and graph with the
# cap lifted (--max-streams=1024: one stream per chain, no false edges).
runs=("streams:--mode=streams" "graph:--mode=graph" "graph-uncapped:--mode=graph --max-streams=1024")
for c in $CASES; do
  f=bench/pipelines/$c.yaml
  for run in "${runs[@]}"; do
    rname=${run%%:*}
    read -r -a rflags <<<"${run#*:}"
    compare=streams
    [ "$rname" = streams ] || compare=graph
    if [ ! -x "$DAGRUN" ]; then record_error "dagrun-$rname" "$c" "no $DAGRUN"; continue; fi
    if [ ! -f "$f" ]; then record_error "dagrun-$rname" "$c" "no $f"; continue; fi
    if ! t=$(limit 180); then record_error "dagrun-$rname" "$c" "skipped: over the ${BUDGET_S}s budget"; continue; fi
    echo "-- dagrun $c ${rflags[*]}"
    base=$BUILD/dagrun.$c.$rname
    timeout -k 5 "$t" "$DAGRUN" --backend=cuda --format=json "${rflags[@]}" \
      --iterations="$ITERATIONS" --warmup="$WARMUP" "${dagrun_flags[@]}" "$f" \
      >"$base.json" 2>"$base.err"
    rc=$?
    if [ $rc -ne 0 ]; then
      tail -n 5 "$base.err"
      record_error "dagrun-$rname" "$c" "exit $rc: $(tail -n 1 "$base.err" | cut -c 1-200)"
      continue
    fi
    # The plan's shape, to explain the time.
    timeout -k 5 30 "$DAGRUN" --plan --format=json "${rflags[@]}" "${dagrun_flags[@]}" "$f" \
      >"$base.plan.json" 2>/dev/null
    # One line per run, without the per-node list (kept in the .json file).
    if ! python3 - "$base.json" "$c" "$rname" "$compare" "$base.plan.json" >>"$jsonl" <<'EOF'; then
import json, sys
path, case, run, compare, plan_path = sys.argv[1:6]
r = json.load(open(path))
nodes = r.pop("nodes", [])
r = {k: v for k, v in r.items() if not isinstance(v, (list, dict))}
r.update({"source": "dagrun", "case": case, "run": run, "compare": compare, "n_nodes": len(nodes)})
try:
    plan = json.load(open(plan_path))
    r.update({"plan_" + k: plan.get(k) for k in ("streams", "width", "events", "edges")})
except (OSError, ValueError):
    pass
print(json.dumps(r))
EOF
      record_error "dagrun-$rname" "$c" "unreadable JSON report"
    fi
  done
done

# ---- the tables ----
python3 - "$jsonl" >"$BUILD/bench.md" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])
RUNS = ("streams", "graph", "graph-uncapped")

def us(v):
    return "%.1f" % v if isinstance(v, (int, float)) else "-"

def hand(case, mode):
    for r in rows:
        if r.get("source") == "hand" and r.get("case") == case and r.get("compare") == mode \
           and "error" not in r:
            return r
    return None

def hand_error(case):
    for r in rows:
        if r.get("source") == "hand" and r.get("case") == case and "error" in r:
            return r["error"]
    return None

def dag(case, run):
    for r in rows:
        if r.get("case") == case and ((r.get("source") == "dagrun" and r.get("run") == run)
                                      or r.get("source") == "dagrun-" + run):
            return r
    return None

print("| case | dagrun run | dagrun µs | plan streams / events | hand-written µs (variant) | ratio |")
print("| --- | --- | ---: | --- | --- | ---: |")
for c in cases:
    for run in RUNS:
        mode = "streams" if run == "streams" else "graph"
        d, h = dag(c, run), hand(c, mode)
        if d is None and h is None:
            continue
        if d is None:
            dcell, pcell = "-", ""
        elif "error" in d:
            dcell, pcell = "FAIL: " + d["error"][:80], ""
        else:
            dcell = us(d.get("makespan_us"))
            if d.get("verified") is False:
                dcell += " (verify FAILED)"
            pcell = "%s / %s" % (d.get("plan_streams", "?"), d.get("plan_events", "?"))
        if h is not None:
            hcell = "%s (%s)" % (us(h["makespan_us"]), h["variant"])
        else:
            err = hand_error(c)
            hcell = "FAIL: " + err[:80] if err else "-"
        ratio = "-"
        if h is not None and d is not None and "error" not in d and h.get("makespan_us") \
           and isinstance(d.get("makespan_us"), (int, float)):
            ratio = "%.2f" % (d["makespan_us"] / h["makespan_us"])
        print("| %s | %s | %s | %s | %s | %s |" % (c, run, dcell, pcell, hcell, ratio))

print()
print("ratio = dagrun / hand-written (1.00: as fast). All hand-written variants:")
print()
print("| case | variant | streams | makespan µs | min µs | max µs | notes |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
skip = {"case", "variant", "compare", "nodes", "streams", "iterations", "makespan_us",
        "min_us", "max_us", "source"}
for r in rows:
    if r.get("source") != "hand":
        continue
    if "error" in r:
        print("| %s | FAIL | | | | | %s |" % (r["case"], r["error"]))
        continue
    notes = ", ".join("%s=%s" % (k, v) for k, v in r.items() if k not in skip)
    print("| %s | %s | %s | %s | %s | %s | %s |" % (
        r["case"], r["variant"], r["streams"], us(r["makespan_us"]),
        us(r["min_us"]), us(r["max_us"]), notes))
EOF
echo
cat "$BUILD/bench.md"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$jsonl" "$OUT/bench.jsonl"
  cp "$BUILD/bench.md" "$OUT/bench.md"
fi
exit $status
