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
