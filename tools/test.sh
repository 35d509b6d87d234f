#!/usr/bin/env bash
# tools/test.sh: runs every CPU test (Bazel, GPU-tagged tests excluded) and
# prints one closing line "N passed, N failed[, N skipped]" counted from the
# test cases' own results: the TAP lines GLib's GTest writes ("ok N /path",
# "not ok N /path", "# SKIP"), read from each test target's log. A target
# that failed without printing any case (a crash at start, a build error)
# counts as one failure. Exit status: 0 only when nothing failed.
#
# Usage: tools/test.sh [extra bazel flags, e.g. --config=asan]
set -uo pipefail
cd "$(dirname "$0")/.."

bazel_flags=("$@")
targets=$(bazel query 'tests(//...) except attr(tags, "gpu", tests(//...))' 2>/dev/null | sort)
if [ -z "$targets" ]; then
  echo "test: no test targets found" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

# shellcheck disable=SC2086
bazel test "${bazel_flags[@]}" $targets
bazel_rc=$?

testlogs=$(bazel info "${bazel_flags[@]}" bazel-testlogs 2>/dev/null)
passed=0 failed=0 skipped=0
for t in $targets; do
  rel=${t#//}
  rel=${rel/://}
  log="$testlogs/$rel/test.log"
  if [ ! -f "$log" ]; then
    echo "test: $t: no log (not built or not run)" >&2
    failed=$((failed + 1))
    continue
  fi
  p=$(grep -cE '^ok [0-9]+ ' "$log" | head -1)
  s=$(grep -cE '^ok [0-9]+ .*# ?SKIP' "$log" | head -1)
  f=$(grep -cE '^not ok [0-9]+ ' "$log" | head -1)
  p=$((p - s))
  if [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
    # No TAP line at all: judge the target by Bazel's own verdict.
    if grep -q 'failures="0"' "$testlogs/$rel/test.xml" 2>/dev/null && grep -q 'errors="0"' "$testlogs/$rel/test.xml" 2>/dev/null; then
      p=1
    else
      f=1
    fi
  fi
  printf 'test: %-50s %4d passed %3d failed %3d skipped\n' "$t" "$p" "$f" "$s" >&2
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
done

if [ $bazel_rc -ne 0 ] && [ $failed -eq 0 ]; then
  # Bazel failed (e.g. a crash after the last TAP line, a timeout): count it.
  echo "test: bazel test exited $bazel_rc" >&2
  failed=$((failed + 1))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
