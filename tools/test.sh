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
echo "== tests under ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"

# The libFuzzer target needs clang; where clang is present, build it and fuzz for a short while
# from the committed corpus (the corpus itself already replayed in both test runs above).
if command -v clang++ >/dev/null 2>&1; then
  echo "== libFuzzer target (clang) =="
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DETC_FUZZ=ON >/dev/null
  cmake --build build-fuzz -j "$jobs" --target etc_fuzz_frontend
  work=$(mktemp -d)
  cp -r tests/fuzz/corpus "$work/corpus"
  (cd "$work" && "$OLDPWD/build-fuzz/tests/etc_fuzz_frontend" -seed=1 -max_total_time=30 -max_len=4096 -timeout=10 \
     -print_final_stats=1 corpus 2>&1 | tail -n 4)
  rm -rf "$work"
else
  echo "== libFuzzer target: skipped (no clang++ on this machine) =="
fi
