#!/usr/bin/env bash
# run.sh: dagrun's tests on a machine with a GPU, run from the repository
# root with a prebuilt dist/ (tools/build_dist.sh); needs no Bazel, GLib or
# libyaml, only the NVIDIA driver, compute-sanitizer and python3.
#
# Checks, each printed as "PASS NAME" or "FAIL NAME" (with the tail of its
# output on failure):
#   gpu/nvidia-smi                  a GPU is visible
#   gpu/test/PKG/NAME               every GTest binary under dist/tests/
#   gpu/example/NAME/{streams,graph}   graphs/*.yaml with --backend=cuda
#                                   --verify in both modes
#   gpu/bench/NAME/{streams,graph}  bench/pipelines/*.yaml likewise (2
#                                   iterations), as larger verify cases
#   gpu/peer/self/{streams,graph}   graphs/peer_self.yaml: a peer copy
#                                   from the device to itself, --verify,
#                                   checksums equal to the host backend's
#   gpu/memory/NAME/{streams,graph}  graphs/*.yaml: the measured
#                                   high-water mark is not null and within
#                                   the certified bound (scratch-limit: also
#                                   under --memory-limit at the serial peak)
#   gpu/sanitize/NAME/MODE/{memcheck,racecheck,synccheck,initcheck}
#                                   compute-sanitizer on
#                                   each example, both modes, 1 iteration
#   gpu/fault/{oob-kernel,huge-buffer,huge-alloc}/MODE   real device faults
#                                   (tests/gpu/faults/): exit 70, the CUDA
#                                   error named, no crash or hang
#   gpu/timing/spin-chain/{streams,graph}   a chain of 10 spin nodes of
#                                   200 µs: the sum of the reported node
#                                   durations is within 5% of 2000 µs
#   gpu/loops/jacobi/{streams,graph}  a Jacobi solver that stops at
#                                   convergence (while loop: host-driven in
#                                   streams mode, a CUDA WHILE node in graph
#                                   mode): the host backend's trips and
#                                   solution (1e-5)
#   gpu/loops/cond/{streams,graph}  tests/gpu/loops/cond.yaml (while, if/else,
#                                   false at entry, nested, repeat around
#                                   while): the host's bytes and trips
#   gpu/batch/copies/{batched,unbatched,events}  tests/gpu/batch/copies.yaml
#                                   eagerly with and without copy batches:
#                                   the host backend's checksums
#   gpu/batch/verify/{copies64,copies512}  the bench's copy pipelines,
#                                   batched (--timing=off), --verify
#   gpu/loops/device-loop/{streams,graph}  tests/gpu/loops/device_loop.yaml
#                                   (run.device_loop, one WHILE launch): the
#                                   host's bytes and trips, 20 timed
#                                   iterations
#   gpu/loops/repeat/{streams,graph}   nested repeat loops: the host
#                                   backend's bytes exactly
#   gpu/loops/trips/{stamps,events}  streams mode's trip spans in --trace
#                                   (tests/gpu/loops/trip_spans.py) for
#                                   cond.yaml, repeat.yaml and the Jacobi
#                                   solver (489 trips: the bound): every
#                                   loop's trips as events inside its node,
#                                   in order, as many as the host backend's
#   gpu/loops/trips/graph           the same in graph mode with
#                                   DAGRUN_TRIP_STAMPS=1 (the graph's own
#                                   trip stamp kernels, backends/cuda/
#                                   trips.c's ring): min(trips, 64) spans
#                                   per loop, inside the loop node, not
#                                   overlapping; the Jacobi solver with the
#                                   default unroll (kernel-guarded copies),
#                                   one copy per trip, and IF-guarded copies;
#                                   body node events (last trip) inside
#                                   their trips
#   gpu/loops/jacobi-user/{streams,graph}  tests/gpu/loops/jacobi_user.yaml:
#                                   a Jacobi solver whose sweep is a user
#                                   kernel (NVRTC) in a while body, --verify
#                                   (its host twin), the host's trips and
#                                   solution (1e-5), the exact solution
#                                   (2e-3)
#   gpu/loops/gemm/{streams,graph}  tests/gpu/loops/gemm.yaml: gemm in a
#                                   repeat body (graph: captured unrolled)
#                                   and a while body (graph: cuBLAS captured
#                                   into the WHILE body), --verify, the
#                                   host's trips and bytes (1e-4)
#   gpu/params/counted/{sweep,verify}  tests/gpu/params/counted.yaml: a
#                                   loop count from a parameter in graph
#                                   mode over steps.txt: every run's trips
#                                   are its steps, every change
#                                   "updated-nodes" (no capture); each line
#                                   --verify'd
#   gpu/params/graph-cache          tests/gpu/params/cache.yaml
#                                   (run.graph_cache: 2, a user kernel sized
#                                   by seq) over seqs.txt: none, miss, hit,
#                                   hit, evict, hit, evict, forced by 't'
#   gpu/params/in-place             tests/gpu/params/inplace.yaml over
#                                   inplace.txt: in-place sets give a fresh
#                                   capture's and streams mode's checksums,
#                                   every change in place (spare slots);
#                                   with DAGRUN_GRAPH_DEVICE_PARAMS=1 the
#                                   same checksums, 'half' through device
#                                   memory (one device read per change);
#                                   memcheck of the sweep
#   gpu/params/buffers              tests/gpu/params/pbuf.yaml over pbuf.txt:
#                                   a user kernel reading parameter buffers;
#                                   graph, streams and fresh runs agree;
#                                   changes write buffers, update no node
#   gpu/params/pipelined            bench/params_pipeline_bench (one
#                                   round): the decoder's steps with a
#                                   change before each, queued with no host
#                                   wait, leave the bytes of the same steps
#                                   synced, in graph mode with and without
#                                   the cache and in streams mode
#   gpu/port20/cg-cub/{streams,graph}  user kernels with cooperative
#                                   groups, CUB and cuda/std (include/cccl),
#                                   include_dirs, defines and name
#                                   expressions compile and verify
#   gpu/port20/cache                a hit adds no cache entry, a header
#                                   edit compiles again, --cache-clean
#   gpu/port20/pageable/{streams,graph-refused,graph-message}   where:
#                                   pageable verifies eagerly; graph mode
#                                   exits 69 naming the copy
#   gpu/port20/device-vars          device.* from the device (132 SMs, 9.0)
#   gpu/ncu/{nvtx-node,capture-range}   Nsight Compute sees dagrun's nodes:
#                                   --nvtx-include "dagrun@b/" profiles
#                                   exactly node b's one kernel
#                                   (dr_scale_f32, beside another scale_f32
#                                   node); --profile-from-start off exactly
#                                   the timed iterations' kernels
# and ends with "N passed, N failed" counted from those results (checks
# not reached within the time budget are counted as failed and named).
#
# Usage: bash tests/gpu/run.sh
# Environment: DIST (default dist), BUDGET_S (default 450: whole run under
# 8 minutes), OUT (if set, the full log goes to $OUT/gpu.log), ONLY (an
# extended regular expression: only the checks whose names match run; the
# others are counted as not selected, neither passed nor failed: a short
# device session's subset, e.g. ONLY='gpu/(loops|params)/').
# Exit status: 0 when every check passed, 1 otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 1
DIST=${DIST:-dist}
DAGRUN=$DIST/dagrun
BUDGET_S=${BUDGET_S:-450}
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  exec > >(tee -a "$OUT/gpu.log") 2>&1
fi
tmp=$(mktemp -d)
# cuBLAS is loaded with dlopen("libcublas.so.13"): make sure the loader
# finds the toolkit's (or the Python wheel's) copy when ld.so.cache lacks it.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13'; then
  cublas=$(find /usr/local /opt /usr/lib -maxdepth 8 -name 'libcublas.so.13' 2>/dev/null | head -n 1)
  [ -n "$cublas" ] && LD_LIBRARY_PATH="${cublas%/*}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" && export LD_LIBRARY_PATH
