#!/usr/bin/env bash
# predict.sh: --plan's predicted makespan against measurement, for every
# bench case in both modes, on the device (issue #18 item 4). Runs from the
# repository root with a prebuilt dist/ (tools/build_dist.sh) or from
# dist/ itself; needs python3, no nvcc.
#
# Per case (bench/pipelines/CASE.yaml) and mode (streams, graph):
#   1. dagrun --backend=cuda --format=json --mode=M --iterations=N  > profile
#   2. dagrun --plan --profile=profile --mode=M --format=json       > plan
#      (its "prediction": predicted_us and the profile's measured_us)
#   3. dagrun --backend=cuda --format=json --mode=M --iterations=N  > check
#      (a second measurement, so the table shows run-to-run noise too)
# and prints one markdown table: case, mode, predicted us, profile's
# makespan, second run's, prediction / profile, prediction / second run,
# and --explain's split (cap, launch, waits, transfers, not explained) of
# the profile's gap to the critical path. The target (#18.4): within
# +-10% on most cases. Node timing is the default (auto): the profile
# needs node durations.
#
# Usage: bash bench/predict.sh
# Environment: DIST=dist ITERATIONS=20 WARMUP=3 MODES="streams graph"
#   CASES="chain2000 spin32 spin8x8 chunked chunked1 fanout8 fanout32 layered400 transformer"
#   OUT=dir (the table goes to $OUT/predict.md) TMP=/tmp/dagrun-predict
# Exit status: 0 when every run succeeded, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
if [ -z "${DIST:-}" ] && [ ! -x dist/dagrun ] && [ -x dagrun ]; then DIST=.; fi
DIST=${DIST:-dist}
DAGRUN=$DIST/dagrun
BACKEND=${BACKEND:-cuda} # host: a smoke test of this script on a machine without a GPU
ITERATIONS=${ITERATIONS:-20}
WARMUP=${WARMUP:-3}
MODES=${MODES:-"streams graph"}
CASES=${CASES:-"chain2000 spin32 spin8x8 chunked chunked1 fanout8 fanout32 layered400 transformer"}
TMP=${TMP:-/tmp/dagrun-predict}
mkdir -p "$TMP"
status=0
rows=$TMP/rows.tsv
: >"$rows"
echo "== predict $(date -u +%FT%TZ) ITERATIONS=$ITERATIONS WARMUP=$WARMUP"
nvidia-smi -L 2>/dev/null | head -n 2
for c in $CASES; do
  f=bench/pipelines/$c.yaml
  [ -f "$f" ] || f=graphs/$c.yaml
  [ -f "$f" ] || { echo "predict: no pipeline for $c" >&2; status=1; continue; }
  for m in $MODES; do
    p=$TMP/$c.$m
    run=("$DAGRUN" "--backend=$BACKEND" --format=json "--mode=$m" "--iterations=$ITERATIONS" "--warmup=$WARMUP" "$f")
    if ! timeout 120 "${run[@]}" >"$p.profile.json" 2>"$p.err" ||
      ! timeout 120 "$DAGRUN" --plan "--profile=$p.profile.json" "--mode=$m" --format=json "$f" >"$p.plan.json" 2>>"$p.err" ||
      ! timeout 120 "$DAGRUN" --plan "--profile=$p.profile.json" "--mode=$m" --explain "$f" >"$p.explain.txt" 2>>"$p.err" ||
      ! timeout 120 "${run[@]}" >"$p.check.json" 2>>"$p.err"; then
      echo "predict: $c $m failed: $(head -c 300 "$p.err")" >&2
      printf '%s\t%s\tFAILED\n' "$c" "$m" >>"$rows"
      status=1
      continue
    fi
    python3 - "$c" "$m" "$p" >>"$rows" <<'PY'
import json, sys
c, m, p = sys.argv[1:4]
plan = json.load(open(p + ".plan.json"))
check = json.load(open(p + ".check.json"))
pr = plan.get("prediction") or {}
pred, meas, again = pr.get("predicted_us"), pr.get("measured_us"), check.get("makespan_us")
def ratio(a, b):
    return "%.3f" % (a / b) if a and b else "-"
gap = (meas - plan["critical_path_us"]) if meas else None
unexplained = (meas - pred) if meas and pred else None
def us(v):
    return "%.1f" % v if v is not None else "-"
print("\t".join([c, m, us(pred), us(meas), us(again), ratio(pred, meas), ratio(pred, again),
                 us(plan["critical_path_us"]), us(pr.get("cap_us")), us(pr.get("launch_us")),
                 us(pr.get("waits_us")), us(pr.get("transfers_us")), us(unexplained)]))
PY
  done
done
table=$TMP/predict.md
{
  echo "| case | mode | predicted us | profile us | 2nd run us | pred / profile | pred / 2nd | critical path us | cap us | launch us | waits us | transfers us | not explained us |"
  echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  while IFS=$'\t' read -r -a f; do
    if [ "${f[2]}" = FAILED ]; then echo "| ${f[0]} | ${f[1]} | failed | | | | | | | | | | |"; continue; fi
    echo "| $(IFS='|'; echo "${f[*]}" | sed 's/|/ | /g') |"
  done <"$rows"
} >"$table"
cat "$table"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$table" "$OUT/predict.md"; fi
exit $status
