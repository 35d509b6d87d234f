#!/usr/bin/env bash
# params_words_ab.sh: issue #19's "parameters in device memory, measured
# both ways": graph mode with DAGRUN_GRAPH_DEVICE_PARAMS=1 (every
# element-wise built-in whose slices only grow and shrink reads its counts
# from device words, one store per change) against =0 (every changed node
# set on the executable), taking turns ROUNDS times in one call, on the
# device, from a prebuilt dist/ (tools/build_dist.sh). The default (unset)
# is =0; =auto would pick the chain32n nodes, not chain32's or the
# decoder's.
#
#  1. chain32: 32 element-wise nodes (add, mul, scale, relu in turn) over
#     x[0:seq*256], seq in 64..2048, every one of them a node a change
#     reaches; chain32n: the same over seq in 1024..2048, swept over 32
#     lengths from 1056 to 2048;
#  2. decoder: bench/pipelines/params_decoder_bench.yaml (per layer three
#     gemms, a softmax, a copy, and one add that can read device words);
#  3. user8: 8 user kernels (bench/pipelines/params_user_kernel.cu) that
#     read seq from a parameter buffer (params_user_dev.yaml: a change is
#     one store, no node) against the same kernels taking the live length
#     as a scalar argument (params_user_arg.yaml: a change sets 8 nodes,
#     each a one-node capture of its launch and the driver's copy).
#
# Each is swept over bench/pipelines/params_seqs32.params (one run per
# length, 20 timed iterations, --timing=off) and run at its smallest
# length (seq=64, chain32n 1024: the element-wise launches, shaped for seq
# 2048, carry the most surplus threads there; ITERS iterations). Prints per pipeline
# and way: the median host time of a change (param_update.us), the median
# step over the sweep, the step at seq=64, the device reads per change and
# how the changes were applied.
#
# Usage: bash bench/params_words_ab.sh   (repository root, or from dist/)
# Environment: DIST=dist ROUNDS=3 ITERS=500 OUT=/tmp/dagrun-params-words
#              PIPELINES="chain32 chain32n decoder user8" (a subset runs faster)
# Exit status: 0 when every run succeeded.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 1
if [ -z "${DIST:-}" ] && [ ! -x dist/dagrun ] && [ -x dagrun ]; then DIST=.; fi
DIST=${DIST:-dist}
DAGRUN=$DIST/dagrun
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-500}
OUT=${OUT:-/tmp/dagrun-params-words}
mkdir -p "$OUT"
seqs=$here/pipelines/params_seqs32.params
[ -x "$DAGRUN" ] || { echo "params_words_ab.sh: no $DAGRUN (tools/build_dist.sh)" >&2; exit 1; }
# chain32 (seq from 64) and chain32n (seq from 1024).
chain_yaml() {
  echo "dagrun: 1"
  echo "name: params-chain32"
  echo "run: {iterations: 20, warmup: 2}"
  echo "params:"
  echo "  seq: {type: int, default: 2048, min: $1, max: 2048}"
  echo "buffers:"
  echo "  x: {type: f32, count: \"{seq*256}\", init: {random: 1}}"
  echo "  y: {type: f32, count: \"{seq*256}\", init: {random: 2}}"
  echo "nodes:"
  for i in $(seq 0 31); do
    case $((i % 4)) in
      0) echo "  n$i: {op: kernel, kernel: add_f32, args: {a: \"x[0:seq*256]\", b: \"y[0:seq*256]\", y: \"y[0:seq*256]\"}}" ;;
      1) echo "  n$i: {op: kernel, kernel: mul_f32, args: {a: \"x[0:seq*256]\", b: \"y[0:seq*256]\", y: \"x[0:seq*256]\"}}" ;;
      2) echo "  n$i: {op: kernel, kernel: scale_f32, args: {x: \"y[0:seq*256]\", alpha: 0.5, y: \"y[0:seq*256]\"}}" ;;
      3) echo "  n$i: {op: kernel, kernel: relu_f32, args: {x: \"y[0:seq*256]\", y: \"x[0:seq*256]\"}}" ;;
    esac
  done
}
chain=$OUT/chain32.yaml narrow=$OUT/chain32n.yaml
chain_yaml 64 >"$chain"
chain_yaml 1024 >"$narrow"
python3 -c 'import random; r = random.Random(7); v = list(range(1056, 2049, 32)); r.shuffle(v); print("\n".join(f"seq={x}" for x in v))' >"$OUT/seqs_narrow.params"
rc=0
: >"$OUT/words.tsv"
for r in $(seq 1 "$ROUNDS"); do
  for name in ${PIPELINES:-chain32 chain32n decoder user8}; do
    for w in 1 0; do
      s=$seqs small=64
      case $name in
        chain32) y=$chain ;;
        chain32n) y=$narrow s=$OUT/seqs_narrow.params small=1024 ;;
        decoder) y=$here/pipelines/params_decoder_bench.yaml ;;
        user8) if [ "$w" = 1 ]; then y=$here/pipelines/params_user_dev.yaml; else y=$here/pipelines/params_user_arg.yaml; fi ;;
      esac
      j=$OUT/$name.$w.$r.jsonl
      if ! DAGRUN_GRAPH_DEVICE_PARAMS=$w "$DAGRUN" --backend=cuda --mode=graph --timing=off --format=json \
        --params-from="$s" "$y" >"$j" 2>"$OUT/$name.$w.$r.err"; then
        rc=1
        continue
      fi
      s64=$(DAGRUN_GRAPH_DEVICE_PARAMS=$w "$DAGRUN" --backend=cuda --mode=graph --timing=off --format=json \
        --iterations="$ITERS" --warmup=20 --param seq=$small "$y" 2>>"$OUT/$name.$w.$r.err" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["makespan_us"])') || { rc=1; continue; }
      python3 - "$j" "$name" "$w" "$s64" >>"$OUT/words.tsv" <<'PY'
import json, statistics, sys
path, name, w, s64 = sys.argv[1:]
rs = [json.loads(l) for l in open(path) if l.startswith("{")]
# A change: host time measured (a node or a parameter buffer written).
ch = [r["param_update"] for r in rs[1:] if r["param_update"]["us"] is not None]
us = statistics.median(u["us"] for u in ch)
reads = statistics.median(u.get("device_reads", 0) for u in ch)
hows = sorted({u["how"] + ("+buffers" if u.get("buffers") else "") for u in ch})
step = statistics.median(r["makespan_us"] for r in rs)
print(name, w, f"{us:.1f}", f"{step:.1f}", s64, f"{reads:g}", ",".join(hows), sep="\t")
PY
    done
  done
done
python3 - "$OUT/words.tsv" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, w, us, step, s64, reads, hows = line.rstrip("\n").split("\t")
    d[(name, w)].append((float(us), float(step), float(s64), reads, hows))
print("| pipeline | counts | change, host (us) | step over the sweep (us) | step at the least seq (us) | device reads a change | how |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
for (name, w) in sorted(d, key=lambda k: (k[0], -int(k[1]))):
    rows = d[(name, w)]
    med = lambda i: statistics.median(r[i] for r in rows)
    way = ("device words" if w == "1" else "node sets") if name != "user8" else (
        "parameter buffer" if w == "1" else "scalar argument")
    print(f"| {name} | {way} | {med(0):.1f} | {med(1):.1f} | {med(2):.1f} | {rows[0][3]} | {rows[0][4]} |")
PY
exit $rc