fi
start=$SECONDS
passed=0 failed=0
failed_names=()

pass() { passed=$((passed + 1)); echo "PASS $1"; }
fail() {
  failed=$((failed + 1)); failed_names+=("$1"); echo "FAIL $1${2:+ ($2)}"
  [ -s "$tmp/out" ] && tail -n 15 "$tmp/out" | sed 's/^/    /'
}
over_budget() { [ $((SECONDS - start)) -ge "$BUDGET_S" ]; }
not_selected=0
# selected NAME: whether ONLY (if set) selects check NAME; counts it if not.
selected() {
  [ -z "${ONLY:-}" ] && return 0
  [[ $1 =~ $ONLY ]] && return 0
  not_selected=$((not_selected + 1))
  return 1
}
# check NAME TIMEOUT_S CMD...: runs CMD with a timeout; passes on exit 0.
check() {
  local name=$1 limit=$2; shift 2
  : >"$tmp/out"
  selected "$name" || return 0
  if over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"; return; fi
  local left=$((BUDGET_S - (SECONDS - start)))
  [ "$limit" -gt "$left" ] && limit=$((left < 10 ? 10 : left))
  timeout -k 5 "$limit" "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then pass "$name"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$name" "timed out after ${limit}s"
  else fail "$name" "exit $rc"; fi
}

echo "== dagrun GPU tests: $(date -u +%FT%TZ), dist=$DIST"
[ -f "$DIST/MANIFEST" ] && head -n 2 "$DIST/MANIFEST"
check gpu/nvidia-smi 30 nvidia-smi -L
cat "$tmp/out"
if [ ! -x "$DAGRUN" ]; then
  : >"$tmp/out"
  fail gpu/dagrun-binary "no $DAGRUN: run tools/build_dist.sh first"
  [ -n "${ONLY:-}" ] && echo "ONLY='$ONLY': $not_selected checks not selected"
echo "$passed passed, $failed failed"
  exit 1
fi
"$DAGRUN" --version 2>&1 | head -n 1

# ---- GTest binaries built with tags = ["gpu"] ----
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
# run_gtest NAME BINARY: GTest prints TAP; a test case that found no GPU
# says "# SKIP", which on this machine is a failure when every case did.
run_gtest() {
  local name=$1 bin=$2
  : >"$tmp/out"
  selected "$name" || return 0
  if over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"; return; fi
  timeout -k 5 180 "$bin" >"$tmp/out" 2>&1
  local rc=$?
  local n_ok n_skip
  n_ok=$(grep -c '^ok ' "$tmp/out")
  n_skip=$(grep -c '^ok .*# SKIP' "$tmp/out")
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then fail "$name" "timed out after 180s"
  elif [ $rc -ne 0 ]; then fail "$name" "exit $rc"
  elif [ "$n_skip" -gt 0 ] && [ "$n_skip" -ge "$n_ok" ]; then fail "$name" "all $n_skip test cases skipped"
  else
    pass "$name"
    if [ "$n_skip" -gt 0 ]; then echo "    $n_ok test cases ok, $n_skip of them skipped"
    else echo "    $n_ok test cases ok"; fi
  fi
}
if [ -d "$DIST/tests" ]; then
  while IFS= read -r t; do
    is_elf "$t" || continue
    run_gtest "gpu/test/${t#"$DIST"/tests/}" "$t"
  done < <(find "$DIST/tests" -type f -perm -u+x | sort)
fi

