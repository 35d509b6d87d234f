#!/usr/bin/env bash
# params_ab.sh: two A/B measurements behind issue #19's figures, on the
# device, from a prebuilt dist/ (tools/build_dist.sh), in one call:
#
#  1. What spare slots cost a step (docs/format.md, "Spare slots"): the
#     decoder step (bench/pipelines/params_decoder_bench.yaml) at fixed
#     lengths in graph mode, DAGRUN_GRAPH_SPARES=1 (the default: a
#     disabled spare kernel node after each of the 24 gemms) against =0
#     (none), taking turns ROUNDS times; the median step (makespan_us,
#     node timing off) of each, and their ratio.
#  2. What switching executables costs the device: bench/
#     params_pipeline_bench on the decoder as it is (per-step scratch from
#     the stream-ordered pool, so each kept executable has graph memory of
#     its own) and on a copy without its alloc and free nodes (the scratch
#     whole-run buffers), every step a change, queued with no host wait.
#
# Usage: bash bench/params_ab.sh   (repository root, or from dist/)
# Environment: DIST=dist ROUNDS=3 SEQS="64 512 2048" ITERS=200 K=6
#              OUT=/tmp/dagrun-params-ab
# Exit status: 0 when every run succeeded.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 1
if [ -z "${DIST:-}" ] && [ ! -x dist/dagrun ] && [ -x dagrun ]; then DIST=.; fi
DIST=${DIST:-dist}
DAGRUN=$DIST/dagrun
ROUNDS=${ROUNDS:-3}
SEQS=${SEQS:-64 512 2048}
ITERS=${ITERS:-200}
OUT=${OUT:-/tmp/dagrun-params-ab}
mkdir -p "$OUT"
yaml=$here/pipelines/params_decoder_bench.yaml
[ -x "$DAGRUN" ] || { echo "params_ab.sh: no $DAGRUN (tools/build_dist.sh)" >&2; exit 1; }
rc=0
: >"$OUT/spares.tsv"
for r in $(seq 1 "$ROUNDS"); do
  for s in $SEQS; do
    for sp in 1 0; do
      m=$(DAGRUN_GRAPH_SPARES=$sp "$DAGRUN" --backend=cuda --mode=graph --timing=off --format=json \
        --iterations="$ITERS" --warmup=20 --param seq="$s" "$yaml" 2>>"$OUT/spares.err" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["makespan_us"])') || { rc=1; continue; }
      printf '%s\t%s\t%s\n' "$s" "$sp" "$m" >>"$OUT/spares.tsv"
    done
  done
done
python3 - "$OUT/spares.tsv" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    s, sp, m = line.split()
    d[(int(s), int(sp))].append(float(m))
print("| seq | step, spares (us) | step, no spares (us) | spares / none |")
print("| ---: | ---: | ---: | ---: |")
for s in sorted({k[0] for k in d}):
    a, b = statistics.median(d[(s, 1)]), statistics.median(d[(s, 0)])
    print(f"| {s} | {a:.1f} | {b:.1f} | {a / b:.3f} |")
PY
if [ -x "$DIST/bench/params_pipeline_bench" ]; then
  grep -v -E 'op: (alloc|free)' "$yaml" >"$OUT/decoder_noalloc.yaml"
  for y in "$yaml" "$OUT/decoder_noalloc.yaml"; do
    echo
    echo "$(basename "$y"):"
    "$DIST/bench/params_pipeline_bench" "$y" "$here/pipelines/params_seqs32.params" "${K:-6}" "$ROUNDS" || rc=1
  done
fi
exit $rc
