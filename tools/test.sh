#!/usr/bin/env bash
# Builds etc and runs every test: once in a normal build, once under AddressSanitizer and
# UndefinedBehaviorSanitizer. GPU tests skip themselves where no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (RelWithDebInfo) =="
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
echo "== tests =="
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DETC_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
# Tests labelled no-asan (tests/CMakeLists.txt says why each) ran in the build above and add no
# code path here, only minutes.
echo "== tests under ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE no-asan

# The libFuzzer targets need clang; where clang is present, build them and fuzz each for a short
# while from its committed corpus (the corpora themselves already replayed in both test runs
# above). Long runs: tools/fuzz.sh.
if command -v clang++ >/dev/null 2>&1; then
  echo "== libFuzzer targets (clang) =="
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETC_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j "$jobs" --target etc_fuzz_frontend etc_fuzz_fatbin etc_fuzz_npy etc_fuzz_safetensors
  for target in frontend fatbin npy safetensors; do
    if ! tools/fuzz.sh "$target" 15 >"build-fuzz/fuzz-$target.log" 2>&1; then
      tail -n 60 "build-fuzz/fuzz-$target.log"
      echo "fuzz $target: FAILED; the input is in build-fuzz/findings/$target/" >&2
      exit 1
    fi
    grep -E "^(fuzz |#[0-9]+[[:space:]]+DONE|Done )" "build-fuzz/fuzz-$target.log"
  done
else
  echo "== libFuzzer targets: skipped (no clang++ on this machine) =="
fi