# ---- examples and bench pipelines, verified in both modes ----
graphs_dir=graphs
[ -d "$DIST/graphs" ] && graphs_dir=$DIST/graphs
examples=("$graphs_dir"/*.yaml)
# Pipelines whose run.devices lists more GPUs than this machine has are
# for the multi-GPU runs (docs/multi-gpu.md): counted as passes that say so.
n_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fits=() # the examples this machine has the GPUs for (the checks below run only those)
for f in "${examples[@]}"; do
  n=$(basename "$f" .yaml)
  want=$(sed -n 's/.*devices: *\[\([^]]*\)\].*/\1/p' "$f" | head -1 | tr ',' '\n' | grep -c .)
  if [ "${want:-0}" -gt "${n_gpus:-1}" ]; then
    selected "gpu/example/$n" && pass "gpu/example/$n (skipped: needs $want GPUs, this machine has ${n_gpus:-0})"
    continue
  fi
  fits+=("$f")
  for mode in streams graph; do
    check "gpu/example/$n/$mode" 90 "$DAGRUN" --backend=cuda --verify --mode=$mode "$f"
  done
done

# ---- a peer copy from the device to itself (cudaMemcpyPeerAsync) ----
# graphs/peer_self.yaml (also run above with --verify): its checksums, the
# peer-copied bytes and plain - peer (zeros), equal the host backend's in
# both modes.
peer_self=$graphs_dir/peer_self.yaml
peer_want=$("$DAGRUN" --backend=host --iterations=1 --warmup=0 "$peer_self" 2>/dev/null | grep -E '^checksum [^ ]+ [^ ]+ 0x[0-9a-f]+$')
for mode in streams graph; do
  check "gpu/peer/self/$mode" 60 bash -c '
    got=$("$1" --backend=cuda --verify --mode="$2" --iterations=1 --warmup=0 "$3" | grep -E "^checksum [^ ]+ [^ ]+ 0x[0-9a-f]+\$" | head -2)
    echo "got:  $got"; echo "want: $4"
    [ -n "$4" ] && [ "$got" = "$4" ]' _ "$DAGRUN" "$mode" "$peer_self" "$peer_want"
done
# ---- porting (#20): NVRTC like nvcc, its cache, pageable, device.* ----
# port_cg_cub.yaml's kernels (cooperative groups, CUB, cuda/std, a header
# from include_dirs, name expressions) compile and verify in both modes,
# with a cache of their own: the first run compiles 3 entries, the second
# adds none (hits), an edit of the included header compiles all 3 again (6
# entries), and --cache-clean removes the 6 and says so.
port_dir=$tmp/port20
cp -r "$graphs_dir/gpu" "$port_dir"
export DAGRUN_CACHE_DIR=$tmp/nvrtc-cache
n_entries() { find "$DAGRUN_CACHE_DIR" -name '*.cubin' 2>/dev/null | wc -l; }
for mode in streams graph; do
  check "gpu/port20/cg-cub/$mode" 180 "$DAGRUN" --backend=cuda --verify --mode=$mode "$port_dir/port_cg_cub.yaml"
done
check gpu/port20/cache 240 bash -c "
  [ \$(find $DAGRUN_CACHE_DIR -name '*.cubin' | wc -l) -eq 3 ] || { echo 'want 3 entries after the first runs'; ls -l $DAGRUN_CACHE_DIR; exit 1; }
  $DAGRUN --backend=cuda --iterations=1 --warmup=0 $port_dir/port_cg_cub.yaml >/dev/null || exit 1
  [ \$(find $DAGRUN_CACHE_DIR -name '*.cubin' | wc -l) -eq 3 ] || { echo 'a hit added an entry'; exit 1; }
  echo '// edited' >> $port_dir/kernels/include/port_common.h
  $DAGRUN --backend=cuda --verify --iterations=1 --warmup=0 $port_dir/port_cg_cub.yaml || exit 1
  [ \$(find $DAGRUN_CACHE_DIR -name '*.cubin' | wc -l) -eq 6 ] || { echo 'a header edit did not compile again'; ls -l $DAGRUN_CACHE_DIR; exit 1; }
  $DAGRUN --cache-clean | tee /dev/stderr | grep -q '^removed 6 cached kernels' || exit 1
  [ \$(find $DAGRUN_CACHE_DIR -name '*.cubin' | wc -l) -eq 0 ]"
unset DAGRUN_CACHE_DIR
# where: pageable: verifies eagerly; graph mode refuses it (69) naming a copy.
check gpu/port20/pageable/streams 120 "$DAGRUN" --backend=cuda --mode=streams --verify "$graphs_dir/gpu/multi_copy_pageable.yaml"
check gpu/port20/pageable/graph-refused 60 bash -c "
  $DAGRUN --backend=cuda --mode=graph $graphs_dir/gpu/multi_copy_pageable.yaml; rc=\$?
  [ \$rc -eq 69 ] || { echo \"exit \$rc, want 69\"; exit 1; }"
check gpu/port20/pageable/graph-message 60 bash -c "
  $DAGRUN --backend=cuda --mode=graph $graphs_dir/gpu/multi_copy_pageable.yaml 2>&1 |
    grep -q \"node 'up0': graph mode does not capture a copy of pageable host memory\""
# device.* on the CUDA backend are the device's own values (132 SMs, sm_90
# on the H200: the host backend's table), printed for the log.
printf 'dagrun: 1\nnodes:\n  n{device.sm_count}_{device.cc_major}{device.cc_minor}_{device.clock_khz}_{device.l2_bytes}_{device.smem_per_block_optin}: {op: noop}\n' >"$tmp/device_vars.yaml"
check gpu/port20/device-vars 60 bash -c "
  $DAGRUN --backend=cuda --dump-after=parse $tmp/device_vars.yaml | grep '^node' | tee /dev/stderr |
    grep -q '^node n132_90_'"

# ---- memory: measured high-water <= certified bound ----
# Every example in both modes: the run report's memory.peak_measured_bytes
# (the pool's cudaMemPoolAttrUsedMemHigh eagerly, cudaGraphMemAttrUsedMemHigh
# in graph mode, plus the whole-run bytes) is measured (not null) when the
# plan has device memory, and within memory.peak_bound_bytes. Under a
# memory limit (scratch.yaml at its serial peak: edges added until the
# bound is the serial peak) the measured peak stays within the limit too.
# Graph mode's figure is the graph allocator's mapped memory, which grows in
# steps of 32 MiB on the H200 (seen 2026-12-01: 0.5 MiB of stream-ordered
# scratch measured as 32 MiB), so there the bound's stream-ordered part
# (bound - whole_run_bytes, from --plan) is rounded up to that step.
memory_check() {
  local name=$1; shift
  : >"$tmp/out"
  selected "$name" || return 0
  if over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"; return; fi
  if ! timeout -k 5 90 "$DAGRUN" --backend=cuda --format=json --iterations=3 --warmup=1 "$@" \
      >"$tmp/mem.json" 2>"$tmp/out"; then
    fail "$name" "dagrun failed"
    return
  fi
  "$DAGRUN" --plan --format=json "$@" >"$tmp/memplan.json" 2>/dev/null
  if python3 - "$tmp/mem.json" "$tmp/memplan.json" "$*" >>"$tmp/out" 2>&1 <<'EOF'; then pass "$name"; tail -n 1 "$tmp/out" | sed 's/^/    /'; else fail "$name"; fi
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
whole = json.load(open(sys.argv[2]))["memory"]["whole_run_bytes"]
bound = m["peak_bound_bytes"]
allowed = bound
if "--mode=graph" in sys.argv[3]:
    step = 32 << 20
    allowed = whole + -(-(bound - whole) // step) * step
print("measured %s, bound %d (allowed %d), serial %d, whole-run %d bytes" % (m["peak_measured_bytes"], bound, allowed, m["peak_serial_bytes"], whole))
if bound > 0:
    assert m["peak_measured_bytes"] is not None, "not measured"
    assert m["peak_measured_bytes"] <= allowed, "measured above the certified bound"
EOF
}
for f in "${fits[@]}"; do
  n=$(basename "$f" .yaml)
  for mode in streams graph; do
    memory_check "gpu/memory/$n/$mode" --mode=$mode "$f"
  done
done
scratch_serial=$("$DAGRUN" --plan --format=json "$graphs_dir/scratch.yaml" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["memory"]["peak_serial_bytes"])' 2>/dev/null)
for mode in streams graph; do
  memory_check "gpu/memory/scratch-limit/$mode" --mode=$mode --memory-limit="${scratch_serial:-0}" \
    "$graphs_dir/scratch.yaml"
done
# ---- loops (#17): host-driven in streams mode, conditional nodes in graph mode ----
# loop_bytes NAME YAML BUFFER BACKEND MODE OUT: runs YAML once with BUFFER
# saved to OUT (a copy of the file with `save:` added to that buffer).
loop_bytes() {
  local yaml=$1 buf=$2 backend=$3 mode=$4 out=$5
  sed "s|^\(  $buf: *{.*\)}\s*$|\1, save: '$out'}|" "$yaml" >"$tmp/loop_$backend.yaml" &&
    "$DAGRUN" --backend="$backend" --mode="$mode" --iterations=1 --warmup=0 --verify "$tmp/loop_$backend.yaml"
}
# same_f32 A B TOL: the two f32 files agree within TOL (absolute).
same_f32() {
  python3 -c 'import struct,sys
a=open(sys.argv[1],"rb").read(); b=open(sys.argv[2],"rb").read()
assert len(a)==len(b) and len(a)>0, (len(a), len(b))
x=struct.unpack("%df"%(len(a)//4),a); y=struct.unpack("%df"%(len(b)//4),b)
d=max(abs(p-q) for p,q in zip(x,y)); print("max |diff|", d); sys.exit(0 if d<=float(sys.argv[3]) else 1)' "$@"
}
golden_dir=tests/golden
[ -d "$DIST/tests/golden" ] && golden_dir=$DIST/tests/golden
gpu_dir=tests/gpu
[ -d "$DIST/tests/gpu" ] && gpu_dir=$DIST/tests/gpu
# The Jacobi solver that stops at convergence (a while loop): the same
# trips and solution as the host backend (tests/loops checks the host
# against a CPU reference), in streams mode.
check gpu/loops/jacobi/streams 120 bash -c "$(declare -f loop_bytes same_f32); tmp=$tmp DAGRUN=$DAGRUN
  loop_bytes $golden_dir/good_jacobi.yaml u host streams $tmp/u_host.bin | grep 'loop solve' >$tmp/trips_host &&
  loop_bytes $golden_dir/good_jacobi.yaml u cuda streams $tmp/u_cuda.bin | grep 'loop solve' >$tmp/trips_cuda &&
  cat $tmp/trips_host $tmp/trips_cuda && [ \"\$(cut -d, -f1 $tmp/trips_host)\" = \"\$(cut -d, -f1 $tmp/trips_cuda)\" ] &&
  same_f32 $tmp/u_host.bin $tmp/u_cuda.bin 1e-5"
# Graph mode: the while is a CUDA WHILE node (backends/cuda/condgraph.c),
# the same trips (counted on the device) and solution.
check gpu/loops/jacobi/graph 120 bash -c "$(declare -f loop_bytes same_f32); tmp=$tmp DAGRUN=$DAGRUN
  loop_bytes $golden_dir/good_jacobi.yaml u host streams $tmp/ug_host.bin | grep 'loop solve' >$tmp/gtrips_host &&
  loop_bytes $golden_dir/good_jacobi.yaml u cuda graph $tmp/ug_cuda.bin | grep 'loop solve' >$tmp/gtrips_cuda &&
  cat $tmp/gtrips_host $tmp/gtrips_cuda && [ \"\$(cut -d, -f1 $tmp/gtrips_host)\" = \"\$(cut -d, -f1 $tmp/gtrips_cuda)\" ] &&
  same_f32 $tmp/ug_host.bin $tmp/ug_cuda.bin 1e-5"
# cond.yaml: while, if/else, a while false at entry (one trip), nested
# whiles with a repeat inside, a repeat with a while inside: the host
# backend's bytes exactly and its trips per loop, in both modes.
for mode in streams graph; do
  check "gpu/loops/cond/$mode" 120 bash -c "$(declare -f loop_bytes same_f32); tmp=$tmp DAGRUN=$DAGRUN
    loop_bytes $gpu_dir/loops/cond.yaml out host streams $tmp/c_host.bin | grep '^loop ' | cut -d, -f1 >$tmp/ct_host &&
    loop_bytes $gpu_dir/loops/cond.yaml out cuda $mode $tmp/c_cuda.bin | grep '^loop ' | cut -d, -f1 >$tmp/ct_cuda &&
    cat $tmp/ct_cuda && diff $tmp/ct_host $tmp/ct_cuda && same_f32 $tmp/c_host.bin $tmp/c_cuda.bin 0"
done
for mode in streams graph; do
  check "gpu/loops/repeat/$mode" 120 bash -c "$(declare -f loop_bytes same_f32); tmp=$tmp DAGRUN=$DAGRUN
    loop_bytes $gpu_dir/loops/repeat.yaml out host streams $tmp/r_host.bin &&
    loop_bytes $gpu_dir/loops/repeat.yaml out cuda $mode $tmp/r_cuda.bin && same_f32 $tmp/r_host.bin $tmp/r_cuda.bin 0"
done
# jacobi_user.yaml: the sweep is a user kernel (NVRTC) with a host twin
# (dist/examples/): its paths are relative to the file, so the copy gets
# absolute ones. The host's trips and solution, and the exact solution
# u[i] = 0.005 * i * (31 - i) (a converged Jacobi is within 2e-3 of it).
exact_poisson() {
  python3 -c 'import struct,sys
a=open(sys.argv[1],"rb").read(); u=struct.unpack("%df"%(len(a)//4),a); n=len(u)
d=max(abs(u[i]-0.005*i*(n-1-i)) for i in range(n)); print("max |u - exact|", d); sys.exit(0 if d<=2e-3 else 1)' "$1"
}
gpu_root=$(cd "$gpu_dir/../.." && pwd)
sed "s|\.\./\.\./\.\./|$gpu_root/|g" "$gpu_dir/loops/jacobi_user.yaml" >"$tmp/jacobi_user.yaml"
for mode in streams graph; do
  check "gpu/loops/jacobi-user/$mode" 180 bash -c "$(declare -f loop_bytes same_f32 exact_poisson); tmp=$tmp DAGRUN=$DAGRUN
    loop_bytes $tmp/jacobi_user.yaml u host streams $tmp/ju_host.bin | grep 'loop solve' >$tmp/jut_host &&
    loop_bytes $tmp/jacobi_user.yaml u cuda $mode $tmp/ju_cuda.bin | grep 'loop solve' >$tmp/jut_cuda &&
    cat $tmp/jut_host $tmp/jut_cuda && [ \"\$(cut -d, -f1 $tmp/jut_host)\" = \"\$(cut -d, -f1 $tmp/jut_cuda)\" ] &&
    same_f32 $tmp/ju_host.bin $tmp/ju_cuda.bin 1e-5 && exact_poisson $tmp/ju_cuda.bin"
done
# gemm.yaml: gemm in a repeat body and in a while body (graph mode: the
# WHILE body holds cuBLAS's capture): the host's trips per loop and bytes.
for mode in streams graph; do
  check "gpu/loops/gemm/$mode" 120 bash -c "$(declare -f loop_bytes same_f32); tmp=$tmp DAGRUN=$DAGRUN
    loop_bytes $gpu_dir/loops/gemm.yaml out host streams $tmp/gm_host.bin | grep '^loop ' | cut -d, -f1 >$tmp/gmt_host &&
    loop_bytes $gpu_dir/loops/gemm.yaml out cuda $mode $tmp/gm_cuda.bin | grep '^loop ' | cut -d, -f1 >$tmp/gmt_cuda &&
    cat $tmp/gmt_cuda && diff $tmp/gmt_host $tmp/gmt_cuda && same_f32 $tmp/gm_host.bin $tmp/gm_cuda.bin 1e-4"
done

# Trip spans (#17 item 6, backends/cuda/trips.c): streams mode's trace has
# each loop's trips inside its node, as many per loop as the host
# backend's trace of the same run; with either timing mode.
for timing in stamps events; do
  check "gpu/loops/trips/$timing" 180 bash -c "set -e -o pipefail
    for y in $gpu_dir/loops/cond.yaml $gpu_dir/loops/repeat.yaml; do
      $DAGRUN --backend=host --iterations=2 --warmup=1 --trace=$tmp/tr_host.json \$y >/dev/null
      $DAGRUN --backend=cuda --mode=streams --timing=$timing --iterations=2 --warmup=1 --trace=$tmp/tr_cuda.json \$y >/dev/null
      python3 $gpu_dir/loops/trip_spans.py $tmp/tr_cuda.json $tmp/tr_host.json | tail -n 3
    done
    $DAGRUN --backend=host --iterations=1 --warmup=0 --trace=$tmp/trj_host.json $golden_dir/good_jacobi.yaml >/dev/null
    $DAGRUN --backend=cuda --mode=streams --timing=$timing --iterations=1 --warmup=0 --trace=$tmp/trj_cuda.json $golden_dir/good_jacobi.yaml >/dev/null
    python3 $gpu_dir/loops/trip_spans.py $tmp/trj_cuda.json $tmp/trj_host.json"
done
# Graph mode: the trips run inside the graph, stamped by the graph itself
# (a trip stamp kernel per body copy that is a trip, no event nodes); a
# guarded copy after the stop must not pass for a trip, so each way of
# unrolling the while (DAGRUN_WHILE_UNROLL, DAGRUN_WHILE_GUARD) gives the
# host's count.
check gpu/loops/trips/graph 240 bash -c "set -e -o pipefail; export DAGRUN_TRIP_STAMPS=1
  # repeat.yaml's loops are top-level repeats, captured unrolled: trips,
  # but no body node times (those are conditional bodies' only).
  for y in $gpu_dir/loops/cond.yaml $gpu_dir/loops/repeat.yaml; do
    body=; [ \$(basename \$y) = cond.yaml ] && body=--body
    $DAGRUN --backend=host --iterations=2 --warmup=1 --trace=$tmp/tg_host.json \$y >/dev/null
    $DAGRUN --backend=cuda --mode=graph --iterations=2 --warmup=1 --trace=$tmp/tg_cuda.json \$y >/dev/null
    python3 $gpu_dir/loops/trip_spans.py \$body $tmp/tg_cuda.json $tmp/tg_host.json | tail -n 4
  done
  $DAGRUN --backend=host --iterations=1 --warmup=0 --trace=$tmp/tgj_host.json $golden_dir/good_jacobi.yaml >/dev/null
  for way in default 1 4 if3; do
    case \$way in
      default) env=;;
      if3) env='DAGRUN_WHILE_GUARD=if DAGRUN_WHILE_UNROLL=3';;
      *) env=DAGRUN_WHILE_UNROLL=\$way;;
    esac
    echo \"jacobi, unroll \$way\"
    env \$env $DAGRUN --backend=cuda --mode=graph --iterations=1 --warmup=0 --trace=$tmp/tgj_cuda.json $golden_dir/good_jacobi.yaml >/dev/null
    python3 $gpu_dir/loops/trip_spans.py --body $tmp/tgj_cuda.json $tmp/tgj_host.json | tail -n 3
  done"

# device_loop.yaml: run.device_loop, 2 warmups + 20 iterations as the trips
# of one WHILE launch in graph mode (a while nested in each): the host's
# bytes and trips; the JSON report has 20 iterations, each timed (> 0).
for mode in streams graph; do
  check "gpu/loops/device-loop/$mode" 120 bash -c "tmp=$tmp
    sed \"s|^\\(  out: *{.*\\)}\\s*\$|\\1, save: '$tmp/dl_host.bin'}|\" $gpu_dir/loops/device_loop.yaml >$tmp/dl_h.yaml &&
    sed \"s|^\\(  out: *{.*\\)}\\s*\$|\\1, save: '$tmp/dl_cuda.bin'}|\" $gpu_dir/loops/device_loop.yaml >$tmp/dl_c.yaml &&
    $DAGRUN --backend=host $tmp/dl_h.yaml | grep '^loop ' | cut -d, -f1 >$tmp/dlt_host &&
    $DAGRUN --backend=cuda --mode=$mode $tmp/dl_c.yaml | grep '^loop ' | cut -d, -f1 >$tmp/dlt_cuda &&
    diff $tmp/dlt_host $tmp/dlt_cuda && cmp $tmp/dl_host.bin $tmp/dl_cuda.bin &&
    $DAGRUN --backend=cuda --mode=$mode --format=json $tmp/dl_c.yaml | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"iterations\"]==20 and d[\"makespan_us\"]>0, d[\"iterations\"]; print(\"makespan_us\", d[\"makespan_us\"])'"
done

# ---- run-time parameters (#19): counted loops, the graph cache ----
check gpu/params/counted/sweep 120 bash -c "
  $DAGRUN --backend=cuda --mode=graph --format=json --params-from=$gpu_dir/params/steps.txt \
    $gpu_dir/params/counted.yaml | python3 -c '
import json, sys
want = [1, 1000, 7, 10000, 3, 1]
rs = [json.loads(l) for l in sys.stdin if l.strip()]
assert len(rs) == len(want), len(rs)
for i, (r, n) in enumerate(zip(rs, want)):
    l = r[\"loops\"][0]
    assert l[\"trips_min\"] == n and l[\"trips_max\"] == n, (i, l)
    how = r[\"param_update\"][\"how\"]
    prev = want[i - 1] if i else 4  # the default the runner was set up with
    assert how == (\"none\" if prev == n else \"updated-nodes\"), (i, how)
    print(n, \"trips\", how, r[\"param_update\"][\"us\"], \"us update\", r[\"makespan_us\"], \"us\")
'"
check gpu/params/counted/verify 120 "$DAGRUN" --backend=cuda --mode=graph --verify --iterations=1 --warmup=0 \
  --params-from=$gpu_dir/params/steps.txt "$gpu_dir/params/counted.yaml"
check gpu/params/graph-cache 180 bash -c "
  $DAGRUN --backend=cuda --mode=graph --format=json --params-from=$gpu_dir/params/seqs.txt \
    $gpu_dir/params/cache.yaml | python3 -c '
import json, sys
want = [None, \"miss\", \"hit\", \"hit\", \"evict\", \"hit\", \"evict\"]
rs = [json.loads(l) for l in sys.stdin if l.strip()]
assert len(rs) == len(want), len(rs)
for i, (r, w) in enumerate(zip(rs, want)):
    u = r[\"param_update\"]
    got = u.get(\"graph_cache\", {}).get(\"result\")
    assert got == w, (i, u)
    if w is not None:
        assert u[\"forced_by\"] in (\"t\", \"g\"), u
        assert u[\"how\"] == (\"cached\" if w == \"hit\" else \"re-instantiated\"), u
    print(r[\"params\"][\"seq\"], u)
'"

# inplace.yaml swept over inplace.txt on one runner: graph mode's in-place
# sets (described built-ins, captured reduction and gemms, split-K chains)
# give the checksums of a fresh capture at every line and of streams mode;
# at least one change went in place; memcheck finds nothing in the sweep.
check gpu/params/in-place 240 bash -c "set -e -o pipefail
  sweep() { $DAGRUN --backend=cuda --params-from=$gpu_dir/params/inplace.txt \"\$@\" $gpu_dir/params/inplace.yaml; }
  sweep --mode=graph | grep '^checksum c[12] ' >$tmp/ip_graph
  DAGRUN_GRAPH_DEVICE_PARAMS=1 sweep --mode=graph | grep '^checksum c[12] ' >$tmp/ip_words
  DAGRUN_GRAPH_UPDATE=capture sweep --mode=graph | grep '^checksum c[12] ' >$tmp/ip_capture
  sweep --mode=streams | grep '^checksum c[12] ' >$tmp/ip_streams
  test -s $tmp/ip_graph
  diff $tmp/ip_graph $tmp/ip_capture
  diff $tmp/ip_graph $tmp/ip_streams
  diff $tmp/ip_graph $tmp/ip_words
  DAGRUN_GRAPH_DEVICE_PARAMS=1 sweep --mode=graph --format=json | python3 -c '
import json, sys, collections
ups = [json.loads(l)[\"param_update\"] for l in sys.stdin if l.startswith(\"{\")]
how = collections.Counter(u[\"how\"] for u in ups)
reads = collections.Counter(u.get(\"device_reads\", 0) for u in ups if u[\"how\"] != \"none\")
print(dict(how), \"device_reads:\", dict(reads))
# Spare slots: a gemm whose split changes is set in place too, so no
# change captures the iteration again.
assert how[\"updated-nodes\"] >= 1 and set(how) <= {\"updated-nodes\", \"none\"}, how
# half (scale_f32 over slices from 0) reads its counts from device memory
# with DAGRUN_GRAPH_DEVICE_PARAMS=1 (by default, and with =auto as its
# lengths vary 128-fold, it is set instead): every change writes them there, the checksums
# above (ip_words) being the proof.
assert set(reads) == {1}, reads
'
  # API errors not reported: a cudaGraphExecUpdate that the runtime refuses
  # (a gemm whose split changed) is one, and dagrun checks every return.
  # With every element-wise node reading device words (half's launch is
  # shaped for seq 2048: memcheck sees any read or write past its count).
  if command -v compute-sanitizer >/dev/null; then
    DAGRUN_GRAPH_DEVICE_PARAMS=1 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 $DAGRUN --backend=cuda --mode=graph --iterations=1 \
      --warmup=0 --params-from=$gpu_dir/params/inplace.txt $gpu_dir/params/inplace.yaml | tail -n 1
  fi"

# pbuf.yaml over pbuf.txt on one runner: a user kernel reads seq and temp
# from parameter buffers (`param:`); graph mode, streams mode and a fresh
# one-shot run per line give the same checksums, and every change in
# graph mode writes buffers and updates no node.
check gpu/params/buffers 120 bash -c "set -e -o pipefail
  sweep() { $DAGRUN --backend=cuda --params-from=$gpu_dir/params/pbuf.txt \"\$@\" $gpu_dir/params/pbuf.yaml; }
  sweep --mode=graph | grep '^checksum c ' >$tmp/pb_graph
  sweep --mode=streams | grep '^checksum c ' >$tmp/pb_streams
  : >$tmp/pb_fresh
  while read -r line; do
    args=(); for w in \$line; do args+=(--param \"\$w\"); done
    $DAGRUN --backend=cuda --mode=graph \"\${args[@]}\" $gpu_dir/params/pbuf.yaml | grep '^checksum c ' >>$tmp/pb_fresh
  done <$gpu_dir/params/pbuf.txt
  test -s $tmp/pb_graph
  diff $tmp/pb_graph $tmp/pb_streams
  diff $tmp/pb_graph $tmp/pb_fresh
  sweep --mode=graph --format=json | python3 -c '
import json, sys
ups = [json.loads(l)[\"param_update\"] for l in sys.stdin if l.startswith(\"{\")]
print(ups)
assert len(ups) == 5 and all(u[\"nodes\"] == 0 and u.get(\"buffers\", 0) >= 1 for u in ups[1:]), ups
'
  if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --tool memcheck --error-exitcode 99 $DAGRUN --backend=cuda --mode=graph --iterations=1 \
      --warmup=0 --params-from=$gpu_dir/params/pbuf.txt $gpu_dir/params/pbuf.yaml | tail -n 1
  fi"

check gpu/params/pipelined 240 "$DIST/bench/params_pipeline_bench" bench/pipelines/params_decoder_bench.yaml \
  bench/pipelines/params_seqs32.params 2 1

# ---- --dot-cuda-graph: CUDA's own DOT of the captured graph ----
# cudaGraphDebugDotPrint writes a digraph with one node per captured
# operation; the pipeline's kernel nodes appear in it as kernel nodes.
name=gpu/dot-cuda-graph/pipeline
if ! selected "$name"; then :
elif over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"
elif timeout -k 5 60 "$DAGRUN" --backend=cuda --mode=graph --iterations=1 --warmup=0 \
    --dot-cuda-graph="$tmp/cuda_graph.dot" --dot="$tmp/run.dot" "$graphs_dir/pipeline.yaml" >"$tmp/out" 2>&1 &&
    grep -q '^digraph' "$tmp/cuda_graph.dot" && grep -qi 'kernel' "$tmp/cuda_graph.dot" &&
    grep -q 'durations: this run' "$tmp/run.dot"; then
  pass "$name"
  echo "    $(grep -c -- '->' "$tmp/cuda_graph.dot") edges in CUDA's graph"
else
  fail "$name" "no digraph with kernel nodes in $tmp/cuda_graph.dot, or no run durations in the DOT"
fi

# ---- timing: a chain of spin nodes ----
spin_chain=$tmp/spin_chain.yaml
{
  echo "dagrun: 1"
  echo "name: spin-chain"
  echo "nodes:"
  echo "  s0: {op: kernel, kernel: spin, args: {ns: 200000}}"
  for i in $(seq 1 9); do
    echo "  s$i: {op: kernel, kernel: spin, args: {ns: 200000}, after: [s$((i - 1))]}"
  done
} >"$spin_chain"
for mode in streams graph; do
  name=gpu/timing/spin-chain/$mode
  : >"$tmp/out"
  selected "$name" || continue
  if over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"; continue; fi
  if ! timeout -k 5 60 "$DAGRUN" --backend=cuda --format=json --mode=$mode --iterations=5 \
      --warmup=1 "$spin_chain" >"$tmp/report.json" 2>"$tmp/out"; then
    fail "$name" "dagrun failed"
    continue
  fi
  if python3 - "$tmp/report.json" >>"$tmp/out" 2>&1 <<'EOF'; then pass "$name"; tail -n 1 "$tmp/out" | sed 's/^/    /'; else fail "$name"; fi
import json, sys
r = json.load(open(sys.argv[1]))
nodes = r["nodes"]
want = 10 * 200.0
got = sum(float(n["duration_us"]) for n in nodes)
print("nodes %d, sum of durations %.1f us, requested %.1f us, makespan %.1f us"
      % (len(nodes), got, want, float(r["makespan_us"])))
assert len(nodes) == 10, "expected 10 nodes"
assert abs(got - want) <= 0.05 * want, "sum of durations off by more than 5%"
assert float(r["makespan_us"]) >= 0.95 * want, "makespan shorter than the chain"
EOF
done

# ---- profilers: ncu sees dagrun's nodes (docs/design.md, "Profiling") ----
# Four built-in nodes, two of them scale_f32 (b and d): only the NVTX range
# of node b, not the kernel's name, can single b out.
ncu_pipe=$tmp/ncu.yaml
cat >"$ncu_pipe" <<'EOF'
dagrun: 1
name: ncu-nodes
buffers:
  x: {type: f32, count: 4Ki, init: iota}
  y: {type: f32, count: 4Ki}
  z: {type: f32, count: 4Ki}
nodes:
  a: {op: kernel, kernel: fill_f32, args: {y: y, value: 1.0}}
  b: {op: kernel, kernel: scale_f32, args: {x: x, alpha: 2.0, y: z}}
  c: {op: kernel, kernel: relu_f32, args: {x: z, y: z}}
  d: {op: kernel, kernel: scale_f32, args: {x: y, alpha: 3.0, y: y}}
EOF
NCU=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)}
# ncu_check NAME WANT_COUNT WANT_NAME NCU_ARGS... -- DAGRUN_ARGS...: runs
# dagrun under ncu (one cheap metric, its CSV to a log file) and passes
# when exactly WANT_COUNT kernels were profiled, each named WANT_NAME
# (empty: any built-in's dr_* name).
ncu_check() {
  local name=$1 want=$2 want_name=$3; shift 3
  local ncu_args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do ncu_args+=("$1"); shift; done
  shift
  : >"$tmp/out"
  selected "$name" || return 0
  if over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"; return; fi
  if [ -z "$NCU" ] || [ ! -x "$NCU" ]; then fail "$name" "ncu (Nsight Compute) not found; set NCU=/path/to/ncu"; return; fi
  rm -f "$tmp/ncu.csv"
  if ! timeout -k 5 120 "$NCU" --csv --page raw --metrics gpu__time_duration.sum --log-file "$tmp/ncu.csv" \
      "${ncu_args[@]}" "$DAGRUN" --backend=cuda --mode=streams --timing=off "$@" "$ncu_pipe" >"$tmp/out" 2>&1; then
    fail "$name" "ncu or dagrun failed: $NCU ${ncu_args[*]} $DAGRUN $* $ncu_pipe"
    [ -s "$tmp/ncu.csv" ] && tail -n 15 "$tmp/ncu.csv" | sed 's/^/    ncu: /'
    return
  fi
  if python3 - "$tmp/ncu.csv" "$want" "$want_name" >>"$tmp/out" 2>&1 <<'PY'; then pass "$name"; tail -n 1 "$tmp/out" | sed 's/^/    /'; else fail "$name" "ncu ${ncu_args[*]}"; fi
import csv, sys
path, want, want_name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lines = [l for l in open(path, errors="replace") if not l.startswith("==")]
rows = list(csv.reader(lines))
head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if head is None:
    print("profiled 0 kernel(s): ncu's log has no 'Kernel Name' header; its end:")
    print("".join(open(path, errors="replace").readlines()[-10:]))
names = []
if head is not None:
    col = rows[head].index("Kernel Name")
    idcol = rows[head].index("ID") if "ID" in rows[head] else 0
    names = [r[col] for r in rows[head + 1:] if len(r) > col and r[idcol].strip().isdigit()]
print("profiled %d kernel(s): %s (want %d%s)" % (len(names), ", ".join(names) or "none", want,
      " named " + want_name if want_name else ""))
if len(names) != want:
    print("hint: none under --nvtx-include means ncu saw no NVTX range 'b' in domain 'dagrun' "
          "(backends/cuda/profile.c pushes one per node, its id a registered string); "
          "too many under --profile-from-start off means the capture range "
          "(cudaProfilerStart/Stop, backends/cuda/backend.c) let warmups in")
    sys.exit(1)
bad = [n for n in names if (n != want_name if want_name else not n.startswith("dr_"))]
if bad:
    print("unexpected kernel name(s): %s (built-ins are named dr_<built-in>, kernels/*.cu)" % ", ".join(bad))
    sys.exit(1)
PY
}
ncu_check gpu/ncu/nvtx-node 1 dr_scale_f32 --nvtx --nvtx-include "dagrun@b/" -- --iterations=1 --warmup=0
# 2 timed iterations x 4 nodes; the warmup's 4 kernels stay outside.
ncu_check gpu/ncu/capture-range 8 "" --profile-from-start off -- --iterations=2 --warmup=1

# ---- real device faults: clean errors, no crash, no hang ----
# expect_fault NAME PATTERN FILE [MODE]: dagrun must exit 70 (not crash:
# no exit over 128, not hang) and say PATTERN on stderr.
expect_fault() {
  local name=$1 pattern=$2 file=$3 mode=${4:-streams}
  : >"$tmp/out"
  selected "$name" || return 0
  if over_budget; then fail "$name" "skipped: over the ${BUDGET_S}s budget"; return; fi
  timeout -k 5 60 "$DAGRUN" --backend=cuda --mode="$mode" "$file" >"$tmp/out" 2>&1
  local rc=$?
  if [ $rc -eq 70 ] && grep -qE -- "$pattern" "$tmp/out"; then
    pass "$name"
    grep -m1 -E "error" "$tmp/out" | cut -c1-200 | sed 's/^/    /'
  else
    fail "$name" "exit $rc, want 70 and /$pattern/"
  fi
}
faults_dir=$(dirname "$0")/faults
[ -d "$faults_dir" ] || faults_dir=$DIST/tests/gpu/faults
for mode in streams graph; do
  expect_fault "gpu/fault/oob-kernel/$mode" "cudaErrorIllegalAddress|illegal" "$faults_dir/oob_kernel.yaml" $mode
  expect_fault "gpu/fault/huge-buffer/$mode" "huge.*cudaErrorMemoryAllocation|cudaErrorMemoryAllocation.*huge" \
    "$faults_dir/huge_buffer.yaml" $mode
  # Eagerly the failing cudaMallocAsync belongs to node 'grab'; captured,
  # the graph's allocation can only fail when it is instantiated or
  # launched, which no single node owns.
  want="grab.*cudaErrorMemoryAllocation"
  [ $mode = graph ] && want="cudaErrorMemoryAllocation"
  expect_fault "gpu/fault/huge-alloc/$mode" "$want" "$faults_dir/huge_alloc.yaml" $mode
done

# ---- compute-sanitizer on each example, both modes, one iteration ----
# memcheck also tracks stream-ordered allocations used on the wrong stream
# without ordering (--track-stream-ordered-races all) and leaks; initcheck
# catches reads of memory nothing wrote.
if command -v compute-sanitizer >/dev/null 2>&1; then
  for f in "${fits[@]}"; do
    n=$(basename "$f" .yaml)
    for mode in streams graph; do
      for tool in memcheck racecheck synccheck initcheck; do
        extra=()
        [ $tool = memcheck ] && extra=(--leak-check full --track-stream-ordered-races all)
        # NCCL's own ncclCommInitAll probes cudaFuncGetAttributes for kernels
        # its build has no image for on this GPU (cudaErrorNoKernelImageForDevice,
        # seen on the H200 with NCCL 2.28, 4 such API errors per init): with
        # collectives, memcheck leaves CUDA API return codes unreported (dagrun
        # checks every one itself) and still reports memory errors and leaks.
        [ $tool = memcheck ] && grep -qE 'op: *(allreduce|broadcast|reduce|allgather|reducescatter|alltoall|send|recv)' "$f" &&
          extra+=(--report-api-errors no)
        check "gpu/sanitize/$n/$mode/$tool" 120 compute-sanitizer --tool $tool "${extra[@]}" \
          --error-exitcode 99 "$DAGRUN" --backend=cuda --mode=$mode --iterations=1 --warmup=0 "$f"
      done
    done
  done
else
  : >"$tmp/out"
  selected gpu/sanitize && fail gpu/sanitize "compute-sanitizer not found"
fi

# ---- eager copy batches (#18.2, backends/cuda/batch.h) ----
# tests/gpu/batch/copies.yaml on one stream: its checksums equal the host
# backend's with batches (--timing=off: a batch of 17 copies, one of 2 per
# iteration) and without (DAGRUN_COPY_BATCH=0; --timing=events); and the
# bench's copies64/copies512 verify with batches.
batch_yaml=$gpu_dir/batch/copies.yaml
batch_want=$("$DAGRUN" --backend=host --iterations=3 --warmup=1 "$batch_yaml" 2>/dev/null | grep -E '^checksum [^ ]+ [^ ]+ 0x[0-9a-f]+$')
for how in batched:--timing=off unbatched:--timing=off:DAGRUN_COPY_BATCH=0 events:--timing=events; do
  IFS=: read -r name flag env <<<"$how"
  check "gpu/batch/copies/$name" 60 bash -c '
    got=$(env $4 "$1" --backend=cuda --mode=streams "$2" "$3" | grep -E "^checksum [^ ]+ [^ ]+ 0x[0-9a-f]+\$")
    echo "got:  $got"; echo "want: $5"
    [ -n "$5" ] && [ "$got" = "$5" ]' _ "$DAGRUN" "$flag" "$batch_yaml" "${env:-DAGRUN_COPY_BATCH=1}" "$batch_want"
done
for n in copies64 copies512; do
  [ -e bench/pipelines/$n.yaml ] || continue
  check "gpu/batch/verify/$n" 60 "$DAGRUN" --backend=cuda --mode=streams --timing=off --verify \
    --iterations=2 --warmup=1 bench/pipelines/$n.yaml
done

# ---- the bench pipelines, verified (larger DAGs, copies, spin) ----
for f in bench/pipelines/*.yaml; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .yaml)
  for mode in streams graph; do
    check "gpu/bench/$n/$mode" 120 "$DAGRUN" --backend=cuda --verify --mode=$mode \
      --iterations=2 --warmup=1 "$f"
  done
done

echo "== $((SECONDS - start)) s"
[ $failed -gt 0 ] && printf 'failed: %s\n' "${failed_names[@]}"
[ -n "${ONLY:-}" ] && echo "ONLY='$ONLY': $not_selected checks not selected"
echo "$passed passed, $failed failed"
rm -rf "$tmp"
[ $failed -eq 0 ]
