#!/usr/bin/env bash
# examples_test.sh: end-to-end runs of the dagrun binary on the host
# backend, printing TAP. Every example in graphs/ is checked, planned and
# run with --verify and seeded random delays before each node, and so are
# many random pipelines (random_pipeline.py): a missing dependency makes the
# concurrent run differ from the serial one and fails the case.
set -u
dagrun=$1
graphs_dir=$2
gen=$3
n_random=${N_RANDOM:-60}
tmp=${TEST_TMPDIR:-$(mktemp -d)}

cases=0 failed=0
ok() { cases=$((cases + 1)); echo "ok $cases $1"; }
not_ok() { cases=$((cases + 1)); failed=$((failed + 1)); echo "not ok $cases $1"; sed 's/^/# /' "$tmp/out"; }
run() { # NAME CMD...
  local name=$1; shift
  if timeout 300 "$@" >"$tmp/out" 2>&1; then ok "$name"; else not_ok "$name (exit $?)"; fi
}

# deterministic NAME FILE: plans FILE twice (text, JSON, DOT) and compares
# the two byte for byte: the same pipeline must always give the same plan.
deterministic() {
  local name=$1 f=$2 k
  for k in 1 2; do
    "$dagrun" --plan "$f" >"$tmp/plan$k.txt" 2>&1 &&
      "$dagrun" --plan --format=json "$f" >"$tmp/plan$k.json" 2>&1 &&
      "$dagrun" --dot=- "$f" >"$tmp/plan$k.dot" 2>&1 || { cp "$tmp/plan$k.txt" "$tmp/out"; not_ok "$name (exit)"; return; }
  done
  if cmp -s "$tmp/plan1.txt" "$tmp/plan2.txt" && cmp -s "$tmp/plan1.json" "$tmp/plan2.json" &&
    cmp -s "$tmp/plan1.dot" "$tmp/plan2.dot"; then
    ok "$name"
  else
    diff "$tmp/plan1.json" "$tmp/plan2.json" >"$tmp/out" 2>&1
    not_ok "$name (plans differ)"
  fi
}

# interrupt NAME: Ctrl-C during a long run stops it after the iteration in
# flight, prints the report so far and exits 130.
interrupt() {
  local name=$1
  printf 'dagrun: 1\nrun: {iterations: 100000, warmup: 0}\nbuffers: {h: {type: f32, count: 4, where: host, init: iota}}\nnodes:\n  nap: {op: host, fn: sleep, args: {us: 1000}}\n  say: {op: host, fn: checksum, args: {buffer: h}}\n' >"$tmp/long.yaml"
  "$dagrun" --backend=host "$tmp/long.yaml" >"$tmp/int.out" 2>"$tmp/int.err" &
  local pid=$!
  sleep 1
  kill -INT "$pid"
  local rc=0
  wait "$pid" || rc=$?
  cat "$tmp/int.out" "$tmp/int.err" >"$tmp/out"
  if [ "$rc" -eq 130 ] && grep -q "^interrupted after" "$tmp/int.out" && grep -q "^nap " "$tmp/int.out" &&
    grep -q "dagrun: interrupted after" "$tmp/int.err"; then
    ok "$name"
  else
    not_ok "$name (exit $rc)"
  fi
}

examples=("$graphs_dir"/*.yaml)
echo "1..$(( ${#examples[@]} * 4 + n_random + 1 ))"
interrupt /examples/cli/interrupt
for f in "${examples[@]}"; do
  name=$(basename "$f" .yaml)
  run "/examples/$name/check" "$dagrun" --check "$f"
  run "/examples/$name/plan" "$dagrun" --plan --format=json "$f"
  deterministic "/examples/$name/plan-deterministic" "$f"
  run "/examples/$name/verify-host-delays" "$dagrun" --backend=host --verify --iterations=1 --warmup=0 --delay-seed=7 "$f"
done
for seed in $(seq 1 "$n_random"); do
  python3 "$gen" "$seed" 40 >"$tmp/r$seed.yaml"
  run "/examples/random/$seed" "$dagrun" --backend=host --verify --delay-seed="$seed" "$tmp/r$seed.yaml"
done
[ $failed -eq 0 ]
