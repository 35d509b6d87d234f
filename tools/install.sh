#!/usr/bin/env bash
# install.sh PREFIX: builds dagrun with Bazel and installs the command and
# the C library for use outside Bazel:
#   PREFIX/bin/dagrun            the command line (-c opt is up to the
#                                caller's Bazel flags; this builds fastbuild)
#   PREFIX/share/man/man1/dagrun.1   its man page (docs/dagrun.1, made by
#                                tools/gen_man.sh from --help; tools/test.sh
#                                install checks it matches the binary)
#   PREFIX/share/bash-completion/completions/dagrun   bash completion
#                                (tools/completion/dagrun)
#   PREFIX/include/dagrun/{dagrun,version,types,kernel}.h
#   PREFIX/lib/libdagrun.a       every dagrun object (ir, parser, scheduler,
#                                kernels incl. the nvcc objects, backends,
#                                lib) in one archive; GLib and libyaml stay
#                                outside (pkg-config Requires)
#   PREFIX/lib/libdagrun.so      the same objects linked against the
#                                system's shared GLib and libyaml, with
#                                cudart linked in statically; it exports
#                                the public API only
#   PREFIX/lib/pkgconfig/dagrun.pc
#   PREFIX/lib/dagrun/libdagrun_mpi.so   the MPI plugin (built against the
#                                system's MPI), which bin/dagrun dlopens
#                                when mpirun starts it (docs/multi-gpu.md)
# Then: cc prog.c $(pkg-config --cflags --libs dagrun)  (PKG_CONFIG_PATH=
# PREFIX/lib/pkgconfig). Environment: BAZEL (default bazel),
# BAZEL_OUTPUT_BASE (a --output_base for the build), CC (default cc).
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 PREFIX" >&2
  exit 64
fi
prefix=$1
root=$(cd "$(dirname "$0")/.." && pwd)
bazel=${BAZEL:-bazel}
cc=${CC:-cc}
startup=()
[ -n "${BAZEL_OUTPUT_BASE:-}" ] && startup=(--output_base="$BAZEL_OUTPUT_BASE")

cd "$root"
# --symlink_prefix=/ : leave the workspace's bazel-* links alone.
"$bazel" "${startup[@]}" build --symlink_prefix=/ //cli:dagrun //lib:dagrun //lib:libdagrun.so \
  //backends:libdagrun_mpi.so >&2
bin=$("$bazel" "${startup[@]}" info bazel-bin 2>/dev/null)
execroot=$("$bazel" "${startup[@]}" info execution_root 2>/dev/null)

# The link of //lib:libdagrun.so names every object of the library and its
# dependencies, in link order: take the objects, leave the archives of
# GLib, libyaml and cudart (linked below, or by the user through pkg-config).
params=$(ls "$bin"/lib/libdagrun.so-*.params | head -n1)
objects=()
cudart=""
while IFS= read -r line; do
  case "$line" in
    *.o) objects+=("$execroot/$line") ;;
    *libcudart_static.a) cudart=$(readlink -f "$execroot/$line") ;;
  esac
done <"$params"
if [ ${#objects[@]} -lt 20 ]; then
  echo "install.sh: found only ${#objects[@]} objects in $params" >&2
  exit 70
fi
[ -n "$cudart" ] || cudart=/usr/local/cuda/lib64/libcudart_static.a

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Copy under unique names: several packages have an events.o.
i=0
for o in "${objects[@]}"; do
  i=$((i + 1))
  cp "$o" "$tmp/$(printf '%03d' $i)_$(basename "$o")"
done

mkdir -p "$prefix/include/dagrun" "$prefix/lib/pkgconfig" "$prefix/lib/dagrun" "$prefix/bin" \
  "$prefix/share/man/man1" "$prefix/share/bash-completion/completions"
install -m 0755 "$bin/cli/dagrun" "$prefix/bin/dagrun"
install -m 0755 "$bin/backends/libdagrun_mpi.so" "$prefix/lib/dagrun/libdagrun_mpi.so"
install -m 0644 docs/dagrun.1 "$prefix/share/man/man1/dagrun.1"
install -m 0644 tools/completion/dagrun "$prefix/share/bash-completion/completions/dagrun"
install -m 0644 include/dagrun/dagrun.h include/dagrun/version.h include/dagrun/types.h include/dagrun/kernel.h include/dagrun/hostfn.h \
  "$prefix/include/dagrun/"

rm -f "$prefix/lib/libdagrun.a"
ar rcs "$prefix/lib/libdagrun.a" "$tmp"/*.o

version=$(sed -n 's/^#define DAGRUN_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' include/dagrun/version.h |
  paste -sd. -)
soname=libdagrun.so.${version%%.*}
sys_libs=(-ldl -lrt -lpthread -lm -lstdc++)
# The shared object exports the public API (include/dagrun/dagrun.h) only.
# shellcheck disable=SC2046
"$cc" -shared -o "$prefix/lib/libdagrun.so.$version" -Wl,-soname,"$soname" -Wl,--version-script=lib/libdagrun.map \
  -Wl,--whole-archive "$prefix/lib/libdagrun.a" -Wl,--no-whole-archive \
  "$cudart" $(pkg-config --libs glib-2.0 yaml-0.1) "${sys_libs[@]}"
ln -sf "libdagrun.so.$version" "$prefix/lib/$soname"
ln -sf "$soname" "$prefix/lib/libdagrun.so"

abs_prefix=$(cd "$prefix" && pwd)
cat >"$prefix/lib/pkgconfig/dagrun.pc" <<PC
prefix=$abs_prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: dagrun
Description: Declarative task graphs of GPU work compiled onto CUDA streams
Version: $version
Requires: glib-2.0
Requires.private: yaml-0.1
Cflags: -I\${includedir}
Libs: -L\${libdir} -ldagrun
Libs.private: $cudart ${sys_libs[*]}
PC
echo "installed dagrun $version into $abs_prefix" >&2
