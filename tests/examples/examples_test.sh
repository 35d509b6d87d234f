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

examples=("$graphs_dir"/*.yaml)
echo "1..$(( ${#examples[@]} * 3 + n_random ))"
for f in "${examples[@]}"; do
  name=$(basename "$f" .yaml)
  run "/examples/$name/check" "$dagrun" --check "$f"
  run "/examples/$name/plan" "$dagrun" --plan --format=json "$f"
  run "/examples/$name/verify-host-delays" "$dagrun" --backend=host --verify --iterations=1 --warmup=0 --delay-seed=7 "$f"
done
for seed in $(seq 1 "$n_random"); do
  python3 "$gen" "$seed" 40 >"$tmp/r$seed.yaml"
  run "/examples/random/$seed" "$dagrun" --backend=host --verify --delay-seed="$seed" "$tmp/r$seed.yaml"
done
[ $failed -eq 0 ]
