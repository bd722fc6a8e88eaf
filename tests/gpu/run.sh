#!/usr/bin/env bash
# Every GPU test and benchmark in one call, ending with a table. Runs from the repository root
# on a machine with an NVIDIA GPU, using what tools/gpu_bundle.sh put in gpu-bundle/ (built on a
# CPU machine: etc-run, the device-op test, the samples' fatbins). Without a GPU it says so and
# exits 0 (skipped). Full logs go to $OUT (or gpu-out/) when set.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=gpu-bundle
out="${OUT:-gpu-out}"
mkdir -p "$out"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU here"; exit 0
fi
if [ ! -x "$B/etc-run" ]; then echo "FAIL: $B/etc-run missing: run tools/gpu_bundle.sh on the build machine first"; exit 1; fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
rows=()
fails=0
row() { rows+=("$(printf '%-44s %-6s %s' "$1" "$2" "$3")"); [ "$2" = FAIL ] && fails=$((fails + 1)); }

# -- device tile ops ---------------------------------------------------------------------------
if [ -x "$B/device_ops_test" ]; then
  if "$B/device_ops_test" >"$out/device_ops.log" 2>&1; then
    row "device ops ($(grep -c '^PASS' "$out/device_ops.log") cases)" PASS ""
  else
    row "device ops" FAIL "$(grep -m3 '^FAIL' "$out/device_ops.log" | tr '\n' ' ')"
  fi
fi

# -- correctness against the reference interpreter, from ONE fatbin per sample ----------------
check() {  # name fatbin sym
  local log="$out/check_$1_$3.log"
  if "$B/etc-run" "$2" --sym "$3" --check --mode all --seed 7 >"$log" 2>&1; then
    row "check $1 $3 (mega, unfused, graph)" PASS "$(grep -o 'L2 [0-9.e+-]*' "$log" | tr '\n' ' ')"
  else
    row "check $1 $3 (mega, unfused, graph)" FAIL "$(tail -2 "$log" | tr '\n' ' ')"
  fi
}
for n in 1 1023 1024 1025 1000000 100000000; do check two_stage_sum "$B/two_stage_sum.fatbin" "N=$n"; done
for b in 1 3 16 128; do check mlp "$B/mlp.fatbin" "B=$b"; done

# -- a fatbin with no code for this GPU (only an sm_80 cubin: it does not run on sm_90) -------
if [ -f "$B/sm80_only.fatbin" ]; then
  "$B/etc-run" "$B/sm80_only.fatbin" --sym N=5 >"$out/nocode.log" 2>&1
  rc=$?
  if [ "$rc" -eq 1 ] && grep -q "has no code for" "$out/nocode.log"; then
    row "fatbin without code for this GPU" PASS "$(head -1 "$out/nocode.log")"
  else
    row "fatbin without code for this GPU" FAIL "exit $rc: $(head -1 "$out/nocode.log")"
  fi
fi

# -- sanitizers ------------------------------------------------------------------------------
san() {  # tool name fatbin sym
  local log="$out/san_$1_$2.log"
  if compute-sanitizer --tool "$1" --error-exitcode 9 "$B/etc-run" "$3" --sym "$4" --mode mega >"$log" 2>&1 &&
     compute-sanitizer --tool "$1" --error-exitcode 9 "$B/etc-run" "$3" --sym "$4" --mode unfused >>"$log" 2>&1; then
    row "compute-sanitizer $1 $2 $4" PASS "$(grep -m1 'ERROR SUMMARY' "$log")"
  else
    row "compute-sanitizer $1 $2 $4" FAIL "$(grep -m1 -E 'ERROR SUMMARY|Error|error' "$log")"
  fi
}
if command -v compute-sanitizer >/dev/null 2>&1; then
  for tool in memcheck racecheck; do
    san $tool two_stage_sum "$B/two_stage_sum.fatbin" N=5000
    san $tool mlp "$B/mlp.fatbin" B=3
  done
fi

# -- warm-up: process start to the first checked result --------------------------------------
t0=$(date +%s%N)
"$B/etc-run" "$B/mlp.fatbin" --sym B=1 --check --seed 3 >"$out/warmup.log" 2>&1
t1=$(date +%s%N)
row "warm-up: start to first checked mlp result" INFO "$(((t1 - t0) / 1000000)) ms (incl. the CPU reference run)"
t0=$(date +%s%N)
"$B/etc-run" "$B/mlp.fatbin" --sym B=1 --seed 3 --out y="$out/y.npy" >>"$out/warmup.log" 2>&1
t1=$(date +%s%N)
row "warm-up: start to first mlp result (no check)" INFO "$(((t1 - t0) / 1000000)) ms"

# -- benchmark: mega vs unfused vs unfused-graph, and the bandwidth floor ----------------------
bw=$(python3 - <<'PY' 2>/dev/null
import torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ts = []
for _ in range(20):
    s.record(); y.copy_(x); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
ts.sort(); print(f"{2 * x.numel() / (ts[len(ts)//2] * 1e-3) / 1e12:.3f}")
PY
)
row "device-to-device copy bandwidth" INFO "${bw:-?} TB/s (read + write)"
# mlp weights: w_gate_up [16384, 2048] + w_down [2048, 8192] + ln [2048], bf16.
wbytes=$(( (16384 * 2048 + 2048 * 8192 + 2048) * 2 ))
for b in 1 3 16 128; do
  log="$out/bench_mlp_B$b.log"
  "$B/etc-run" "$B/mlp.fatbin" --sym "B=$b" --bench 200 --mode all --seed 5 >"$log" 2>&1 || row "bench mlp B=$b" FAIL "$(tail -1 "$log")"
  grep -E 'median' "$log" | sed "s/^/B=$b /" >>"$out/bench_table.txt"
done
echo
echo "== $gpu =="
printf '%s\n' "${rows[@]}"
if [ -f "$out/bench_table.txt" ]; then
  echo; echo "mlp (H 2048, I 8192) bench, weights $wbytes bytes, floor = weights / copy bandwidth = $(python3 -c "print(f'{$wbytes / (${bw:-0} * 1e12) * 1e6:.1f} us')" 2>/dev/null):"
  cat "$out/bench_table.txt"
fi
[ "$fails" -eq 0 ] && echo "ALL PASS" || echo "$fails FAILED"
exit $((fails > 0))
