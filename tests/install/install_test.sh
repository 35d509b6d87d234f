#!/usr/bin/env bash
# install_test.sh: what tools/install.sh installs besides the library (the
# library itself: tests/api/pkgconfig_test.sh). Installs into a temporary
# prefix and checks: bin/dagrun runs; the man page is what tools/gen_man.sh
# makes from that binary now (the date line aside) and names every option of
# --help; the bash completion offers every option of --help and the values
# of a|b options; every environment variable the sources read (g_getenv
# outside tests/ and bench/) is documented in docs/environment.md and in the
# man page. Prints TAP; exits non-zero on any failure. Not a Bazel test (it
# runs Bazel and git); tools/test.sh install calls it.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
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
echo "1..8"
check "install" "$root/tools/install.sh" "$prefix"
dagrun=$prefix/bin/dagrun
want=$(sed -n 's/^#define DAGRUN_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
  "$root/include/dagrun/version.h" | paste -sd. -)
check "bin/dagrun --version" grep -qx "dagrun $want" <("$dagrun" --version 2>&1)

# The options of --help, as --name.
"$dagrun" --help 2>&1 | sed -n 's/^ *\(-[a-zA-Z], *\)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p' >"$tmp/options"
man=$prefix/share/man/man1/dagrun.1
same_page() {
  "$root/tools/gen_man.sh" "$dagrun" >"$tmp/fresh.1" || return 1
  diff <(grep -v '^\.TH ' "$man") <(grep -v '^\.TH ' "$tmp/fresh.1")
}
check "man page matches the binary (docs/dagrun.1 = tools/gen_man.sh)" same_page
every_option_in_man() {
  [ -s "$tmp/options" ] || { echo "no options in --help"; return 1; }
  local o miss=0
  # groff escapes '-' as '\-'.
  while read -r o; do
    grep -qF -- "${o//-/\\-}" "$man" || { echo "man page lacks $o"; miss=1; }
  done <"$tmp/options"
  return $miss
}
check "man page names every option of --help ($(wc -l <"$tmp/options") options)" every_option_in_man

completion=$prefix/share/bash-completion/completions/dagrun
complete_words() { # LINE...: the completions bash would offer at its end
  bash -c 'source "$1"; shift; COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    read -ra COMP_WORDS <<<"$COMP_LINE"; [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _dagrun; printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$@"
}
completes_every_option() {
  complete_words "$dagrun" -- | sed 's/=$//' | sort >"$tmp/offered"
  sort "$tmp/options" | diff - "$tmp/offered"
}
check "completion offers every option of --help" completes_every_option
completes_values() {
  [ "$(complete_words "$dagrun" --mode= | paste -sd' ')" = "auto streams graph" ] &&
    [ "$(complete_words "$dagrun" --backend=h)" = "host" ]
}
check "completion offers the values of --mode= and --backend=" completes_values

# Environment variables read by the sources.
(cd "$root" && git ls-files '*.c' '*.h' '*.cu' '*.cuh' | grep -v -E '^(tests|bench)/' |
  xargs grep -ho 'getenv("[A-Za-z_0-9]*")' | sed 's/.*("\(.*\)")/\1/' | sort -u) >"$tmp/env"
documented() { # FILE: every variable of $tmp/env appears in FILE
  [ -s "$tmp/env" ] || { echo "no getenv found in the sources"; return 1; }
  local v miss=0
  while read -r v; do grep -qF -- "$v" "$1" || { echo "$1 lacks $v"; miss=1; }; done <"$tmp/env"
  return $miss
}
check "docs/environment.md documents every variable read ($(paste -sd' ' "$tmp/env"))" \
  documented "$root/docs/environment.md"
check "the man page documents every variable read" documented "$man"
[ "$cases" -eq 8 ] || { echo "# planned 8 cases, ran $cases"; failed=$((failed + 1)); }
[ $failed -eq 0 ]
