#!/usr/bin/env bash
# `cmake --install` of this build, then an out-of-tree project (tests/build/consumer) built
# against the installed tree: find_package(etc), etc_add_module with dependency tracking, and a C
# program linked to libetcrt. Usage: install_test.sh BUILD_DIR (run from the repository root)
source "$(dirname "$0")/../harness.sh"
build=$(realpath "$1")
src=$(pwd)

prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; echo "FAIL: install"; exit 1; }
for f in bin/etcc bin/etc-run bin/etc-nvrtc lib/libetcrt.so include/etc/runtime.h include/etc/runtime.hpp include/etc/abi.h \
         include/etc/device/sched.cuh lib/cmake/etc/etcConfig.cmake lib/cmake/etc/etcConfigVersion.cmake \
         lib/cmake/etc/etcTargets.cmake lib/cmake/etc/EtcAddModule.cmake lib/python/etc/__init__.py; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# The library exports the C API only.
if nm -D --defined-only "$prefix/lib/libetcrt.so" | awk '{print $3}' | grep -v '^etc_' | grep -qv '^$'; then
  fail "libetcrt.so exports more than etc_*: $(nm -D --defined-only "$prefix/lib/libetcrt.so" | awk '{print $3}' | grep -v '^etc_' | head -5 | tr '\n' ' ')"
fi
"$prefix/bin/etcc" --version >/dev/null || fail "the installed etcc does not run"
# The installed etcc compiles in the installed worker beside it.
"$prefix/bin/etcc" "$src/samples/two_stage_sum.etir" -arch sm_80 -v -o "$tmp/tss.fatbin" 2>"$tmp/etcc.err" ||
  { sed 's/^/  | /' "$tmp/etcc.err" | tail -5; fail "the installed etcc does not compile"; }
grep -qF "(worker $prefix/bin/etc-nvrtc)" "$tmp/etcc.err" ||
  fail "the installed etcc did not compile in the installed worker: $(grep NVRTC "$tmp/etcc.err")"
find "$prefix/lib/python" -name __pycache__ | grep -q . && fail "__pycache__ was installed"
# The installed binding finds the installed library by itself (no ETC_RUNTIME_LIB).
env -u ETC_RUNTIME_LIB PYTHONPATH="$prefix/lib/python" python3 -c 'import etc; assert etc._capi.lib._name.endswith("lib/python/etc/../../libetcrt.so")' ||
  fail "the installed Python binding does not load the installed libetcrt.so"

cp -r "$src/tests/build/consumer" "$tmp/consumer"
proj="$tmp/consumer"
# ETC_CONSUMER_LINK_FLAGS: what a program linked to this build's libetcrt.so needs (the
# sanitizer flags of a sanitized build, tests/CMakeLists.txt).
cmake -S "$proj" -B "$tmp/cb" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXE_LINKER_FLAGS="${ETC_CONSUMER_LINK_FLAGS:-}" \
  >"$tmp/configure.log" 2>&1 ||
  { sed 's/^/  | /' "$tmp/configure.log"; fail "configure"; }
build_consumer() { cmake --build "$tmp/cb" >"$tmp/build.log" 2>&1 || { sed 's/^/  | /' "$tmp/build.log"; fail "build ($1)"; }; }
fatbin="$tmp/cb/fatbins/model.fatbin"

build_consumer first
"$tmp/cb/describe" >"$tmp/describe.out" 2>&1 || fail "describe: $(cat "$tmp/describe.out")"
grep -q "module consumer_sum, targets sm_80, sym N in \[1, 4096\]" "$tmp/describe.out" ||
  fail "describe printed: $(cat "$tmp/describe.out")"

sleep 1.1; touch "$tmp/built"  # newer than the fatbin
build_consumer "nothing changed"
[ "$fatbin" -nt "$tmp/built" ] && fail "the fatbin was rebuilt although nothing changed"

# Editing the included file (found through INCLUDE_DIRS) rebuilds the fatbin with the new range.
sleep 1.1; echo 'sym N in [1, 8192]' >"$proj/shapes/sizes.etir"
build_consumer "include edited"
[ "$fatbin" -nt "$tmp/built" ] || fail "editing the included file did not rebuild the fatbin"
"$tmp/cb/describe" | grep -q "sym N in \[1, 8192\]" || fail "the rebuilt fatbin does not have the new range"

finish "install and out-of-tree find_package(etc)"
