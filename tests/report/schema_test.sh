#!/usr/bin/env bash
# schema_test.sh: every example pipeline (graphs/*.yaml) run once on the
# host backend, its JSON run report validated against
# docs/report.schema.json, and its JSON plan against the schema's
# $defs/plan, with python3-jsonschema (tools/setup.sh installs it).
# Prints TAP.
set -u
dagrun=$1 graphs_dir=$2 schema=$3 validate=$4
shift 4 # then more pipelines (loops: tests/golden/good_jacobi.yaml)
tmp=${TEST_TMPDIR:-$(mktemp -d)}

# Debian's python3-jsonschema: the first python3 that has it.
python=
for p in /usr/bin/python3 python3; do
  if "$p" -c 'import jsonschema' 2>/dev/null; then python=$p; break; fi
done

examples=("$graphs_dir"/*.yaml "$@")
echo "1..$(( ${#examples[@]} * 2 + 1 ))"
if [ -z "$python" ]; then
  echo "Bail out! no python3 with the jsonschema module: run tools/setup.sh (python3-jsonschema)"
  exit 1
fi
cases=0 failed=0
check() { # NAME DEF CMD...: runs CMD into a file and validates it
  local name=$1 def=$2; shift 2
  cases=$((cases + 1))
  if ! timeout 300 "$@" >"$tmp/out.json" 2>"$tmp/err"; then
    failed=$((failed + 1)); echo "not ok $cases $name (exit $?)"; sed 's/^/# /' "$tmp/err"; return
  fi
  if "$python" "$validate" "$schema" "$def" "$tmp/out.json" >"$tmp/why" 2>&1; then
    echo "ok $cases $name"
  else
    failed=$((failed + 1)); echo "not ok $cases $name"; sed 's/^/# /' "$tmp/why"
  fi
}
for f in "${examples[@]}"; do
  name=$(basename "$f" .yaml)
  check "/report/schema/$name/run" run_report "$dagrun" --backend=host --format=json --iterations=1 --warmup=0 "$f"
  check "/report/schema/$name/plan" plan "$dagrun" --plan --format=json "$f"
done
# A sweep: one JSON report per line (JSON Lines), each with params and
# param_update; every line validated.
printf 'seq=16\nseq=1024 scale=0.5\nseq=300\n' >"$tmp/sweep.params"
"$dagrun" --backend=host --format=json --iterations=1 --warmup=0 --params-from="$tmp/sweep.params" \
  "$graphs_dir/params_decoder.yaml" >"$tmp/sweep.jsonl" 2>"$tmp/err"
# The lines as one JSON array, so the run_reports definition checks each
# (and that there are three, the second with a parameter update).
{ echo '['; sed '$!s/$/,/' "$tmp/sweep.jsonl"; echo ']'; } >"$tmp/sweep.json"
check "/report/schema/params_decoder/sweep" run_reports cat "$tmp/sweep.json"
[ $failed -eq 0 ]
