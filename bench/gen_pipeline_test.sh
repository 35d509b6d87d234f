#!/usr/bin/env bash
# gen_pipeline_test.sh: checks that bench/gen_pipeline.py writes what it
# promises: valid pipelines (dagrun --check) with exactly the requested node
# count and the requested DAG width, as dagrun's planner measures it
# (chain 1, layered and forkjoin W, random at least W). Prints TAP.
set -u
dagrun=$1
gen=$2
tmp=${TEST_TMPDIR:-$(mktemp -d)}
cases=0 failed=0
check() { # SHAPE NODES WIDTH WANT_OP WANT_WIDTH [ARGS...]
  local shape=$1 n=$2 w=$3 op=$4 want=$5; shift 5
  local f="$tmp/$shape-$n-$w.yaml" name="/bench/gen_pipeline/$shape/n$n/w$w"
  cases=$((cases + 1))
  if python3 "$gen" --nodes "$n" --width "$w" --shape "$shape" --out "$f" "$@" &&
     "$dagrun" --plan --format=json "$f" >"$tmp/plan.json" 2>"$tmp/err" &&
     python3 - "$tmp/plan.json" "$n" "$op" "$want" <<'PY'
import json, sys
plan, n, op, want = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
got_n, width = len(plan["nodes"]), plan["width"]
ok = got_n == n and (width == want if op == "eq" else width >= want)
print("# nodes %d (want %d), width %d (want %s %d), edges %d" % (got_n, n, width, op, want, plan["edges"]))
sys.exit(0 if ok else 1)
PY
  then echo "ok $cases $name"
  else failed=$((failed + 1)); echo "not ok $cases $name"; sed 's/^/# /' "$tmp/err" | tail -n 5
  fi
}
echo "1..9"
check chain 1 1 eq 1
check chain 3000 7 eq 1
check layered 3000 16 eq 16 --period 5
check layered 1000 64 eq 64 --period 1
check layered 50 8 eq 8
check forkjoin 3000 32 eq 32
check forkjoin 2 4 eq 1
check random 3000 16 ge 16 --seed 3
check random 4000 400 ge 400 --slice 4
[ $failed -eq 0 ]
