#!/usr/bin/env bash
# pkgconfig_test.sh: the installed library as a user outside Bazel gets
# it. Installs into a temporary prefix (tools/install.sh), checks that each
# public header compiles on its own, builds examples/*.c with
# `cc $(pkg-config --cflags --libs dagrun)` (shared) and once against
# libdagrun.a (pkg-config --static), runs them on the host backend and
# checks their output. Prints TAP; exits non-zero on any failure.
# Not a Bazel test (it runs Bazel): CI calls it from the source root, e.g.
#   BAZEL_OUTPUT_BASE=/root/.cache/bazel-ci tests/api/pkgconfig_test.sh
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

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

echo "1..29"
check "install" "$root/tools/install.sh" "$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
check "pkg-config knows dagrun" pkg-config --exists dagrun
want=$(sed -n 's/^#define DAGRUN_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$root/include/dagrun/version.h" | paste -sd. -)
check "pkg-config version" test "$(pkg-config --modversion dagrun)" = "$want"
for h in dagrun.h version.h types.h kernel.h hostfn.h; do
  # shellcheck disable=SC2046
  check "header $h compiles alone" sh -c "echo '#include <dagrun/$h>' |
    $cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -x c - $(pkg-config --cflags dagrun)"
done
public_only() { # the shared object's exported functions are the public API
  local all other
  all=$(nm -D --defined-only "$prefix/lib/libdagrun.so" | awk '$2 == "T" {print $3}')
  echo "$all" | grep -qx dr_pipeline_new && echo "$all" | grep -qx dr_stream_plan_run || return 1
  other=$(echo "$all" | grep -v -E '^(dr_pipeline_.*|dr_stream_plan_.*|dr_run_report_.*|dr_runner_.*|dr_ranks_.*|dr_run_settings_init|dr_version|dagrun_version|dr_error_quark|dr_error_exit_code|dr_diagnostics_.*|dr_pass_names|dr_builtin_kernel|dr_builtin_kernel_rules|dr_kernel_cache_clean|dr_device_vars_select|dr_output_check|dr_backend_kind_from_name|dr_mode_from_name|dr_timing_mode_from_name|dr_dot_detail_from_name)$')
  [ -z "$other" ] || { echo "also exported: $other"; return 1; }
}
check "libdagrun.so exports the public API only" public_only
external_api() { # the external-memory and caller-stream functions are there
  local all f
  all=$(nm -D --defined-only "$prefix/lib/libdagrun.so" | awk '$2 == "T" {print $3}')
  for f in dr_runner_bind_buffer dr_runner_write_buffer dr_runner_read_buffer dr_runner_run_on_stream dr_pipeline_add_host_fn; do
    echo "$all" | grep -qx "$f" || { echo "not exported: $f"; return 1; }
  done
}
check "libdagrun.so exports bind/write/read_buffer, run_on_stream and add_host_fn" external_api
params_api() { # the run-time parameter functions are there
  local all f
  all=$(nm -D --defined-only "$prefix/lib/libdagrun.so" | awk '$2 == "T" {print $3}')
  for f in dr_pipeline_set_param dr_pipeline_n_params dr_pipeline_param_name dr_pipeline_param_value \
    dr_runner_set_param dr_runner_set_param_f64; do
    echo "$all" | grep -qx "$f" || { echo "not exported: $f"; return 1; }
  done
}
check "libdagrun.so exports the run-time parameter functions" params_api
for ex in pipelined custom_kernel runner embed; do
  # shellcheck disable=SC2046
  check "build examples/$ex.c" $cc -std=c11 -Wall -Wextra -Werror -o "$tmp/$ex" "$root/examples/$ex.c" \
    $(pkg-config --cflags --libs dagrun)
done
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
check "run pipelined (shared)" "$tmp/pipelined" 4 "$tmp/timeline.svg"
grep_log "pipelined plans 4 chunks onto several streams" "^plan: 17 nodes on [2-9] streams, width [4-9]"
grep_log "pipelined verifies" "verified: yes"
grep_log "pipelined reports the critical path" "^critical path [0-9.]* us through [0-9]* nodes (ending at report)"
check "pipelined writes an SVG timeline" grep -q "</svg>" "$tmp/timeline.svg"
check "run custom_kernel (shared)" "$tmp/custom_kernel" "$tmp/out.bin"
grep_log "custom_kernel checks its results" "custom kernel OK on the host backend"
check "run runner (shared)" "$tmp/runner" host
grep_log "runner's first run binds nothing" "^run 1 on host: alpha 1.0, y\[1\] = 1.0, change applied: none$"
grep_log "runner's changed alpha takes effect" "^run 3 on host: alpha 3.0, y\[1\] = 3.0, change applied: rebound$"
check "run embed (shared)" "$tmp/embed"
grep_log "embed computes into the program's own array" "^bound:   y\[1\] = 1.5, y\[1023\] = 1534.5, change applied: rebound$"
grep_log "embed's written input is what the next iteration reads" "^written: y\[1\] = 1.5, y\[1023\] = 3.0, change applied: none$"
# shellcheck disable=SC2046
check "static: pipelined against libdagrun.a" sh -c "$cc -std=c11 -o '$tmp/pipelined_static' '$root/examples/pipelined.c' \
  $(pkg-config --cflags dagrun) '$prefix/lib/libdagrun.a' $(pkg-config --static --libs dagrun | sed 's/-ldagrun//') &&
  ! ldd '$tmp/pipelined_static' | grep -q libdagrun && '$tmp/pipelined_static' 2"
[ "$cases" -eq 29 ] || { echo "# planned 29 cases, ran $cases"; failed=$((failed + 1)); }
[ $failed -eq 0 ]
