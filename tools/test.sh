#!/usr/bin/env bash
# tools/test.sh: runs every CPU test and prints one closing line
# "N passed, N failed, N skipped" counted from the test cases' own results.
#
# Suites (all by default; name some to run only those):
#   plain   every CPU test target (GPU-tagged ones excluded)
#   asan    the same under AddressSanitizer + UndefinedBehaviorSanitizer,
#           leak checking on, IR invariants checked after every pass
#   tsan    the threaded host backend's tests under ThreadSanitizer
#   pkgconfig  the installed library used from outside Bazel: install into
#           a temporary prefix, build examples/*.c with pkg-config, run them
#   install the rest of tools/install.sh: bin/dagrun, the man page (matches
#           the binary's --help), bash completion, every environment
#           variable the sources read documented (docs/environment.md)
#   mpi     dagrun across processes under Open MPI's mpirun (tests/mpi/
#           mpi_test.sh): multi-rank pipelines with -np 2 and -np 4
#           (--oversubscribe, as root) under --verify and --delay-seed,
#           collectives against their definitions, a killed rank
#   downstream  dagrun from another Bazel workspace (tests/downstream):
#           build examples/runner.c there against @dagrun//lib:dagrun, run it
#   format  clang-format --dry-run -Werror over the tracked C/CUDA sources:
#           one case, listing every file that needs formatting
#   fuzz    each libFuzzer target for FUZZ_SECONDS (default 60), seed
#           FUZZ_SEED (default 1: the same draw on every run); fuzz_run
#           also runs what loads on the host backend (tests/fuzz/fuzz_run.c)
#
# Cases are the TAP lines GLib's GTest (and the shell tests) write
# ("ok N /path", "not ok N /path", "# SKIP"), read from each target's log;
# a target that failed without printing any case (a crash at start, a
# timeout) counts as one failure, and so does a fuzz target that crashed.
# pkgconfig, install, mpi and downstream count their scripts' TAP cases the same way.
# Exit status: 0 only when nothing failed.
#
# Usage: tools/test.sh [plain] [asan] [tsan] [pkgconfig] [install] [mpi] [downstream] [format] [fuzz]
set -uo pipefail
cd "$(dirname "$0")/.."

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(plain asan tsan pkgconfig install mpi downstream format fuzz)
passed=0 failed=0 skipped=0

# Every test target but the GPU-tagged ones. Not //...: that walks the
# bazel-<directory> convenience link, which .bazelignore names only for a
# checkout called main (a worktree's is bazel-<branch>), so the top-level
# directories with a BUILD file are listed instead, symlinks and
# .bazelignore'd ones left out.
all_cpu_tests() {
  local d u="//:all"
  for d in */; do
    d=${d%/}
    [ ! -L "$d" ] && ! grep -qx "$d" .bazelignore 2>/dev/null || continue
    [ -n "$(find "$d" -name BUILD -print -quit)" ] && u="$u + //$d/..."
  done
  bazel query "tests($u) except attr(tags, \"gpu\", tests($u))" 2>/dev/null | sort
}

