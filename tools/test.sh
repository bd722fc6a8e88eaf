#!/usr/bin/env bash
# Builds etc under AddressSanitizer and UndefinedBehaviorSanitizer and runs every test there:
# parsing, verification, the passes, the reference interpreter, the CUDA emission, NVRTC for
# every sample and every default target, the fatbins' structure, the runtime's host logic, the
# command-line tools, the Python binding and the installed package. GPU tests skip themselves
# where no GPU is present.
#
# One build, at -O1 with line tables only: CI has 2 cores and should take under 20 minutes. A
# normal build beside it added six minutes of compiling and five of tests that ran no code path
# this one does not (its tests are these), and -O0 ran the interpreter tests up to twice as long
# as -O1 for a minute less of compiling. It is a unity build (CMake joins each target's sources
# eight to a file, so headers are parsed and templates instrumented once a group): 11 minutes of
# building became 8.5 (a fresh clone's CI: 1199 s in all, against 1397). ASan's checks as calls instead of inline code (GCC's
# --param=asan-instrumentation-with-call-threshold=0) saved another 1.5 minutes of building but
# cost the tests 2 (the interpreter's tests ran 1.5 times as long). Fuzzing is not part of this run (the committed corpora replay here as
# tests): tools/fuzz.sh says how to build the libFuzzer targets and fuzz one.
#
# Session 80: a fresh clone's run took 19.3 minutes (1160 s; tests 806 s: cli/etcc 301, the
# samples' compiles llama3_2_1b 167 s, llama_layer 122, qwen3 113, llama_layer_paged 101) with
# the megakernels' mma.sync fallback a call (ETC_MM_FALLBACK_OUTLINED) and session 79's reach
# masks, and 18.2 (1091 s; cli/etcc 274) once cli/etcc's task-level fatbin check used a small
# module; a third run of the same code on a slower machine took 22.6 (1353 s; build about 8
# minutes against 5.3, tests 873 s). Some machines of this pool run every test up to 1.4 times as
# long (session 79: the mlp sample's compile 66 to 71 s against 36), and there it is over
# (session 81: 20.4 minutes, then 26.2 on a slower machine, cli/etcc 279 and 394 s). What
# is left: NVRTC for the samples' sm_90a megakernels, cli/etcc's NVRTC checks (it prints its
# slowest runs), and the interpreter's checks of real-sized decode layers. Session 82: NVRTC and
# nvJitLink run in etc-nvrtc, the toolchain worker, which is built without the sanitizers, so
# no longer through ASan's allocator (a one-layer Llama's sm_80 cubin: 33 to 36 s of CPU against
# 51 to 53 s in the sanitized etcc, as fast as a Release etcc); a fresh clone's run then took
# 23.0 minutes (1379 s: build about 8.5 minutes, tests 871 s, cli/etcc 282 s, the one-layer
# Llama's compile 166 s) on a machine where a Release etcc took 28 to 36 s for that cubin
# (17.5 s on the fastest of the day); a second, of the session's last commit, 22.2 minutes (1332 s,
# tests 857 s). Session 83: 22.0 minutes (1321 s: build about 8 minutes, tests 831 s, cli/etcc 260 s
# after its megakernel-only shared-memory checks, the samples' compiles 520 s of CPU); the
# samples' compiles keep their unfused kernels (etcc --megakernel-only would take about 40% off
# each, but NVRTC would then never see the unfused task code of the decode models in CI).
# Session 84, on a faster machine: 8.6 and 8.0 minutes (518 s and 478 s: build about 3 minutes,
# tests 329 and 306 s, cli/etcc 104 and 93 s, the samples' compiles 161 and 154 s of CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (AddressSanitizer + UndefinedBehaviorSanitizer, -O1) =="
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DETC_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" >/dev/null
cmake --build build-asan -j "$jobs"
echo "== tests under ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
