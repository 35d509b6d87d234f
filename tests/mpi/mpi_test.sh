#!/usr/bin/env bash
# mpi_test.sh: dagrun across processes, under Open MPI's mpirun with 2 and
# 4 ranks on this machine (--oversubscribe, as root where need be), on the
# host backend: every rank loads the same YAML for its own rank, runs its
# own plan, and the collectives go through MPI. Checks: the data-parallel
# step under --verify and --delay-seed gives every rank the same weights
# (which a dropped or wrong allreduce would not: each rank's gradients
# differ); every collective op against its definition; rank, nranks and
# rank: on nodes; the merged report (text and JSON
# against docs/report.schema.json); one rank's bad pipeline stops every
# rank with its exit code; collectives whose participants disagree at run
# time give a FILE:LINE:COL error on every rank; a rank that fails while
# running, and a rank killed with SIGKILL, end every rank within seconds;
# MPI missing under a launcher is exit 69; the plain binary does not link
# libmpi; and the CUDA backend across ranks on the fake CUDA and NCCL
# tables (nccl_driver): the ncclUniqueId bootstrap, every collective,
# each NCCL call failed in turn, a rank killed inside an allreduce. Prints TAP; exits non-zero on any failure. Not a Bazel test (it
# runs Bazel and mpirun); tools/test.sh mpi calls it.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cases=0 failed=0
ok() { cases=$((cases + 1)); echo "ok $cases $1"; }
not_ok() {
  cases=$((cases + 1)); failed=$((failed + 1)); echo "not ok $cases $1"
  [ -f "$tmp/log" ] && sed 's/^/# /' "$tmp/log" | tail -40
}
check() { # NAME CMD...: the command must succeed
  local name=$1; shift
  if "$@" >"$tmp/log" 2>&1; then ok "$name"; else not_ok "$name (exit $?)"; fi
}

if ! command -v mpirun >/dev/null; then
  echo "1..0 # SKIP mpirun not installed (tools/setup.sh installs openmpi-bin)"
  exit 0
fi
cd "$root"
bazel build //cli:dagrun //backends:libdagrun_mpi.so //tests/mpi:nccl_driver >"$tmp/build.log" 2>&1 || {
  echo "1..1"; echo "not ok 1 build"; sed 's/^/# /' "$tmp/build.log" | tail -20; exit 1; }
bin=$(bazel info bazel-bin 2>/dev/null)
dagrun=$bin/cli/dagrun
driver=$bin/tests/mpi/nccl_driver
export DAGRUN_MPI_PLUGIN=$bin/backends/libdagrun_mpi.so
# Quiet and container-safe Open MPI: shared memory without CMA (ptrace is
# often not allowed), no network probing, no binding on an oversubscribed
# machine.
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { # NP ARGS...
  local np=$1; shift
  timeout 120 mpirun --oversubscribe --allow-run-as-root -np "$np" "$@"
}


# ---- the plain binary ------------------------------------------------------
check "the dagrun binary does not link libmpi" sh -c "! ldd '$dagrun' | grep -q libmpi"
check "without a launcher: rank 0 of 1, no MPI" sh -c \
  "'$dagrun' --backend=host --iterations=1 --warmup=0 graphs/data_parallel_ranks.yaml | grep -q 'verify: not run'"
check "a launcher without MPI is exit 69" sh -c \
  "OMPI_COMM_WORLD_SIZE=2 DAGRUN_MPI_PLUGIN=/nonexistent/libdagrun_mpi.so '$dagrun' --check graphs/data_parallel_ranks.yaml 2>'$tmp/err69'; \
   rc=\$?; grep -q 'MPI is unavailable' '$tmp/err69' && [ \$rc -eq 69 ]"

