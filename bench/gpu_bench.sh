#!/usr/bin/env bash
# gpu_bench.sh: dagrun against hand-written CUDA doing the same work, side
# by side in one run on the device machine. Runs from the repository root
# with a prebuilt dist/ (tools/build_dist.sh), or from dist/ itself (bash
# dist/bench/gpu_bench.sh: dist/dagrun is then ./dagrun); needs nvcc and
# python3, no Bazel.
#
# It builds bench/cuda/*.cu with nvcc -O3 -arch=sm_90, runs each program
# (one JSON line per variant, see bench/cuda/common.h), runs
#   dist/dagrun --backend=cuda --format=json --mode=streams|graph
#               --iterations=N --warmup=N bench/pipelines/CASE.yaml
# (and --mode=graph --max-streams=1024, the stream cap lifted) for each
# case, and prints a markdown table: per case and dagrun run, dagrun's
# makespan and plan shape, the hand-written variant marked for that mode
# ("compare"), and the ratio dagrun / hand-written (lower is better; 1.00 =
# as fast), then every hand-written variant. A failing build or run is
# reported in the tables and the sweep goes on.
#
# Alternating runs (ALTERNATE=N, N >= 2): one run of two processes is noise
# of a few percent on the H200 (graph mode against hand-captured graphs,
# 32 parallel spins: 1.06x, then 0.93, 1.02 and 0.97 the same day), so
# each baseline program and the dagrun runs of its cases take turns N
# times in a row (hand first in odd rounds, dagrun first in even ones, so
# neither always runs warm), and the table shows, per case and run, the
# median over the rounds of dagrun's makespan, of the baseline's, and of
# the per-round ratio dagrun / baseline, with that ratio's min-max and the
# number of rounds (n). Rounds are paired: a round with a failure on
# either side counts for neither. The last column, "/ first", is the
# median per-round ratio of each run to the case's first run (A/B of runs
# that differ in one switch, bench/graph_ab.sh).
#
# Time: every step (an nvcc build, a program, a dagrun run) starts only
# while the budget lasts and gets at most its remainder (but 5 s at
# least), so the whole sweep ends within about BUDGET_S + 15 s (the last
# step's 5 s, its kill grace, the table). The default (ALTERNATE=1, 9
# cases, BUDGET_S=240) therefore takes at most ~4.3 minutes; steps not
# started in it show as "skipped". ALTERNATE=5 over all cases needs more
# than that: give it BUDGET_S=420 or fewer CASES.
#
# Usage: bash bench/gpu_bench.sh
# Environment:
#   DIST=dist                 where dagrun is (. when run from dist/)
#   ITERATIONS=20 WARMUP=3    for both sides
#   CASES="chain2000 spin32 spin8x8 chunked chunked1 fanout8 fanout32 layered400 transformer"
#                             (bench/pipelines/CASE.yaml, else graphs/CASE.yaml;
#                             a case no baseline measures runs dagrun only)
#   ALTERNATE=1               rounds of alternating runs (see above)
#   RUNS="NAME:FLAGS ..."     the dagrun runs, default
#                             "streams:--mode=streams graph:--mode=graph
#                             graph-uncapped:--mode=graph --max-streams=1024";
#                             a FLAGS word VAR=VALUE goes to dagrun's
#                             environment (e.g. graph-pdl:--mode=graph
#                             DAGRUN_GRAPH_PDL=1; entries are separated by
#                             ";" when a run has several words: see
#                             bench/graph_ab.sh). A run compares against
#                             the baseline's streams variant when its flags
#                             say --mode=streams, else its graph variant.
#   DAGRUN_FLAGS=...          extra dagrun flags for every run (e.g.
#                             --timing=off)
#   NVCC=nvcc  BUILD=/tmp/dagrun-bench-cuda
#   BUDGET_S=240              steps not started within it are reported as
#                             skipped (failures), so the sweep stays bounded
#   OUT=dir                   raw JSON lines go to $OUT/bench.jsonl, the
#                             table to $OUT/bench.md
# Exit status: 0 when every build and run succeeded, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
# From dist/ (dist/bench/gpu_bench.sh) the CLI is ./dagrun.
if [ -z "${DIST:-}" ] && [ ! -x dist/dagrun ] && [ -x dagrun ]; then DIST=.; fi
DIST=${DIST:-dist}
DAGRUN=$DIST/dagrun
ITERATIONS=${ITERATIONS:-20}
WARMUP=${WARMUP:-3}
CASES=${CASES:-"chain2000 spin32 spin8x8 chunked chunked1 fanout8 fanout32 layered400 transformer"}
ALTERNATE=${ALTERNATE:-1}
[ "$ALTERNATE" -ge 1 ] 2>/dev/null || ALTERNATE=1
RUNS=${RUNS:-"streams:--mode=streams;graph:--mode=graph;graph-uncapped:--mode=graph --max-streams=1024"}
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

