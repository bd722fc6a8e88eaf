#!/usr/bin/env bash
# etcc's toolchain worker (etc-nvrtc, compiler/backend/nvrtc_worker.h): etcc finds it next to
# itself and compiles every target in it, with the same bytes as in its own process; a worker
# that fails, dies or is missing is a diagnostic naming it, with no output file left; a killed
# etcc leaves no worker running; the worker's answer to a bad source and its usage errors.
# Usage: nvrtc_worker_test.sh ETCC ETC_NVRTC   (run from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$(realpath "$1") worker=$(realpath "$2")
src=samples/two_stage_sum.etir archs=(-arch sm_80 -arch compute_90)

[ "$(dirname "$worker")" = "$(dirname "$etcc")" ] || fail "etc-nvrtc is not next to etcc: $worker"
# The worker next to etcc compiles every target, and gives the bytes etcc's own process gives.
run found 0 "$src" "${archs[@]}" -v -o "$tmp/worker.fatbin" &&
  err_has found "etcc: NVRTC + nvJitLink for 2 targets (worker $worker): "
ETC_NVRTC_WORKER= run in-process 0 "$src" "${archs[@]}" -v -o "$tmp/self.fatbin" &&
  err_has in-process "etcc: NVRTC + nvJitLink for 2 targets (in this process): "
cmp -s "$tmp/worker.fatbin" "$tmp/self.fatbin" || fail "the worker's fatbin differs from the in-process one"
run whole-worker 0 "$src" -arch sm_80 --whole-program -o "$tmp/whole_worker.cubin"
ETC_NVRTC_WORKER= run whole-self 0 "$src" -arch sm_80 --whole-program -o "$tmp/whole_self.cubin"
cmp -s "$tmp/whole_worker.cubin" "$tmp/whole_self.cubin" || fail "--whole-program: the worker's cubin differs"

# A worker that fails, dies or is not there: the diagnostic names it and how; no output file.
failing() {  # NAME WORKER EXPECTED_LINE
  rm -f "$tmp/x.fatbin"
  ETC_NVRTC_WORKER=$2 run "$1" 1 "$src" -arch sm_80 -o "$tmp/x.fatbin" &&
    if [ "$(cat "$tmp/err")" != "etcc: error: the CUDA compile for sm_80 failed; NVRTC / nvJitLink said:
$3" ]; then fail "$1: the diagnostic"; sed 's/^/  | /' "$tmp/err" | head; fi
  [ ! -e "$tmp/x.fatbin" ] || fail "$1: an output file was left"
}
failing false /bin/false "the toolchain worker /bin/false exited with status 1 compiling for sm_80"
printf '#!/bin/sh\nkill -SEGV $$\n' >"$tmp/segv.sh" && chmod +x "$tmp/segv.sh"
failing signal "$tmp/segv.sh" "the toolchain worker $tmp/segv.sh was killed by signal 11 (Segmentation fault) compiling for sm_80"
failing missing "$tmp/none/etc-nvrtc" \
  "could not start the toolchain worker $tmp/none/etc-nvrtc: No such file or directory (set ETC_NVRTC_WORKER to another worker, or empty to compile inside etcc)"

# A failed compile in the worker: status 1, NVRTC's words in the log and an empty image.
echo 'int x = ;' >"$tmp/bad.cu"
"$worker" sm_80 <"$tmp/bad.cu" >"$tmp/bad.answer" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] || fail "bad source: exit status $rc, expected 1"
python3 - "$tmp/bad.answer" <<'PY' || fail "bad source: the answer"
import struct, sys
a = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", a[:8])[0]
log, rest = a[8:8 + n].decode(), a[8 + n:]
assert "error: expected an expression" in log, log
assert rest == b"\0" * 8, rest[:16]
PY
# A killed etcc takes its workers with it (each dies with the thread that started it).
workers_of() {  # PID: how many processes run etc-nvrtc with --parent PID
  local f n=0
  for f in /proc/[0-9]*/cmdline; do
    tr '\0' ' ' <"$f" 2>/dev/null | grep -qF -- "etc-nvrtc sm_90a --name mlp.cu --parent $1 " && n=$((n + 1))
  done
  echo "$n"
}
"$etcc" samples/mlp.etir -arch sm_90a -o "$tmp/killed.fatbin" 2>/dev/null &
pid=$!
for _ in $(seq 100); do [ "$(workers_of "$pid")" -gt 0 ] && break; sleep 0.1; done
[ "$(workers_of "$pid")" -gt 0 ] || fail "killed: no worker seen under etcc"
kill -KILL "$pid"; wait "$pid" 2>/dev/null
sleep 0.5
[ "$(workers_of "$pid")" -eq 0 ] || fail "killed: a worker outlived etcc"
[ ! -e "$tmp/killed.fatbin" ] || fail "killed: an output file was left"
# Usage errors: status 2 and a line that says what is wrong.
usage() {  # NAME EXPECTED_FIRST_LINE ARGS...
  local name=$1 want=$2
  shift 2
  "$worker" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit status $rc, expected 2"
  [ "$(head -1 "$tmp/err")" = "$want" ] || { fail "$name: first line"; head -2 "$tmp/err" | sed 's/^/  | /'; }
}
usage no-args "etc-nvrtc: expected a target, got 0 arguments"
usage two-targets "etc-nvrtc: expected a target, got 2 arguments" sm_80 sm_90a
usage bad-target "etc-nvrtc: not a target: 'sm_9x'" sm_9x
usage bad-option "etc-nvrtc: unknown option '--fast'" sm_80 --fast
usage no-value "etc-nvrtc: --option needs a value" sm_80 --option

"$etcc" --help | grep -qF 'ETC_NVRTC_WORKER       the toolchain worker' || fail "etcc --help does not name ETC_NVRTC_WORKER"
finish nvrtc-worker
