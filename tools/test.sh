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

# With clang, the sanitized build is also the libFuzzer build (ETC_FUZZ: coverage instrumentation
# beside the sanitizers, and the fuzz targets): one build fewer than a separate one for fuzzing.
if command -v clang++ >/dev/null 2>&1; then
  echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer, clang, with the libFuzzer targets) =="
  CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DETC_SANITIZE=ON -DETC_FUZZ=ON >/dev/null
  fuzz=1
else
  echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer) =="
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DETC_SANITIZE=ON >/dev/null
  fuzz=0
fi
cmake --build build-asan -j "$jobs"
# Tests labelled no-asan (tests/CMakeLists.txt says why each) ran in the build above and add no
# code path here, only minutes.
echo "== tests under ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE no-asan

# Fuzz each libFuzzer target for a short while from its committed corpus (the corpora themselves
# already replayed in both test runs above). Long runs: tools/fuzz.sh.
if [ "$fuzz" = 1 ]; then
  echo "== libFuzzer targets =="
  for target in frontend fatbin npy safetensors; do
    if ! ETC_FUZZ_BUILD=build-asan tools/fuzz.sh "$target" 15 >"build-asan/fuzz-$target.log" 2>&1; then
      tail -n 60 "build-asan/fuzz-$target.log"
      echo "fuzz $target: FAILED; the input is in build-asan/findings/$target/" >&2
      exit 1
    fi
    grep -E "^(fuzz |#[0-9]+[[:space:]]+DONE|Done )" "build-asan/fuzz-$target.log"
  done
else
  echo "== libFuzzer targets: skipped (no clang++ on this machine) =="
fi