# ---- the data-parallel step --------------------------------------------------
# Every rank checksums its weights after the steps: with the allreduce they
# are the same on every rank; without it each rank's differ.
same_weights() { # NP EXTRA...
  local np=$1; shift
  mpi "$np" "$dagrun" --backend=host "$@" graphs/data_parallel_ranks.yaml >"$tmp/dp.out" 2>"$tmp/dp.err"
  local rc=$? n distinct
  # Not anchored: mpirun forwards each rank's output in its own chunks.
  n=$(grep -o 'checksum weights w_out 0x[0-9a-f]\{16\}' "$tmp/dp.out" | wc -l)
  distinct=$(grep -o 'checksum weights w_out 0x[0-9a-f]\{16\}' "$tmp/dp.out" | sort -u | wc -l)
  [ $rc -eq 0 ] && [ "$n" -eq "$np" ] && [ "$distinct" -eq 1 ] || {
    grep -v '^[0-9] ' "$tmp/dp.out" "$tmp/dp.err"; echo "rc=$rc n=$n distinct=$distinct"; return 1; }
}
for np in 2 4; do
  check "np $np: data-parallel step, --verify --delay-seed: verified on every rank" sh -c \
    "$(declare -f mpi); mpi $np '$dagrun' --backend=host --verify --delay-seed=7 graphs/data_parallel_ranks.yaml >'$tmp/v$np' 2>&1; \
     rc=\$?; cat '$tmp/v$np'; [ \$rc -eq 0 ] && grep -q '^verify ($np ranks): passed on every rank' '$tmp/v$np'"
  check "np $np: every rank ends with the same weights (the allreduce ran)" same_weights "$np" --delay-seed=3 \
    --iterations=1 --warmup=0
done
# ---- rank, nranks, rank: -----------------------------------------------------
cat >"$tmp/ranks.yaml" <<'EOF'
dagrun: 1
run: {iterations: 1, warmup: 0}
buffers:
  x: {type: f32, count: 8, init: iota}
nodes:
  hello{rank}:
    op: host
    fn: print
    args: {message: "rank {rank} of {nranks}, local {local_rank}"}
  odd:
    op: host
    fn: print
    rank: "1..nranks-1"
    args: {message: "not on rank 0"}
    after: [last]
  last:
    op: noop
    rank: "{nranks - 1}"
  each:
    foreach: {r: 0..nranks-1}
    op: host
    fn: print
    rank: r
    args: {message: "each {r}"}