# record_error SOURCE CASE MESSAGE [ROUND]: a failure line in the JSON stream.
record_error() {
  python3 -c 'import json,sys; print(json.dumps({"source": sys.argv[1], "case": sys.argv[2], "error": sys.argv[3], "round": int(sys.argv[4])}))' \
    "$1" "$2" "$3" "${4:-1}" >>"$jsonl"
  status=1
}

echo "== gpu_bench $(date -u +%FT%TZ) ALTERNATE=$ALTERNATE BUDGET_S=$BUDGET_S"
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
    allreduce) echo allreduce ;;
    copies64 | copies512) echo copies ;;
    *) echo "" ;;
  esac
}

# record_prog_error PROGRAM MESSAGE [ROUND]: a failure of every case PROGRAM measures.
record_prog_error() {
  local cc
  for cc in $CASES; do
    [ "$(program_of "$cc")" = "$1" ] && record_error hand "$cc" "$2" "${3:-1}"
  done
}

# ---- the hand-written baselines, built ----
declare -A built=()
programs=()
for c in $CASES; do
  prog=$(program_of "$c")
  if [ -z "$prog" ]; then
    # Not a failure: dagrun alone (the A/B columns still compare its runs).
    saved=$status
    record_error hand "$c" "no baseline program for this case"
    status=$saved
    continue
  fi
  [ -n "${built[$prog]:-}" ] && continue
  built[$prog]=failed
  programs+=("$prog")
  # Built already in this BUILD (bench/graph_ab.sh, then this in one call)
  # and newer than its sources: kept.
  if [ -x "$BUILD/$prog" ] && [ "$prog" != transformer ] && [ "$BUILD/$prog" -nt "bench/cuda/$prog.cu" ] &&
    [ "$BUILD/$prog" -nt bench/cuda/common.h ]; then
    echo "-- nvcc $prog.cu: kept $BUILD/$prog"
    built[$prog]=ok
    continue
  fi
  if ! t=$(limit 300); then record_prog_error "$prog" "skipped: over the ${BUDGET_S}s budget"; continue; fi
  echo "-- nvcc $prog.cu"
  # transformer.cu launches dagrun's own kernel library (kernels/), so that
  # it compares scheduling only; the others are self-contained.
  extra=()
  if [ "$prog" = allreduce ]; then extra=(-ldl); fi
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
  built[$prog]=ok
done

# run_hand PROGRAM ROUND: one run of a baseline program, its lines tagged
# with the round.
run_hand() {
  local prog=$1 r=$2 t rc
  if ! t=$(limit 180); then
    record_prog_error "$prog" "skipped: over the ${BUDGET_S}s budget" "$r"
    return
  fi
  echo "-- $prog (round $r)"
  timeout -k 5 "$t" "$BUILD/$prog" --iterations="$ITERATIONS" --warmup="$WARMUP" \
    >"$BUILD/$prog.out" 2>"$BUILD/$prog.err"
  rc=$?
  cat "$BUILD/$prog.err"
  grep '^{' "$BUILD/$prog.out" | python3 -c '
import json, sys
for line in sys.stdin:
    r = json.loads(line)
    r["source"] = "hand"
    r["round"] = int(sys.argv[1])
    print(json.dumps(r))' "$r" >>"$jsonl"
  [ "$r" -gt 1 ] || grep '^{' "$BUILD/$prog.out" | cut -c 1-160
  [ $rc -eq 0 ] || record_prog_error "$prog" "exit $rc: $(tail -n 1 "$BUILD/$prog.err" | cut -c 1-200)" "$r"
}

