#!/usr/bin/env bash
# tools/setup.sh: installs what dagrun needs to build and test on a fresh
# Debian 12 machine (idempotent; only apt packages: Bazel is Debian's
# bazel-bootstrap, and the offline Bazel setup lives in the repo). The CUDA
# toolkit is expected at /usr/local/cuda; without it only the host backend
# builds are possible, and the script says so.
set -euo pipefail

packages=(
  bazel-bootstrap bazel-rules-java bazel-rules-proto bazel-platforms
  libglib2.0-dev libyaml-dev libpcre2-dev pkg-config
  graphviz python3 clang libclang-rt-14-dev time
  locales python3-jsonschema help2man clang-format
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A comma-decimal locale for the report writers' locale test
# (//tests/report): generated once, from Debian's locales package.
if ! locale -a 2>/dev/null | grep -qi '^de_DE\.utf-\?8$'; then
  echo "setup: generating the de_DE.UTF-8 locale" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" sed -i 's/^# *\(de_DE\.UTF-8 UTF-8\)/\1/' /etc/locale.gen
  grep -q '^de_DE\.UTF-8 UTF-8' /etc/locale.gen || echo 'de_DE.UTF-8 UTF-8' | "${sudo_cmd[@]}" tee -a /etc/locale.gen >/dev/null
  "${sudo_cmd[@]}" locale-gen >/dev/null
fi

if [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: warning: no CUDA toolkit at /usr/local/cuda; the build needs it" >&2
fi
echo "setup: ok" >&2
