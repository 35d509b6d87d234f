#!/usr/bin/env bash
# graph_ab.sh: the A/B of graph mode's two switches on the device, against
# the hand-written graph, in one call (issue #18 item 3). Runs from the
# repository root with a prebuilt dist/ (tools/build_dist.sh), or from
# dist/ itself (bash dist/bench/graph_ab.sh); needs nvcc and python3.
#
# A thin front of bench/gpu_bench.sh: for chain2000 (2000 tiny kernels in
# a chain: where PDL edges could pay), spin32 and fanout32
# (bench/pipelines/), and priority (graphs/priority.yaml: high-priority
# copies beside long kernels; no hand-written baseline), it runs dagrun in
# graph mode four ways, every switch spelled out so that the defaults in
# backends/cuda/graph.c do not matter:
#   graph        DAGRUN_GRAPH_PDL=0 DAGRUN_GRAPH_PRIORITY=0
#   graph-pdl    DAGRUN_GRAPH_PDL=1 DAGRUN_GRAPH_PRIORITY=0
#   graph-prio   DAGRUN_GRAPH_PDL=0 DAGRUN_GRAPH_PRIORITY=1
#   graph-both   DAGRUN_GRAPH_PDL=1 DAGRUN_GRAPH_PRIORITY=1
# with node timing off (the baselines time nothing), taking turns with the
# case's hand-written program ALTERNATE=5 times, and prints one markdown
# table: per case and run the median makespans, the median per-round ratio
# to the hand graph with its min-max over the rounds, and "/ first", the
# median per-round ratio to the "graph" run (below 1.000: the switch wins).
# Keep a switch on by default only where "/ first" is below 1 on every
# case beyond the min-max spread of "graph" itself.
#
# Time: 3 nvcc builds and 5 rounds of (3 programs + 16 dagrun runs), each
# step bounded by what is left of BUDGET_S=270 (gpu_bench.sh), so it ends
# within about 285 s, under 5 minutes; steps not started in time show as
# "skipped".
#
# Usage: bash bench/graph_ab.sh
# Environment: ALTERNATE=5 ITERATIONS=20 WARMUP=3 BUDGET_S=270
#   CASES="chain2000 spin32 fanout32 priority" DAGRUN_FLAGS=--timing=off
#   DIST, NVCC, BUILD=/tmp/dagrun-bench-cuda, OUT (as gpu_bench.sh; the
#   table goes to $OUT/graph_ab.md, the JSON lines to $OUT/graph_ab.jsonl)
# Exit status: gpu_bench.sh's.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 1
export ALTERNATE=${ALTERNATE:-5}
export BUDGET_S=${BUDGET_S:-270}
export CASES=${CASES:-"chain2000 spin32 fanout32 priority"}
export DAGRUN_FLAGS=${DAGRUN_FLAGS:---timing=off}
# gpu_bench.sh's default: a later gpu_bench.sh in the same call keeps
# these builds.
export BUILD=${BUILD:-/tmp/dagrun-bench-cuda}
export RUNS="graph:--mode=graph DAGRUN_GRAPH_PDL=0 DAGRUN_GRAPH_PRIORITY=0;\
graph-pdl:--mode=graph DAGRUN_GRAPH_PDL=1 DAGRUN_GRAPH_PRIORITY=0;\
graph-prio:--mode=graph DAGRUN_GRAPH_PDL=0 DAGRUN_GRAPH_PRIORITY=1;\
graph-both:--mode=graph DAGRUN_GRAPH_PDL=1 DAGRUN_GRAPH_PRIORITY=1"
out=${OUT:-}
# gpu_bench.sh writes bench.{jsonl,md} under OUT; this script renames them.
tmp_out=$BUILD/out
rm -rf "$tmp_out"
OUT=$tmp_out bash "$here/gpu_bench.sh"
rc=$?
if [ -n "$out" ]; then
  mkdir -p "$out"
  cp "$tmp_out/bench.jsonl" "$out/graph_ab.jsonl" 2>/dev/null
  cp "$tmp_out/bench.md" "$out/graph_ab.md" 2>/dev/null
fi
exit $rc