# run_dagrun CASE RUN ROUND: one dagrun run (RUN is NAME:FLAGS), one JSON
# line without the per-node list; the plan's shape in round 1.
run_dagrun() {
  local c=$1 run=$2 r=$3 rname w t rc f base compare=graph
  local words=() rflags=() renv=()
  f=bench/pipelines/$c.yaml
  # A case without a bench pipeline may be an example (graphs/priority.yaml).
  [ -f "$f" ] || [ ! -f "graphs/$c.yaml" ] || f=graphs/$c.yaml
  rname=${run%%:*}
  read -r -a words <<<"${run#*:}"
  for w in "${words[@]}"; do
    if [[ $w =~ ^[A-Z_][A-Z0-9_]*= ]]; then renv+=("$w"); else rflags+=("$w"); fi
    [ "$w" = --mode=streams ] && compare=streams
  done
  if [ ! -x "$DAGRUN" ]; then record_error "dagrun-$rname" "$c" "no $DAGRUN" "$r"; return; fi
  if [ ! -f "$f" ]; then record_error "dagrun-$rname" "$c" "no $f" "$r"; return; fi
  if ! t=$(limit 180); then
    record_error "dagrun-$rname" "$c" "skipped: over the ${BUDGET_S}s budget" "$r"
    return
  fi
  echo "-- dagrun $c ${renv[*]} ${rflags[*]} (round $r)"
  base=$BUILD/dagrun.$c.$rname
  timeout -k 5 "$t" env "${renv[@]}" "$DAGRUN" --backend=cuda --format=json "${rflags[@]}" \
    --iterations="$ITERATIONS" --warmup="$WARMUP" "${dagrun_flags[@]}" "$f" \
    >"$base.json" 2>"$base.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 5 "$base.err"
    record_error "dagrun-$rname" "$c" "exit $rc: $(tail -n 1 "$base.err" | cut -c 1-200)" "$r"
    return
  fi
  # The plan's shape, to explain the time (once: it is the same each round).
  if [ "$r" -eq 1 ] && t=$(limit 30); then
    timeout -k 5 "$t" env "${renv[@]}" "$DAGRUN" --plan --format=json "${rflags[@]}" "${dagrun_flags[@]}" "$f" \
      >"$base.plan.json" 2>/dev/null
  fi
  if ! python3 - "$base.json" "$c" "$rname" "$compare" "$base.plan.json" "$r" >>"$jsonl" <<'EOF'; then
import json, sys
path, case, run, compare, plan_path, rnd = sys.argv[1:7]
r = json.load(open(path))
nodes = r.pop("nodes", [])
r = {k: v for k, v in r.items() if not isinstance(v, (list, dict))}
r.update({"source": "dagrun", "case": case, "run": run, "compare": compare, "n_nodes": len(nodes),
          "round": int(rnd)})
try:
    plan = json.load(open(plan_path))
    r.update({"plan_" + k: plan.get(k) for k in ("streams", "width", "events", "edges")})
except (OSError, ValueError):
    pass
print(json.dumps(r))
EOF
    record_error "dagrun-$rname" "$c" "unreadable JSON report" "$r"
  fi
}

# ---- the rounds: per program, the baseline and dagrun take turns ----
IFS=';' read -r -a runs <<<"$RUNS"
for prog in "${programs[@]}"; do
  for ((r = 1; r <= ALTERNATE; r++)); do
    # Odd rounds: the baseline first; even rounds: dagrun first.
    order="hand dagrun"
    [ $((r % 2)) -eq 0 ] && order="dagrun hand"
    for side in $order; do
      if [ "$side" = hand ]; then
        [ "${built[$prog]}" = ok ] && run_hand "$prog" "$r"
        continue
      fi
      for c in $CASES; do
        [ "$(program_of "$c")" = "$prog" ] || continue
        for run in "${runs[@]}"; do run_dagrun "$c" "$run" "$r"; done
      done
    done
  done
done
# A case with no baseline program still runs dagrun.
for c in $CASES; do
  [ -n "$(program_of "$c")" ] && continue
  for ((r = 1; r <= ALTERNATE; r++)); do
    for run in "${runs[@]}"; do run_dagrun "$c" "$run" "$r"; done
  done
done

# ---- the tables ----
python3 bench/bench_table.py "$jsonl" "$RUNS" >"$BUILD/bench.md"
echo
cat "$BUILD/bench.md"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$jsonl" "$OUT/bench.jsonl"
  cp "$BUILD/bench.md" "$OUT/bench.md"
fi
exit $status
