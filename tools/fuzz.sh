#!/usr/bin/env bash
# tools/fuzz.sh: builds the libFuzzer targets (clang, ASan, UBSan) and runs
# each for SECONDS (default 60) on the corpus in tests/fuzz/corpus/TARGET,
# seeded from graphs/ and tests/golden/. Any crash, leak or timeout fails.
# New interesting inputs go to a scratch folder, not into the repo; run with
# MERGE=1 to merge them into the committed corpus. FUZZ_SEED picks
# libFuzzer's seed (default 0: a new one each run); tools/test.sh's fuzz
# suite fixes it, so that CI's verdict on a commit does not depend on the
# draw (a random 60 s run there once failed on an input no run before had
# reached). Run with the default to look for new inputs.
#
# Usage: tools/fuzz.sh [SECONDS] [TARGET...]
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_json fuzz_parser fuzz_plan fuzz_run)

bazel build --config=fuzz $(printf '//tests/fuzz:%s ' "${targets[@]}") || exit 1
# Not the bazel-bin symlink: another Bazel output base may have moved it.
bin=$(bazel info --config=fuzz bazel-bin)
status=0
for t in "${targets[@]}"; do
  corpus=tests/fuzz/corpus/$t
  mkdir -p "$corpus"
  scratch=$(mktemp -d)
  seeds=(graphs tests/golden)
  log=$(mktemp)
  echo "fuzz: $t for ${secs}s" >&2
  if ! "$bin/tests/fuzz/$t" -seed="${FUZZ_SEED:-0}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -dict=tests/fuzz/yaml.dict "$scratch" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    echo "fuzz: $t FAILED" >&2
    tail -60 "$log" >&2
    status=1
  fi
  grep -E '^(#[0-9]+\s+DONE|Done [0-9]+ runs)' "$log" | tail -2 >&2
  if [ "${MERGE:-0}" = 1 ]; then
    "$bin/tests/fuzz/$t" -merge=1 "$corpus" "$scratch" >/dev/null 2>&1
  fi
  rm -rf "$scratch" "$log"
done
exit $status
