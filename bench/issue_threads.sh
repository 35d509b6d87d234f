#!/usr/bin/env bash
# issue_threads.sh: eager (streams mode) issue from 1, 2, 4 and 8 host
# threads (--issue-threads, backends/cuda/threads.c) against the
# hand-written eager baseline, side by side in one call (issue #18 item 2).
# Runs from the repository root with a prebuilt dist/ (tools/build_dist.sh),
# or from dist/ itself; needs nvcc and python3.
#
# A thin front of bench/gpu_bench.sh: for layered400 (the random layered
# DAG of 4000 nodes, width 546 after hazards: bench/pipelines/layered400.yaml,
# baseline bench/cuda/layered400.cu) and, as the narrow controls that must
# not lose, chain2000 and spin8x8, it runs dagrun in streams mode with
#   t1  --issue-threads=1   (one thread: the issue before threads.c)
#   t2  --issue-threads=2
#   t4  --issue-threads=4
#   t8  --issue-threads=8
#   auto (no flag: the count threads.c picks from the plan, 8 on layered400,
#         1 on the narrow cases)
# with node timing off (the baselines time nothing), taking turns with the
# case's hand-written program ALTERNATE=5 times (hand first in odd rounds),
# and prints one markdown table: per case and run the median makespans,
# the median per-round ratio dagrun / hand-written eager ("compare": the
# baseline's streams variant) with its min-max over the rounds, and
# "/ first", the median per-round ratio to t1 (below 1.000: threads win).
# The target (#18.2): layered400 eager at most 10 ms and ahead of the
# hand-written eager code in the same run; chain2000/spin8x8 no slower
# than t1.
#
# Time: 3 nvcc builds and 5 rounds of (3 programs + 15 dagrun runs), each
# step bounded by what is left of BUDGET_S=300, so it ends within about
# 315 s.
#
# Usage: bash bench/issue_threads.sh
# Environment: ALTERNATE=5 ITERATIONS=20 WARMUP=3 BUDGET_S=300
#   CASES="layered400 chain2000 spin8x8" DAGRUN_FLAGS=--timing=off
#   DIST, NVCC, BUILD=/tmp/dagrun-bench-cuda, OUT (the table goes to
#   $OUT/issue_threads.md, the JSON lines to $OUT/issue_threads.jsonl)
# Exit status: gpu_bench.sh's.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 1
export ALTERNATE=${ALTERNATE:-5}
export BUDGET_S=${BUDGET_S:-300}
export CASES=${CASES:-"layered400 chain2000 spin8x8"}
export DAGRUN_FLAGS=${DAGRUN_FLAGS:---timing=off}
export BUILD=${BUILD:-/tmp/dagrun-bench-cuda}
export RUNS="t1:--mode=streams --issue-threads=1;\
t2:--mode=streams --issue-threads=2;\
t4:--mode=streams --issue-threads=4;\
t8:--mode=streams --issue-threads=8;\
auto:--mode=streams"
out=${OUT:-}
tmp_out=$BUILD/out-issue-threads
rm -rf "$tmp_out"
OUT=$tmp_out bash "$here/gpu_bench.sh"
rc=$?
if [ -n "$out" ]; then
  mkdir -p "$out"
  cp "$tmp_out/bench.jsonl" "$out/issue_threads.jsonl" 2>/dev/null
  cp "$tmp_out/bench.md" "$out/issue_threads.md" 2>/dev/null
fi
exit $rc
