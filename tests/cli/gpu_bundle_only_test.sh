#!/usr/bin/env bash
# tools/gpu_bundle.sh ONLY=REGEX: a partial bundle holds the tools (etc-run, the runtime library,
# the watchdog tool) and only the fatbins and device-op tests whose names match, and its archive
# lists them; a regex bash cannot read is refused before anything is touched. The script runs
# in a copy of the tree (it works in its own repository's gpu-bundle/), with this build's etcc.
# Usage: gpu_bundle_only_test.sh BUILD_DIR   (from the repository root)
source "$(dirname "$0")/../harness.sh"
build=$(cd "$1" && pwd)
root=$tmp/tree
mkdir -p "$root/tests/gpu"
cp -r tools samples "$root/"
cp -r tests/gpu/hang tests/gpu/resources "$root/tests/gpu/"

ONLY='^two_stage_sum_static\.fatbin$' JOBS=2 bash "$root/tools/gpu_bundle.sh" "$build" >"$tmp/out" 2>&1 ||
  fail "the partial bundle failed: $(tail -5 "$tmp/out")"
got=""
for f in "$root"/gpu-bundle/*; do
  case $f in *.etir | *.txt) ;; *) got+="$(basename "$f") " ;; esac
done
[ "$got" = "etc-run etc-watchdog-recovery libetcrt.so two_stage_sum_static.fatbin " ] ||
  fail "the partial bundle holds: $got"
listed=$(tar tJf "$root/gpu-bundle.tar.xz" 2>/dev/null | grep -c '\.fatbin$')
[ "$listed" = 1 ] || fail "the archive lists $listed fatbins, not 1"

touch "$root/gpu-bundle/kept"
out=$(ONLY='(' bash "$root/tools/gpu_bundle.sh" "$build" 2>&1)
rc=$?
[ "$rc" = 2 ] || fail "ONLY='(': exit $rc, expected 2"
[[ $out == *"ONLY is not an extended regex: '('"* ]] || fail "ONLY='(' said: $out"
[ -f "$root/gpu-bundle/kept" ] || fail "ONLY='(' touched the bundle"
finish gpu_bundle_only_test
