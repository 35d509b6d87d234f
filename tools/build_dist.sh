#!/usr/bin/env bash
# build_dist.sh: builds dagrun and its GPU-tagged test binaries here (with
# Bazel, -c opt) and gathers them into dist/, the folder the device machine
# runs from (a fresh Ubuntu 24.04 with a GPU but no Bazel, GLib or libyaml).
#
# GLib, pcre2, libyaml and cudart are linked statically by third_party/*.BUILD,
# so the binaries should need only glibc-level libraries; this script checks
# that with ldd and prints a WARNING line for anything else, and reports the
# newest GLIBC symbol version each binary needs (Ubuntu 24.04 has 2.39).
#
# dist/ layout:
#   dist/dagrun                      the CLI
#   dist/tests/PKG/NAME              every cc_test tagged "gpu" under tests/
#                                    (GTest binaries; label //tests/PKG:NAME)
#   dist/graphs/ dist/bench/ dist/tests/gpu/ dist/tests/golden/   copies
#   dist/kernels/ dist/include/dagrun/   the kernel library's sources and
#                                    public headers, for bench/gpu_bench.sh's
#                                    transformer baseline (run from dist/)
#   dist/examples/libdagrun_example_hostfns.so   the shared library two
#                                    examples name (examples/hostfns.c)
#   dist/MANIFEST                    what is there, with sizes and the commit
# It is not installed anywhere: dist/ is ignored (.gitignore) and the
# lead carries it to the device.
#
# Usage (from anywhere in the repository):
#   tools/build_dist.sh
# Environment: OUTPUT_BASE (default /root/.cache/bazel-bench).
# Exit status: 0 when dist/ is complete (warnings allowed), 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
OUTPUT_BASE=${OUTPUT_BASE:-/root/.cache/bazel-bench}
BAZEL=(bazel --output_base="$OUTPUT_BASE")
dist=dist
status=0

# .gitignore lists /dist/ too; this covers older checkouts (and is silent in
# a worktree, whose .git is a file).
{ grep -qx '/dist/' .git/info/exclude || echo '/dist/' >>.git/info/exclude; } 2>/dev/null

# The CLI target: //:dagrun when the root BUILD defines it, else //cli:dagrun.
cli_target=//:dagrun
if ! "${BAZEL[@]}" query "$cli_target" >/dev/null 2>&1; then
  cli_target=//cli:dagrun
fi
# Every test tagged gpu under tests/ (not //...: it would walk the bazel-*
# convenience links, which this Bazel does not skip).
mapfile -t gpu_tests < <("${BAZEL[@]}" query --keep_going 'attr(tags, "\bgpu\b", tests(//tests/...))' 2>/dev/null)
echo "building $cli_target and ${#gpu_tests[@]} gpu test(s): ${gpu_tests[*]}"
if ! "${BAZEL[@]}" build -c opt "$cli_target" //bench:graph_update_bench //bench:params_pipeline_bench //examples:libdagrun_example_hostfns.so \
  "${gpu_tests[@]}"; then
  echo "ERROR: bazel build failed" >&2
  exit 1
fi
bin=$("${BAZEL[@]}" info -c opt bazel-bin 2>/dev/null)

rm -rf "$dist"
mkdir -p "$dist/tests"
# bazel-bin/cli/dagrun or bazel-bin/dagrun, following an alias if needed.
label_path() { # //pkg:name -> pkg/name
  local l=${1#//}
  local pkg=${l%%:*} name=${l#*:}
  if [ -n "$pkg" ]; then echo "$pkg/$name"; else echo "$name"; fi
}
src="$bin/$(label_path "$cli_target")"
[ -x "$src" ] || src="$bin/cli/dagrun"
if [ ! -x "$src" ]; then
  echo "ERROR: no dagrun binary at $src" >&2
  exit 1
fi
cp -L "$src" "$dist/dagrun"
for t in "${gpu_tests[@]}"; do
  p=$(label_path "$t")
  if [ -x "$bin/$p" ]; then
    mkdir -p "$dist/$(dirname "$p")"
    cp -L "$bin/$p" "$dist/$p"
  else
    echo "ERROR: no binary for $t at $bin/$p" >&2
    status=1
  fi
done
for d in graphs bench tests/gpu tests/golden; do
  if [ -d "$d" ]; then
    mkdir -p "$dist/$(dirname "$d")"
    cp -r "$d" "$dist/$d"
  fi
done
# bench/cuda/transformer.cu is built on the device with the kernel library's
# own sources (bench/gpu_bench.sh, -I.): carry them and the header they read.
mkdir -p "$dist/kernels" "$dist/include/dagrun"
cp kernels/*.cu kernels/*.cuh kernels/*.c kernels/*.h "$dist/kernels/"
cp include/dagrun/*.h "$dist/include/dagrun/"
cp -L "$bin/bench/graph_update_bench" "$dist/bench/graph_update_bench"
cp -L "$bin/bench/params_pipeline_bench" "$dist/bench/params_pipeline_bench"
# graphs/host_callbacks.yaml and graphs/gpu/user_kernel_twin.yaml name
# ../examples/libdagrun_example_hostfns.so (relative to themselves).
mkdir -p "$dist/examples"
cp -L "$bin/examples/libdagrun_example_hostfns.so" "$dist/examples/"
chmod -R u+w "$dist"
strip --strip-debug "$dist/dagrun" 2>/dev/null || true
find "$dist/tests" -type f -perm -u+x -not -name '*.sh' -not -name '*.py' -exec strip --strip-debug {} + 2>/dev/null || true

# ---- portability checks ----
allowed='^(linux-vdso\.so|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|ld-linux-x86-64\.so)'
# cudart_static is C++: libstdc++ and libgcc_s come with it. Every Ubuntu
# 24.04 has both (apt itself needs them), so they get a note, not a warning.
base_cxx='^(libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'
while IFS= read -r f; do
  file -b "$f" | grep -q '^ELF' || continue
  while read -r lib _; do
    lib=$(basename "$lib")
    if [[ $lib =~ $base_cxx ]]; then
      echo "note: $f needs $lib (C++ runtime of cudart_static; on every Ubuntu 24.04)"
    elif ! [[ $lib =~ $allowed ]]; then
      echo "WARNING: $f needs $lib (not a glibc-level library; the device may lack it)"
    fi
  done < <(ldd "$f" 2>/dev/null | awk 'NF { print $1 }')
  need=$(objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n 1)
  echo "$f: newest symbol version ${need:-none}"
  case $need in
    GLIBC_2.4[0-9]*|GLIBC_2.[5-9][0-9]*) echo "WARNING: $f needs $need; Ubuntu 24.04 has GLIBC_2.39" ;;
  esac
done < <(find "$dist" -type f -perm -u+x)

{
  echo "commit $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (dirty tree)')"
  echo "built $(date -u +%FT%TZ) on $(uname -sm), $(ldd --version | head -n 1)"
  (cd "$dist" && find . -type f -perm -u+x -not -name '*.sh' -not -name '*.py' | sort | xargs -r ls -l)
} >"$dist/MANIFEST"
size_kib=$(du -sk "$dist" | awk '{ print $1 }')
echo "dist/: $((size_kib / 1024)) MiB"
if [ "$size_kib" -gt $((50 * 1024)) ]; then
  echo "WARNING: dist/ is over 50 MiB"
fi
exit $status
