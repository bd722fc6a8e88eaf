#!/usr/bin/env bash
# Builds the device tile library test (tests/gpu/device_ops_test.cu) for Hopper (sm_90a) and
# Ampere (sm_80); run the binary on a GPU machine. Usage: tests/gpu/build_device_test.sh [out]
# NVCC_FLAGS adds flags, e.g. NVCC_FLAGS=-DETC_MM_LARGE_M_FM=0 to test a device knob's path;
# HOPPER_ONLY=1 builds for sm_90a alone (half the time: a knob's variant for the lent GPUs).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build/device_ops_test}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
mkdir -p "$(dirname "$out")"
archs=(-gencode arch=compute_90a,code=sm_90a)
[ -n "${HOPPER_ONLY:-}" ] || archs+=(-gencode arch=compute_80,code=sm_80)
"$nvcc" -std=c++17 -O3 -I "$root/runtime/include" "${archs[@]}" \
  -Xptxas -warn-spills -Werror all-warnings ${NVCC_FLAGS:-} \
  "$root/tests/gpu/device_ops_test.cu" -o "$out"
echo "built $out"
