#!/usr/bin/env bash
# render_bench.sh: how big the review pictures get and how long a browser
# and Graphviz take to draw them. Generates layered pipelines of 10, 1000
# and 100k nodes (bench/gen_pipeline.py, width 8), runs each once on the
# host backend with --timeline and --trace, and times headless Chromium
# rendering each SVG to a PNG screenshot (against an empty SVG, which
# measures the browser's start-up alone); then renders the DOT of
# tests/review/small.yaml and bench/pipelines/review1000.yaml (summary and
# full detail) with Graphviz. The PNGs stay in OUT_DIR to be looked at.
#
# Usage: [SIZES="10 1000 100000"] bench/render_bench.sh DAGRUN [OUT_DIR]
#   (bazel build //cli:dagrun; bench/render_bench.sh bazel-bin/cli/dagrun /tmp/render)
# Needs python3, chromium (apt-get install -y chromium) and graphviz.
set -euo pipefail
dagrun=$(realpath "$1")
out=${2:-$(mktemp -d)}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
# A private HOME so Chromium and fontconfig write their caches there.
export HOME=$out/home XDG_CACHE_HOME=$out/home/.cache
mkdir -p "$HOME"
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome)

# shot SVG PNG: seconds of wall time for a headless screenshot of SVG;
# the CPU seconds (user + sys of Chromium and every process it reaped,
# which a loaded machine does not inflate as it does wall time) go to
# $out/cpu_s.
shot() {
  local w h
  w=$(grep -o -m1 'width="[0-9]*"' "$1" | tr -dc 0-9)
  h=$(grep -o -m1 'height="[0-9]*"' "$1" | tr -dc 0-9)
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -o "$out/time.txt" -f '%U %S' "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="${w:-100},${h:-100}" --screenshot="$2" "file://$1" >/dev/null 2>&1
  t1=$(date +%s.%N)
  awk '{printf "%.2f\n", $1 + $2}' "$out/time.txt" >"$out/cpu_s"
  echo "$t1 - $t0" | bc
}

echo '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"/>' >"$out/empty.svg"
base=$(shot "$out/empty.svg" "$out/empty.png")
base_cpu=$(cat "$out/cpu_s")
printf '%-10s %12s %12s %10s %10s %12s %12s %12s\n' nodes svg_bytes trace_bytes run_s chrome_s over_empty_s \
  chrome_cpu_s cpu_over_empty
printf '%-10s %12s %12s %10s %10.2f %12s %12s %12s\n' empty 0 - - "$base" 0 "$base_cpu" 0
for n in ${SIZES:-10 1000 100000}; do
  y=$out/layered$n.yaml
  python3 "$here/gen_pipeline.py" --nodes $n --width 8 --shape layered --out "$y" --iterations 1 --warmup 0
  t0=$(date +%s.%N)
  "$dagrun" --backend=host --timeline="$out/timeline$n.svg" --trace="$out/trace$n.json" "$y" >/dev/null
  t1=$(date +%s.%N)
  s=$(shot "$out/timeline$n.svg" "$out/timeline$n.png")
  cpu=$(cat "$out/cpu_s")
  printf '%-10s %12s %12s %10.2f %10.2f %12.2f %12.2f %12.2f\n' $n "$(stat -c %s "$out/timeline$n.svg")" \
    "$(stat -c %s "$out/trace$n.json")" "$(echo "$t1 - $t0" | bc)" "$s" "$(echo "$s - $base" | bc)" "$cpu" \
    "$(echo "$cpu - $base_cpu" | bc)"
done

echo
printf '%-28s %10s %10s\n' dot dot_bytes dot_png_s
for spec in "small:$here/../tests/review/small.yaml:auto" "review1000:$here/pipelines/review1000.yaml:summary" \
  "review1000-full:$here/pipelines/review1000.yaml:full"; do
  IFS=: read -r name file detail <<<"$spec"
  "$dagrun" --backend=host --iterations=3 --warmup=1 --dot="$out/$name.dot" --dot-detail="$detail" \
    --timeline="$out/$name.svg" "$file" >/dev/null
  t0=$(date +%s.%N)
  dot -Tpng "$out/$name.dot" -o "$out/$name.png"
  t1=$(date +%s.%N)
  printf '%-28s %10s %10.2f\n' "$name ($detail)" "$(stat -c %s "$out/$name.dot")" "$(echo "$t1 - $t0" | bc)"
done
echo "PNGs in $out"