# run_bazel_suite NAME TARGETS FLAGS...: bazel test, then count TAP cases.
run_bazel_suite() {
  local name=$1 targets=$2
  shift 2
  local flags=("$@")
  if [ -z "$targets" ]; then
    echo "test[$name]: no test targets found" >&2
    failed=$((failed + 1))
    return
  fi
  echo "test[$name]: bazel test ${flags[*]}" >&2
  # shellcheck disable=SC2086
  bazel test "${flags[@]}" $targets >&2
  local bazel_rc=$?
  local testlogs
  testlogs=$(bazel info "${flags[@]}" bazel-testlogs 2>/dev/null)
  local sp=0 sf=0 ss=0 t
  for t in $targets; do
    local rel=${t#//}
    rel=${rel/://}
    local log="$testlogs/$rel/test.log" xml="$testlogs/$rel/test.xml"
    local p=0 s=0 f=0
    if [ -f "$log" ]; then
      p=$(grep -cE '^ok [0-9]+ ' "$log")
      s=$(grep -cE '^ok [0-9]+ .*# ?SKIP' "$log")
      f=$(grep -cE '^not ok [0-9]+ ' "$log")
      p=$((p - s))
    fi
    # A crash or timeout after the last case, or no case at all: Bazel's
    # verdict in test.xml decides, as one more failure.
    if [ ! -f "$xml" ] || ! grep -q 'failures="0"' "$xml" || ! grep -q 'errors="0"' "$xml"; then
      [ "$f" -gt 0 ] || f=1
    fi
    printf 'test[%s]: %-45s %4d passed %3d failed %3d skipped\n' "$name" "$t" "$p" "$f" "$s" >&2
    sp=$((sp + p)) sf=$((sf + f)) ss=$((ss + s))
  done
  if [ $bazel_rc -ne 0 ] && [ $sf -eq 0 ]; then
    echo "test[$name]: bazel test exited $bazel_rc" >&2
    sf=1
  fi
  passed=$((passed + sp)) failed=$((failed + sf)) skipped=$((skipped + ss))
}

# run_tap_script NAME SCRIPT: a shell test that prints TAP; its cases
# count, and a non-zero exit without a failed case is one failure.
run_tap_script() {
  local name=$1 script=$2 log rc p f
  log=$(mktemp)
  bash "$script" >"$log" 2>&1
  rc=$?
  p=$(grep -cE '^ok [0-9]+ ' "$log")
  f=$(grep -cE '^not ok [0-9]+ ' "$log")
  if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  [ "$f" -eq 0 ] || cat "$log" >&2
  printf 'test[%s]: %-45s %4d passed %3d failed\n' "$name" "$script" "$p" "$f" >&2
  passed=$((passed + p)) failed=$((failed + f))
  rm -f "$log"
}

# run_format: clang-format --dry-run -Werror (the repository's
# .clang-format) over every tracked C and CUDA source; one case, failed
# when any file would change, naming each such file.
run_format() {
  local cf=${CLANG_FORMAT:-clang-format} bad=() f
  local -a files
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh')
  for f in "${files[@]}"; do
    "$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#files[@]} -eq 0 ]; then
    echo "test[format]: no tracked C/CUDA sources found" >&2
    failed=$((failed + 1))
  elif [ ${#bad[@]} -eq 0 ]; then
    printf 'test[format]: %d files formatted\n' "${#files[@]}" >&2
    passed=$((passed + 1))
  else
    printf 'test[format]: %d of %d files need clang-format -i:\n' "${#bad[@]}" "${#files[@]}" >&2
    printf '  %s\n' "${bad[@]}" >&2
    failed=$((failed + 1))
  fi
}

for suite in "${suites[@]}"; do
  case $suite in
    plain) run_bazel_suite plain "$(all_cpu_tests)" ;;
    asan) ASAN_OPTIONS=detect_leaks=1 run_bazel_suite asan "$(all_cpu_tests)" --config=asan --config=ubsan \
        --test_env=ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 --test_env=UBSAN_OPTIONS=print_stacktrace=1 ;;
    tsan) run_bazel_suite tsan "//tests/backends:backends //tests/fault:threads //tests/fault:batch" --config=tsan \
        --test_env=TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ;;
    pkgconfig) run_tap_script pkgconfig tests/api/pkgconfig_test.sh ;;
    downstream) run_tap_script downstream tests/downstream/downstream_test.sh ;;
    install) run_tap_script install tests/install/install_test.sh ;;
    mpi) run_tap_script mpi tests/mpi/mpi_test.sh ;;
    format) run_format ;;
    fuzz)
      for t in fuzz_json fuzz_parser fuzz_plan fuzz_run; do
        if FUZZ_SEED=${FUZZ_SEED:-1} bash tools/fuzz.sh "${FUZZ_SECONDS:-60}" "$t" >&2; then
          echo "test[fuzz]: $t passed" >&2
          passed=$((passed + 1))
        else
          echo "test[fuzz]: $t FAILED" >&2
          failed=$((failed + 1))
        fi
      done
      ;;
    *) echo "test: unknown suite '$suite'" >&2; failed=$((failed + 1)) ;;
  esac
done

echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
