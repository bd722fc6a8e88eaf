#!/usr/bin/env bash
# Prepares gpu-bundle/ for tests/gpu/run.sh on a GPU machine that has no compiler toolchain
# for etc (no re2c/bison): etc-run (stripped), the device-op test binary, and every sample
# compiled to a fatbin by this build's etcc. Usage: tools/gpu_bundle.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
cmake --build "$build" -j2 --target etcc etc-run
rm -rf gpu-bundle && mkdir -p gpu-bundle
strip -o gpu-bundle/etc-run "$build/tools/etc-run"
for s in samples/*.etir; do
  "$build/etcc" "$s" -o "gpu-bundle/$(basename "${s%.etir}").fatbin"
done
# A fatbin without code for Hopper: etc-run must refuse it on an H100/H200 and list what it has.
"$build/etcc" samples/two_stage_sum.etir -arch sm_80 -o gpu-bundle/sm80_only.fatbin
if [ ! -x "$build/gpu/device_ops_test" ]; then tests/gpu/build_device_test.sh "$build/gpu/device_ops_test"; fi
cp "$build/gpu/device_ops_test" gpu-bundle/
du -sh gpu-bundle
