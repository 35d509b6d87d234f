#!/usr/bin/env bash
# check_bench.sh: how fast and how small `dagrun --check` and
# `dagrun --plan --format=json` are on large generated pipelines, against
# libyaml's bare event parse of the same file (bench/yaml_bare.c).
#
# For each size it writes a pipeline with bench/gen_pipeline.py, runs each
# tool REPS times under /usr/bin/time, and prints a markdown table: median
# wall time, median peak RSS, bytes of peak RSS per node, and the ratio of
# the time to the bare parse. Targets (from the project brief): --check
# within 3x of the bare parse; peak memory under 512 bytes per node.
# A tool that fails is reported as such in the table; the script goes on.
#
# Usage (from the repository root):
#   bench/check_bench.sh
# Environment:
#   SIZES="100000 1000000"   node counts
#   SHAPES="layered" WIDTH=64   generator shapes (chain layered forkjoin
#                            random) and width
#   REPS=5                   runs per tool and size
#   DAGRUN=path YAML_BARE=path   use these binaries instead of building
#   OUTPUT_BASE=/root/.cache/bazel-bench   Bazel output base for the build
#   BENCH_TMP=dir            where the generated pipelines go (kept)
#   OUT=dir                  also write the table and raw numbers there
# Exit status: 0 when every tool ran and the targets held, 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 2

SIZES=${SIZES:-"100000 1000000"}
SHAPES=${SHAPES:-${SHAPE:-layered}}
WIDTH=${WIDTH:-64}
REPS=${REPS:-5}
OUTPUT_BASE=${OUTPUT_BASE:-/root/.cache/bazel-bench}
BENCH_TMP=${BENCH_TMP:-/tmp/dagrun-check-bench}
mkdir -p "$BENCH_TMP"

# ---- the binaries ----
if [ -z "${DAGRUN:-}" ] || [ -z "${YAML_BARE:-}" ]; then
  echo "building //bench:yaml_bare and //cli:dagrun (-c opt) ..." >&2
  bazel --output_base="$OUTPUT_BASE" build -c opt //bench:yaml_bare >&2 || exit 2
  if ! bazel --output_base="$OUTPUT_BASE" build -c opt //cli:dagrun >&2; then
    echo "warning: //cli:dagrun did not build; measuring the bare parse only" >&2
  fi
  bin=$(bazel --output_base="$OUTPUT_BASE" info -c opt bazel-bin 2>/dev/null)
  YAML_BARE=${YAML_BARE:-$bin/bench/yaml_bare}
  DAGRUN=${DAGRUN:-$bin/cli/dagrun}
fi
[ -x "$YAML_BARE" ] || { echo "no yaml_bare at $YAML_BARE" >&2; exit 2; }
have_dagrun=1
[ -x "$DAGRUN" ] || { have_dagrun=0; echo "warning: no dagrun at $DAGRUN" >&2; }
failed=$((1 - have_dagrun))

# ---- measuring ----
# measure OUTFILE CMD...: runs CMD REPS times; appends
# "wall_s maxrss_kb user_s sys_s rc"
# per run to OUTFILE. Uses GNU time, else Python's getrusage of children.
measure() {
  local out=$1; shift
  : >"$out"
  local _
  for _ in $(seq 1 "$REPS"); do
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -f '%e %M %U %S' -o "$out.t" "$@" >/dev/null 2>"$out.err"
      local rc=$?
      echo "$(tail -n 1 "$out.t") $rc" >>"$out"
    else
      python3 - "$out" "$@" <<'EOF'
import resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
with open(out + ".err", "w") as err:
    rc = subprocess.call(cmd, stdout=subprocess.DEVNULL, stderr=err)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "a") as f:
    f.write("%.2f %d %.2f %.2f %d\n" % (wall, ru.ru_maxrss, ru.ru_utime, ru.ru_stime, rc))
EOF
    fi
  done
}

# median COLUMN FILE: median of a column over the runs that exited 0
# (column 6 is user + sys).
median() {
  awk -v c="$1" '$5 == 0 { $6 = $3 + $4; print $c }' "$2" | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

table="$BENCH_TMP/table.md"
{
  echo "| pipeline | nodes | file MiB | tool | wall s | cpu s | peak RSS MiB | B/node | x bare (wall) | x bare (cpu) | target |"
  echo "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
} >"$table"
raw="$BENCH_TMP/raw.txt"
: >"$raw"

for SHAPE in $SHAPES; do
for n in $SIZES; do
  f="$BENCH_TMP/$SHAPE-$n-w$WIDTH.yaml"
  if [ ! -s "$f" ]; then
    python3 bench/gen_pipeline.py --nodes "$n" --width "$WIDTH" --shape "$SHAPE" --out "$f" || exit 2
  fi
  mib=$(awk -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.1f", b / 1048576 }')
  label="$SHAPE w$WIDTH"
  [ "$SHAPE" = chain ] && label="chain w1"
  bare_s=nan bare_cpu=nan
  tools=("yaml_bare")
  [ $have_dagrun = 1 ] && tools+=("dagrun --check" "dagrun --plan --format=json")
  for tool in "${tools[@]}"; do
    case $tool in
      yaml_bare) cmd=("$YAML_BARE" "$f") ;;
      "dagrun --check") cmd=("$DAGRUN" --check "$f") ;;
      *) cmd=("$DAGRUN" --plan --format=json "$f") ;;
    esac
    m="$BENCH_TMP/m.$n.${tool// /_}"
    measure "$m" "${cmd[@]}"
    sed "s|^|$n $tool: |" "$m" >>"$raw"
    ok_runs=$(awk '$5 == 0' "$m" | wc -l)
    if [ "$ok_runs" -eq 0 ]; then
      failed=1
      echo "| $label | $n | $mib | $tool | FAILED (exit $(awk 'NR==1{print $5}' "$m")) | | | | | |" >>"$table"
      sed 's/^/    /' "$m.err" | head -5 >&2
      continue
    fi
    s=$(median 1 "$m")
    kb=$(median 2 "$m")
    cpu=$(median 6 "$m")
    [ "$tool" = yaml_bare ] && bare_s=$s && bare_cpu=$cpu
    read -r rss_mib bpn ratio cratio < <(awk -v kb="$kb" -v n="$n" -v s="$s" -v b="$bare_s" -v c="$cpu" -v bc="$bare_cpu" \
      'BEGIN { printf "%.1f %.0f %s %s\n", kb / 1024, kb * 1024 / n, (b > 0 ? sprintf("%.2f", s / b) : "nan"), (bc > 0 ? sprintf("%.2f", c / bc) : "nan") }')
    target=""
    if [ "$tool" = "dagrun --check" ]; then
      # Judged on CPU time (user + sys), which other load on a shared
      # machine disturbs less than wall time.
      t_ok=$(awk -v r="$cratio" -v p="$bpn" 'BEGIN { print (r <= 3.0 ? "time ok" : "time OVER") ", " (p < 512 ? "mem ok" : "mem OVER") }')
      target="<=3x, <512 B/node: $t_ok"
      case $t_ok in *OVER*) failed=1 ;; esac
    fi
    echo "| $label | $n | $mib | $tool | $s | $cpu | $rss_mib | $bpn | $ratio | $cratio | $target |" >>"$table"
  done
done
done

cat "$table"
echo
echo "(commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo ', dirty tree'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "(median of $REPS runs each; cpu = user + sys; peak RSS from /usr/bin/time %M; B/node = peak RSS / nodes; target judged on cpu; files in $BENCH_TMP)"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$table" "$OUT/check_bench.md"
  cp "$raw" "$OUT/check_bench_raw.txt"
fi
exit $failed
