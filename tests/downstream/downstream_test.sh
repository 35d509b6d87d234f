#!/usr/bin/env bash
# downstream_test.sh: dagrun used from another Bazel workspace. Builds
# tests/downstream (a consumer workspace: local_repository @dagrun plus
# dagrun_dependencies(), nothing else) and its //:runner, which is dagrun's
# examples/runner.c including <dagrun/dagrun.h> and linked against
# @dagrun//lib:dagrun, then runs it on the host backend and checks its
# output. Prints TAP; exits non-zero on any failure. Not a Bazel test (it
# runs Bazel); tools/test.sh downstream calls it. The consumer's Bazel
# server is shut down at the end (it is a second workspace, so a second
# server). Environment: BAZEL (default bazel).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bazel=${BAZEL:-bazel}
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
grep_log() { # NAME PATTERN: the last command's output must match
  if grep -q -- "$2" "$tmp/log"; then ok "$1"; else not_ok "$1: no '$2' in the output"; fi
}
echo "1..4"
cd "$here" || exit 1
# --symlink_prefix=/ : no bazel-* links inside dagrun's tree.
check "consumer workspace builds //:runner against @dagrun//lib:dagrun" \
  "$bazel" build --symlink_prefix=/ //:runner
bin=$("$bazel" info bazel-bin 2>/dev/null)
check "run runner" "$bin/runner" host
grep_log "runner's first run binds nothing" "^run 1 on host: alpha 1.0, y\[1\] = 1.0, change applied: none$"
grep_log "runner's changed alpha takes effect" "^run 3 on host: alpha 3.0, y\[1\] = 3.0, change applied: rebound$"
"$bazel" shutdown >/dev/null 2>&1
[ "$cases" -eq 4 ] || { echo "# planned 4 cases, ran $cases"; failed=$((failed + 1)); }
[ $failed -eq 0 ]
