#!/usr/bin/env bash
# etc-run --stress on a machine without a GPU: the options that go together (and --argmax-of,
# which needs --check or --stress), and a second
# fatbin that is not the same module, are refused before any device is needed.
# Usage: etc_run_stress_cli_test.sh ETC_RUN ETCC MLP.fatbin SUM.fatbin   (from the repository root)
source "$(dirname "$0")/../harness.sh"
run=$1 etcc=$2 mlp=$3 sum=$4

expect() {  # NAME RC TEXT ARGS...
  local name=$1 want=$2 text=$3
  shift 3
  "$run" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq "$want" ] || fail "$name: exit status $rc, expected $want"
  grep -qF -- "$text" "$tmp/err" || { fail "$name: stderr lacks '$text'"; sed 's/^/  | /' "$tmp/err"; }
}
expect also-without-stress 1 "etc-run: --stress-also needs --stress" "$mlp" --sym B=1 --stress-also "$mlp"
expect argmax-without-check 1 "etc-run: --argmax-of needs --check or --stress" "$mlp" --sym B=1 --argmax-of y=x
expect values-without-stress 1 "etc-run: --stress and --sym-values go together" "$mlp" --sym-values B=1,2
expect other-module 1 "holds a different module than $mlp (its name, syms or tensors differ)" \
  "$mlp" --stress 4 --sym-values B=1,2 --stress-also "$sum"
expect bad-check-every 1 "--check-every" "$mlp" --stress 4 --sym-values B=1,2 --check-every -3
# A bad input file is reported before any device is needed.
printf 'not an npy file' >"$tmp/bad.npy"
expect bad-input-first 1 "bad.npy" "$mlp" --stress 4 --sym-values B=1,2 --in x="$tmp/bad.npy"
# The same module under the other schedule (its IR differs in the schedule) gets as far as the
# device, which this machine may lack.
"$etcc" samples/mlp.etir --schedule=dynamic -arch sm_90a -o "$tmp/mlp_dynamic.fatbin" || fail "etcc --schedule=dynamic"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  expect other-schedule-no-gpu 1 "no CUDA driver" "$mlp" --stress 4 --sym-values B=1,2 --stress-also "$tmp/mlp_dynamic.fatbin"
fi
finish etc-run-stress
