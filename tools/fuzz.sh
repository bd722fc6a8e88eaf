#!/usr/bin/env bash
# Runs one libFuzzer target of build-fuzz (see tests/CMakeLists.txt) for SECONDS from a copy of
# its committed corpus, and prints libFuzzer's final statistics. A crash leaves its input in
# build-fuzz/findings/<target>/ and makes this script fail; commit that input to
# tests/fuzz/<target>/corpus/ as a regression test once fixed.
#   tools/fuzz.sh TARGET [SECONDS]      TARGET: frontend, pipeline, fatbin, npy or safetensors
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: tools/fuzz.sh frontend|pipeline|fatbin|npy|safetensors [SECONDS]}
seconds=${2:-600}
binary=build-fuzz/tests/etc_fuzz_$target
if [ ! -x "$binary" ]; then
  echo "fuzz: $binary is missing; build it: CC=clang CXX=clang++ cmake -S . -B build-fuzz -DETC_FUZZ=ON && cmake --build build-fuzz --target etc_fuzz_$target" >&2
  exit 1
fi
findings=build-fuzz/findings/$target
mkdir -p "$findings"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "tests/fuzz/$target/corpus" "$work/corpus"
echo "fuzz $target: ${seconds} s from $(ls "tests/fuzz/$target/corpus" | wc -l) corpus files"
# -timeout: an input that runs longer is reported as a hang. The pipeline's seed of the whole
# Llama-3.2-1B step takes about 15 s in this instrumented build on 2 busy cores, and at 10 s
# libFuzzer stopped on it while replaying the corpus, before any fuzzing; its one-byte mutants
# take other option sets (fuzz_pipeline.cpp: by the input's hash), and the opt-in set
# --reuse-temps --fold-attention --fold-attention-merge --unsplit-below 3 takes infer-events and
# eliminate-events 5 s in a Release build (0.4 s without those options), over 60 s here (session 80).
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$binary" -seed=1 -max_total_time="$seconds" -max_len=65536 -timeout=300 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$findings/" "$work/corpus" 2>&1 |
  grep -v -e "^#[0-9].*\\(NEW\\|REDUCE\\|pulse\\)" -e "^[[:space:]]*NEW_FUNC"