EOF
ranks_vars() {
  # Each rank's stdout in a file of its own (--output-filename): mpirun
  # forwards the ranks' output in chunks, and a loaded machine has shown
  # one rank's line inside another's ("rank 3:hello1: ...").
  rm -rf "$tmp/ro"
  mpi 4 --output-filename "$tmp/ro" "$dagrun" --backend=host "$tmp/ranks.yaml" >"$tmp/r.out" 2>&1 ||
    { cat "$tmp/r.out"; return 1; }
  local out odd=0
  for r in 0 1 2 3; do
    out=$(echo "$tmp"/ro/*/rank.$r/stdout)
    [ -f "$out" ] || { echo "no stdout file for rank $r"; ls -R "$tmp/ro"; return 1; }
    grep -q "^hello$r: rank $r of 4, local $r" "$out" || { echo "no hello $r"; cat "$out"; return 1; }
    grep -q "^each: each $r" "$out" || { echo "no each $r"; cat "$out"; return 1; }
    [ "$(grep -c '^each: ' "$out")" -eq 1 ] || { echo "rank $r ran another rank's each"; cat "$out"; return 1; }
    odd=$((odd + $(grep -c '^odd: not on rank 0' "$out")))
    if [ $r -eq 0 ]; then
      ! grep -q '^odd: ' "$out" || { echo "odd ran on rank 0"; return 1; }
      # The merged table, on rank 0: one row per node per rank, under a
      # rank column.
      grep -q '^rank node' "$out" && grep -qE '^3 +last ' "$out" && ! grep -qE '^0 +odd ' "$out" ||
        { echo "merged table"; cat "$out"; return 1; }
    fi
  done
  [ $odd -eq 3 ] || { echo "odd count $odd"; return 1; }
}
check "np 4: rank, nranks, local_rank in expressions and foreach; rank: restricts nodes" ranks_vars
json_report() {
  mpi 2 "$dagrun" --backend=host --verify --format=json graphs/data_parallel_ranks.yaml >"$tmp/j.out" 2>"$tmp/j.err" || return 1
  python3 - "$tmp/j.out" docs/report.schema.json <<'PY'
import json, sys
text = open(sys.argv[1]).read()
start = text.index('{"schema"')
doc = json.loads(text[start:text.rindex('}') + 1])
assert doc["nranks"] == 2 and doc["verified"] is True and doc["failed_ranks"] == [], doc
assert [r["rank"] for r in doc["ranks"]] == [0, 1]
assert all(r["verified"] is True for r in doc["ranks"])
try:
    import jsonschema
except ImportError:
    sys.exit(0)
schema = json.load(open(sys.argv[2]))
jsonschema.validate(doc, {"$ref": "#/$defs/ranks_report", "$defs": schema["$defs"]})
PY
}
check "np 2: --format=json merges the ranks' reports (valid against the schema)" json_report

# ---- failures ----------------------------------------------------------------
# One rank's pipeline is bad (a node only rank 1 has names no buffer): every
# rank stops before running, with exit 65, and rank 1 says where.
cat >"$tmp/bad1.yaml" <<'EOF'
dagrun: 1
buffers:
  x: {type: f32, count: 8}
nodes:
  fine: {op: memset, dst: x, value: 0}
  broken:
    op: memset
    rank: 1
    dst: nosuchbuffer
    value: 1
EOF
bad_on_one() {
  local t0=$SECONDS
  mpi 2 "$dagrun" --backend=host "$tmp/bad1.yaml" >"$tmp/b.out" 2>&1
  local rc=$?
  cat "$tmp/b.out"
  [ $rc -eq 65 ] && grep -q "bad1.yaml:9:10: error: .*nosuchbuffer" "$tmp/b.out" && [ $((SECONDS - t0)) -lt 30 ]
}
check "np 2: a pipeline bad on one rank only: every rank exits 65, the error has its location" bad_on_one

# A collective whose participants disagree at run time (rank 1's slice is
# shorter): caught before the first iteration, with the node's location.
cat >"$tmp/mismatch.yaml" <<'EOF'
dagrun: 1
buffers:
  g: {type: f32, count: 1024, init: iota}
nodes:
  sum:
    op: allreduce
    reduce: sum
    buffers: "g[0:1024 - rank * 24]"
EOF
mismatch() {
  mpi 2 "$dagrun" --backend=host "$tmp/mismatch.yaml" >"$tmp/m.out" 2>&1
  local rc=$?
  cat "$tmp/m.out"
  [ $rc -eq 65 ] && grep -q "mismatch.yaml:5:3: error: .*rank 1.*1000.*rank 0.*1024\|mismatch.yaml:5:3: error: .*rank 0.*1024.*rank 1.*1000" "$tmp/m.out"
}
check "np 2: collective participants disagree (size): exit 65 naming the node and both ranks" mismatch
cat >"$tmp/order.yaml" <<'EOF'
dagrun: 1
buffers:
  a: {type: f32, count: 64, init: iota}
  b: {type: f64, count: 64, init: iota}
nodes:
  first{rank}:
    op: allreduce
    reduce: sum
    buffers: a
  second{1 - rank}:
    op: allreduce
    reduce: max
    buffers: b
EOF
order_mismatch() {
  mpi 2 "$dagrun" --backend=host "$tmp/order.yaml" >"$tmp/o.out" 2>&1
  local rc=$?
  cat "$tmp/o.out"
  [ $rc -eq 65 ] && grep -q "error: .*collective" "$tmp/o.out"
}
check "np 2: collectives named differently on two ranks: a clear error, not a hang" order_mismatch

# A rank whose run fails (a user kernel has no host twin: only rank 1 has
# it) while rank 0 sleeps 60 s: every rank ends within seconds.
cat >"$tmp/fail1.yaml" <<'EOF'
dagrun: 1
run: {iterations: 1, warmup: 0}
kernels:
  k:
    source: k.cu
    params:
      - {name: y, type: f32*, access: write}
buffers:
  y: {type: f32, count: 8}
nodes:
  nap: {op: host, fn: sleep, rank: 0, args: {us: 60000000}}
  user: {op: kernel, kernel: k, rank: 1, args: {y: y}}
EOF
echo 'extern "C" __global__ void k(float *y) {}' >"$tmp/k.cu"
fail_one() {
  local t0=$SECONDS
  mpi 2 "$dagrun" --backend=host "$tmp/fail1.yaml" >"$tmp/f.out" 2>&1
  local rc=$? dt=$((SECONDS - t0))
  cat "$tmp/f.out"; echo "rc=$rc after ${dt}s"
  [ $rc -ne 0 ] && [ $dt -lt 20 ] && grep -q "host twin" "$tmp/f.out"
}
check "np 2: one rank fails while the other sleeps 60 s: all end within 20 s, non-zero" fail_one

# kill -9 of one rank in the middle of a run: the others end within seconds.
cat >"$tmp/sleep.yaml" <<'EOF'
dagrun: 1
run: {iterations: 1, warmup: 0}
buffers:
  g: {type: f32, count: 64, init: iota}
nodes:
  nap: {op: host, fn: sleep, args: {us: 60000000}}
  sum: {op: allreduce, reduce: sum, buffers: g, after: [nap]}
EOF
killed() {
  local np=$1
  mpirun --oversubscribe --allow-run-as-root -np "$np" "$dagrun" --backend=host "$tmp/sleep.yaml" \
    >"$tmp/k.out" 2>&1 &
  local mp=$! pids="" i
  for i in $(seq 100); do
    pids=$(pgrep -f "$dagrun --backend=host $tmp/sleep.yaml" || true)
    [ "$(echo "$pids" | grep -c .)" -ge "$np" ] && break
    sleep 0.1
  done
  sleep 1
  local victim
  victim=$(echo "$pids" | tail -1)
  [ -n "$victim" ] || { kill "$mp"; echo "no ranks found"; return 1; }
  local t0=$SECONDS
  kill -9 "$victim"
  local waited=0
  while kill -0 "$mp" 2>/dev/null && [ $waited -lt 200 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$mp" 2>/dev/null; then kill -9 "$mp"; echo "still running after 20 s"; return 1; fi
  wait "$mp"
  local rc=$?
  cat "$tmp/k.out"; echo "mpirun rc=$rc after $((SECONDS - t0))s"
  [ $rc -ne 0 ] && ! pgrep -f "$dagrun --backend=host $tmp/sleep.yaml" >/dev/null
}
check "np 2: kill -9 of a rank mid-run: the others end within 20 s, non-zero" killed 2
check "np 4: kill -9 of a rank mid-run: the others end within 20 s, non-zero" killed 4

# ---- every collective across ranks ---------------------------------------------
for np in 2 4; do
  check "np $np: every collective op against its definition (tests/mpi/collectives.yaml)" sh -c \
    "$(declare -f mpi); mpi $np '$dagrun' --backend=host --iterations=1 --warmup=0 --verify --delay-seed=5 tests/mpi/collectives.yaml >'$tmp/c$np' 2>&1; \
     rc=\$?; NR=$np python3 tests/mpi/collectives_check.py '$tmp/c$np' || rc=1; [ \$rc -eq 0 ] || cat '$tmp/c$np'; [ \$rc -eq 0 ]"
done
# ---- the CUDA backend across ranks: fake CUDA, fake NCCL, real MPI -------------
# tests/mpi/nccl_driver runs a pipeline on the CUDA backend with the fake
# CUDA runtime and the fake NCCL (whose data moves through this job's
# MPI): the bootstrap (rank 0's ncclUniqueId reaching every rank's
# ncclCommInitRank with (nranks, id, rank)), groups, every collective's
# result, and failures ending every rank.
nccl_bootstrap() { # NP
  local np=$1
  mpi "$np" "$driver" --verify graphs/data_parallel_ranks.yaml >"$tmp/n$np" 2>&1 || { cat "$tmp/n$np"; return 1; }
  local made ids r n distinct
  made=$(sed -n 's/^nccl rank 0 of '"$np"': made id \([0-9a-f]*\)$/\1/p' "$tmp/n$np")
  [ -n "$made" ] || { echo "rank 0 made no id"; cat "$tmp/n$np"; return 1; }
  for r in $(seq 0 $((np - 1))); do
    uids=0; [ "$r" -eq 0 ] && uids=2 # one communicator per run: --verify's two
    grep -q "^nccl rank $r of $np: init_rank nranks=$np rank=$r id=$made uids=$uids groups=" "$tmp/n$np" ||
      { echo "rank $r: no init_rank($np, $made, $r)"; cat "$tmp/n$np"; return 1; }
    grep -q "^rank $r: verify passed" "$tmp/n$np" || { echo "rank $r: not verified"; return 1; }
  done
  # One step: every rank ends with the same weights (the allreduces ran;
  # each rank's gradients differ, so a dropped one shows).
  mpi "$np" "$driver" --iterations=1 --warmup=0 graphs/data_parallel_ranks.yaml >"$tmp/n1$np" 2>&1 ||
    { cat "$tmp/n1$np"; return 1; }
  n=$(grep -o 'checksum weights w_out 0x[0-9a-f]\{16\}' "$tmp/n1$np" | wc -l)
  distinct=$(grep -o 'checksum weights w_out 0x[0-9a-f]\{16\}' "$tmp/n1$np" | sort -u | wc -l)
  [ "$n" -eq "$np" ] && [ "$distinct" -eq 1 ] || { echo "weights differ between ranks (n=$n distinct=$distinct)"; cat "$tmp/n1$np"; return 1; }
}
for np in 2 4; do
  check "np $np: CUDA + fake NCCL: rank 0's ncclUniqueId reaches every ncclCommInitRank(nranks, id, rank), --verify passes" \
    nccl_bootstrap "$np"
  check "np $np: CUDA + fake NCCL: every collective op against its definition" sh -c \
    "$(declare -f mpi); mpi $np '$driver' --verify --iterations=1 tests/mpi/collectives.yaml >'$tmp/nc$np' 2>&1; \
     rc=\$?; NR=$np python3 tests/mpi/collectives_check.py '$tmp/nc$np' || rc=1; [ \$rc -eq 0 ] || cat '$tmp/nc$np'; [ \$rc -eq 0 ]"
done
# Each NCCL call of rank 1 failed in turn (and rank 0's ncclGetUniqueId):
# every rank ends within 20 s with exit 70, the failing call named.
nccl_fail() { # RANK K
  local t0=$SECONDS
  FAKE_NCCL_FAIL_RANK=$1 FAKE_NCCL_FAIL_AT=$2 mpi 2 "$driver" --iterations=1 graphs/data_parallel_ranks.yaml \
    >"$tmp/nf" 2>&1
  local rc=$? dt=$((SECONDS - t0))
  [ $rc -eq 70 ] && [ $dt -lt 20 ] && grep -q "dagrun: error: .*nccl[A-Za-z]* failed.*NCCL error 2\|dagrun: error: NCCL bootstrap: ncclGetUniqueId failed on rank 0" "$tmp/nf" ||
    { grep -v checksum "$tmp/nf"; echo "rank $1 call $2: rc=$rc after ${dt}s"; return 1; }
}
nccl_sweep() {
  mpi 2 "$driver" --iterations=1 graphs/data_parallel_ranks.yaml >"$tmp/ns" 2>&1 || { cat "$tmp/ns"; return 1; }
  local total k
  total=$(sed -n 's/^nccl rank 1 of 2: .* calls=\([0-9]*\)$/\1/p' "$tmp/ns")
  [ -n "$total" ] && [ "$total" -gt 5 ] || { echo "no call count"; cat "$tmp/ns"; return 1; }
  for k in $(seq 1 "$total"); do nccl_fail 1 "$k" || return 1; done
  nccl_fail 0 1 || return 1 # rank 0's ncclGetUniqueId: both ranks say so
  echo "rank 1's $total NCCL calls failed in turn: every rank ended with 70"
}
check "np 2: CUDA + fake NCCL: each NCCL call failed in turn ends every rank, exit 70, the call named" nccl_sweep
# kill -9 of the rank that sleeps before the allreduce while the other
# waits inside it (in the fake NCCL's MPI): the other ends within 20 s.
cat >"$tmp/nsleep.yaml" <<'EOF'
dagrun: 1
run: {iterations: 1, warmup: 0}
buffers:
  g: {type: f32, count: 64, init: iota}
nodes:
  nap: {op: host, fn: sleep, rank: 1, args: {us: 60000000}}
  sum: {op: allreduce, reduce: sum, buffers: g, after: [nap]}
EOF
nccl_killed() {
  mpirun --oversubscribe --allow-run-as-root -np 2 "$driver" "$tmp/nsleep.yaml" >"$tmp/nk.out" 2>&1 &
  local mp=$! victim="" i p
  for i in $(seq 100); do
    for p in $(pgrep -f "$driver $tmp/nsleep.yaml" || true); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
    done
    [ -n "$victim" ] && break
    sleep 0.1
  done
  [ -n "$victim" ] || { kill "$mp"; echo "rank 1 not found"; return 1; }
  sleep 1
  local t0=$SECONDS waited=0
  kill -9 "$victim"
  while kill -0 "$mp" 2>/dev/null && [ $waited -lt 200 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$mp" 2>/dev/null; then kill -9 "$mp"; echo "still running after 20 s"; return 1; fi
  wait "$mp"
  local rc=$?
  echo "mpirun rc=$rc after $((SECONDS - t0))s"
  [ $rc -ne 0 ] && ! pgrep -f "$driver $tmp/nsleep.yaml" >/dev/null
}
check "np 2: CUDA + fake NCCL: kill -9 of a rank while the other waits in an allreduce: it ends within 20 s" nccl_killed

check "np 2: --plan prints each rank's own plan" sh -c \
  "$(declare -f mpi); mpi 2 '$dagrun' --plan '$tmp/ranks.yaml' > '$tmp/p.out' && grep -q '^== rank 1 ==' '$tmp/p.out' && grep -q 'odd' '$tmp/p.out'"

echo "1..$cases"
echo "# $cases cases, $failed failed"
[ "$failed" -eq 0 ]
