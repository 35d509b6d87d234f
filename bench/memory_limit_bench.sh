#!/usr/bin/env bash
# memory_limit_bench.sh: the memory budget on the device: each case run
# under several memory limits (--memory-limit=), from the serial peak to
# the unconstrained certified bound (the points of --plan --memory-curve),
# with the makespan and the measured peak side by side. Runs from the
# repository root with a prebuilt dist/ (tools/build_dist.sh), or from
# dist/ itself; needs python3, no Bazel.
#
# For each case and mode (streams, graph) and each limit it runs
#   dagrun --backend=cuda --format=json --mode=MODE --iterations=N
#          --warmup=N --memory-limit=LIMIT CASE.yaml
# and prints a markdown row: limit, ordering edges added, width and
# estimated critical path (the plan's), certified bound, measured peak
# (memory.peak_measured_bytes: the pool's high-water mark eagerly, the
# graph allocator's in graph mode, plus whole-run bytes), median makespan.
# A run that fails prints its exit status in the row and the sweep goes on.
#
# Usage: bash bench/memory_limit_bench.sh
# Environment:
#   DIST=dist                        where dagrun is (. when run from dist/)
#   ITERATIONS=20 WARMUP=3
#   CASES="decoder_scratch scratch"  graphs/CASE.yaml (or bench/pipelines/)
#   POINTS=5                         limits per case (--memory-curve's)
#   BACKEND=cuda                     host: try the script on the CPU
set -u
cd "$(dirname "$0")/.." || exit 1
DIST=${DIST:-dist}
[ -x "$DIST/dagrun" ] || DIST=.
DAGRUN=$DIST/dagrun
ITERATIONS=${ITERATIONS:-20}
WARMUP=${WARMUP:-3}
CASES=${CASES:-decoder_scratch scratch}
BACKEND=${BACKEND:-cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

find_case() {
  for d in graphs bench/pipelines "$DIST/graphs" "$DIST/bench/pipelines"; do
    [ -f "$d/$1.yaml" ] && { echo "$d/$1.yaml"; return; }
  done
}

echo "# memory limits: $(date -u +%FT%TZ), $("$DAGRUN" --version 2>&1 | head -n 1)"
echo
echo "| case | mode | limit | edges added | width | est. path us | bound | measured peak | makespan us |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in $CASES; do
  f=$(find_case "$c")
  if [ -z "$f" ]; then echo "| $c | - | no such case | | | | | | |"; continue; fi
  # The limits: the first column of each --memory-curve line, in bytes.
  "$DAGRUN" --plan --format=json "$f" >"$tmp/plan.json" 2>/dev/null
  limits=$(python3 - "$tmp/plan.json" "${POINTS:-5}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
lo, hi, k = m["peak_serial_bytes"], m["peak_bound_bytes"], int(sys.argv[2])
pts = [hi] if hi <= lo else [lo + (hi - lo) * i // (k - 1) for i in range(k)]
print(" ".join(str(p) for p in sorted(set(pts))))
PY
)
  for mode in streams graph; do
    for lim in $limits; do
      "$DAGRUN" --plan --format=json --mode=$mode --memory-limit="$lim" "$f" >"$tmp/p.json" 2>/dev/null
      if timeout -k 5 120 "$DAGRUN" --backend="$BACKEND" --format=json --mode=$mode --iterations="$ITERATIONS" \
          --warmup="$WARMUP" --memory-limit="$lim" "$f" >"$tmp/r.json" 2>"$tmp/err"; then
        python3 - "$c" "$mode" "$lim" "$tmp/p.json" "$tmp/r.json" <<'PY'
import json, sys
c, mode, lim, pf, rf = sys.argv[1:6]
p, r = json.load(open(pf)), json.load(open(rf))
b = p["memory"].get("budget", {})
mib = lambda x: "null" if x is None else "%.2f MiB" % (x / 1048576)
m = r["memory"]
print("| %s | %s | %s | %d | %d | %.1f | %s | %s | %.1f |" % (
    c, mode, mib(int(lim)), len(b.get("added_edges", [])), p["width"], p["critical_path_us"],
    mib(m["peak_bound_bytes"]), mib(m["peak_measured_bytes"]), float(r["makespan_us"])))
PY
      else
        echo "| $c | $mode | $lim | | | | | exit $? | |"
      fi
    done
  done
done
