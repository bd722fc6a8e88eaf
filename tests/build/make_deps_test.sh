#!/usr/bin/env bash
# samples/Makefile and etcc -MD: a Makefile project rebuilds exactly the fatbins whose inputs
# changed, including files they include, and survives a deleted include (-MP).
# Usage: make_deps_test.sh ETCC   (run from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$(realpath "$1")

# Three tiny modules: a includes lib/common.etir, b includes sub/shapes.etir which includes
# ../lib/common.etir (paths are relative to the including file), c includes nothing. Included
# files live in subdirectories: the Makefile compiles every top-level .etir file.
mkdir -p "$tmp/src/sub" "$tmp/src/lib"
cp samples/Makefile "$tmp/src/Makefile"
body='tensor a : f32[N] input
tensor out : f32[1] output
task @sum grid [1] (i) {
  reduce_sum(a[0 : N]) -> out[0]
}
graph @main schedule static {
  run @sum
}'
echo 'sym N in [1, 4096]' >"$tmp/src/lib/common.etir"
printf 'include "../lib/common.etir"\n' >"$tmp/src/sub/shapes.etir"
printf 'module @a\ninclude "lib/common.etir"\n%s\n' "$body" >"$tmp/src/a.etir"
printf 'module @b\ninclude "sub/shapes.etir"\n%s\n' "$body" >"$tmp/src/b.etir"
printf 'module @c\nsym N in [1, 4096]\n%s\n' "$body" >"$tmp/src/c.etir"

build() {  # runs make, writes the rebuilt fatbins' names (sorted) to $tmp/rebuilt
  make -f "$tmp/src/Makefile" O="$tmp/out" ETCC="$etcc" ETCCFLAGS=--arch=sm_80 >"$tmp/make.log" 2>&1 ||
    { fail "make failed"; sed 's/^/  | /' "$tmp/make.log"; }
  grep -o '[a-z]*\.fatbin$' "$tmp/make.log" | sort | tr '\n' ' ' >"$tmp/rebuilt"
}
expect_rebuilt() {  # STEP "a.fatbin b.fatbin "
  if [ "$(cat "$tmp/rebuilt")" != "$2" ]; then fail "$1: rebuilt '$(cat "$tmp/rebuilt")', expected '$2'"; fi
}
# make compares modification times; keep every touch clearly newer than the last build.
later() { sleep 1.1; }

build; expect_rebuilt "first build" "a.fatbin b.fatbin c.fatbin "
for n in a b c; do [ -s "$tmp/out/$n.fatbin" ] || fail "no $n.fatbin"; done
grep -q "sub/shapes.etir" "$tmp/out/b.d" && grep -q "common.etir" "$tmp/out/b.d" ||
  fail "b.d lacks an included file: $(cat "$tmp/out/b.d")"
grep -q "^$tmp/out/a.fatbin:" "$tmp/out/a.d" || fail "a.d: the target is not the fatbin: $(head -1 "$tmp/out/a.d")"
grep -q "^$tmp/src/lib/common.etir:$" "$tmp/out/a.d" || fail "a.d: no phony rule for lib/common.etir (-MP)"

build; expect_rebuilt "nothing changed" ""
later; touch "$tmp/src/lib/common.etir"; build; expect_rebuilt "touch lib/common.etir" "a.fatbin b.fatbin "
later; touch "$tmp/src/sub/shapes.etir"; build; expect_rebuilt "touch sub/shapes.etir" "b.fatbin "
later; touch "$tmp/src/c.etir"; build; expect_rebuilt "touch c.etir" "c.fatbin "

# An include dropped and its file deleted: the phony rule keeps make from failing with
# "No rule to make target", and b rebuilds once.
later
printf 'module @b\nsym N in [1, 4096]\n%s\n' "$body" >"$tmp/src/b.etir"
rm "$tmp/src/sub/shapes.etir"
build; expect_rebuilt "include removed" "b.fatbin "
grep -q "shapes.etir" "$tmp/out/b.d" && fail "b.d still lists the deleted include"

# A compile error leaves neither a fatbin nor a .d file, and make fails.
later
echo "garbage" >>"$tmp/src/c.etir"
rm -f "$tmp/out/c.fatbin" "$tmp/out/c.d"
if make -f "$tmp/src/Makefile" O="$tmp/out" ETCC="$etcc" ETCCFLAGS=--arch=sm_80 >"$tmp/make.log" 2>&1; then
  fail "make succeeded on a broken module"
fi
[ -e "$tmp/out/c.fatbin" ] && fail "a failed compile left c.fatbin"
[ -e "$tmp/out/c.d" ] && fail "a failed compile left c.d"
ls "$tmp/out" | grep -q tmp && fail "a temporary was left: $(ls "$tmp/out")"

finish "make dependency tracking"
