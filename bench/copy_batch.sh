#!/usr/bin/env bash
# copy_batch.sh: eager (streams mode) copies issued one cudaMemcpyAsync
# each against one cudaMemcpyBatchAsync per batch (backends/cuda/batch.h),
# and the hand-written cudaMemcpyAsync loop, side by side in one call
# (issue #18 item 2). Runs from the repository root with a prebuilt dist/
# (tools/build_dist.sh), or from dist/ itself; needs nvcc and python3.
#
# A thin front of bench/gpu_bench.sh: for copies64 (64 uploads of 1 MiB on
# one stream, the probe's shape) and copies512 (512 uploads of 4 KiB on one
# stream, where issuing costs most), baseline bench/cuda/copies.cu, it runs
# dagrun in streams mode with node timing off (batches form only then) as
#   batched    (the default: batches of up to 64 copies)
#   unbatched  DAGRUN_COPY_BATCH=0 (one cudaMemcpyAsync per copy, as before)
# taking turns with the hand-written program ALTERNATE=3 times, and prints
# one markdown table: per case and run the median makespans, the median
# per-round ratio dagrun / hand-written ("compare": the baseline's `loop`
# variant, one cudaMemcpyAsync per copy) with its min-max, and "/ first",
# the median per-round ratio to `batched` (above 1.000 for unbatched:
# batches win). The baseline's `batch` variant (cudaMemcpyBatchAsync by
# hand, 64 a call) and both variants' host_us (host time to issue one
# iteration) are in the JSON lines ($OUT/copy_batch.jsonl). CASES may add
# copies64w (the same 64 copies under the default cap: 32 streams of 2, so
# batches of 2; dagrun only).
#
# Time: one nvcc build (~10 s) and 3 rounds of (1 program + 4 dagrun runs,
# ~1 s each), each step bounded by what is left of BUDGET_S=30.
#
# Usage: bash bench/copy_batch.sh
# Environment: ALTERNATE=3 ITERATIONS=20 WARMUP=3 BUDGET_S=30
#   CASES="copies64 copies512" DAGRUN_FLAGS=--timing=off
#   DIST, NVCC, BUILD=/tmp/dagrun-bench-cuda, OUT (the table goes to
#   $OUT/copy_batch.md, the JSON lines to $OUT/copy_batch.jsonl)
# Exit status: gpu_bench.sh's.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 1
export ALTERNATE=${ALTERNATE:-3}
export BUDGET_S=${BUDGET_S:-30}
export CASES=${CASES:-"copies64 copies512"}
export DAGRUN_FLAGS=${DAGRUN_FLAGS:---timing=off}
export BUILD=${BUILD:-/tmp/dagrun-bench-cuda}
export RUNS="batched:--mode=streams;unbatched:--mode=streams DAGRUN_COPY_BATCH=0"
out=${OUT:-}
tmp_out=$BUILD/out-copy-batch
rm -rf "$tmp_out"
OUT=$tmp_out bash "$here/gpu_bench.sh"
rc=$?
if [ -n "$out" ]; then
  mkdir -p "$out"
  cp "$tmp_out/bench.jsonl" "$out/copy_batch.jsonl" 2>/dev/null
  cp "$tmp_out/bench.md" "$out/copy_batch.md" 2>/dev/null
fi
exit $rc
