#!/usr/bin/env bash
# etcc's dependency-file options (-MD -MF -MT -MP and their long forms) and -v's stage timings.
# Usage: etcc_deps_cli_test.sh ETCC   (run from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$(realpath "$1")
file_is() {  # NAME FILE EXPECTED
  [ "$(cat "$2" 2>/dev/null)" = "$3" ] || { fail "$1: $2 differs"; diff <(echo "$3") "$2" | head -20; }
}

mkdir -p "$tmp/m/inc"
cat >"$tmp/m/main.etir" <<'ETIR'
module @deps
include "inc/sizes.etir"
include "inc/sizes.etir"
tensor x : f32[N] input
tensor y : f32[N] output
graph @main {
  y = add(x, x)
}
ETIR
echo 'sym N in [1, 64]' >"$tmp/m/inc/sizes.etir"
m="$tmp/m/main.etir"
s="$tmp/m/inc/sizes.etir"

# gcc's spellings; an included file is listed once however often it is included.
run md 0 "$m" --emit=cuda -o "$tmp/a.cu" -MD -MP &&
  file_is md "$tmp/a.d" "$tmp/a.cu: \\
  $m \\
  $s

$s:"
run mf-mt 0 "$m" --emit=tasks -o "$tmp/b.etir" -MF "$tmp/m/../b.dep" -MT obj/b -MT other &&
  file_is mf-mt "$tmp/b.dep" "obj/b other: \\
  $m \\
  $s"
run joined 0 "$m" --emit=tasks -o "$tmp/c.etir" "-MF$tmp/c.d" "-MTc" && file_is joined "$tmp/c.d" "c: \\
  $m \\
  $s"
run long-forms 0 "$m" --emit=tasks -o "$tmp/d.etir" --write-dependencies --dependency-file "$tmp/d.deps" \
  --dependency-target=t --dependency-phony && file_is long-forms "$tmp/d.deps" "t: \\
  $m \\
  $s

$s:"
# Standard input is no file: only what it includes is listed.
(cd "$tmp/m" && timeout 60 "$etcc" - --emit=tasks -MF "$tmp/e.d" -MT e <main.etir >/dev/null 2>"$tmp/err") ||
  fail "stdin: $(cat "$tmp/err")"
file_is stdin "$tmp/e.d" "e: \\
  inc/sizes.etir"

# Meaningless combinations are errors, with nothing written.
run mt-alone 1 "$m" --emit=tasks -o "$tmp/f.etir" -MT x && err_has mt-alone "-MT and -MP need -MD or -MF"
run md-stdout 1 "$m" -MD && err_has md-stdout "-MD without -o needs -MF FILE"
run mf-stdout 1 "$m" -MF "$tmp/g.d" && err_has mf-stdout "needs -MT TARGET"
run verify 1 "$m" --verify-diagnostics -MD -o "$tmp/h.etir" && err_has verify "--verify-diagnostics writes no output"
run same-file 1 "$m" --emit=tasks -o "$tmp/x.d" -MD && err_has same-file "the dependency file would overwrite the output"
[ -e "$tmp/f.etir" ] || [ -e "$tmp/g.d" ] || [ -e "$tmp/h.d" ] || [ -e "$tmp/x.d" ] && fail "an option error left a file"

# A failed compile writes neither the output nor the dependency file.
echo "tensor z : f32[Q] input" >>"$s"
run broken 1 "$m" --emit=tasks -o "$tmp/i.etir" -MD
[ -e "$tmp/i.etir" ] || [ -e "$tmp/i.d" ] && fail "broken: a failed compile left its output or .d file"
# ... nor does an unwritable dependency file leave the output.
echo 'sym N in [1, 64]' >"$s"
run unwritable 1 "$m" --emit=tasks -o "$tmp/j.etir" -MF "$tmp/nodir/j.d" && err_has unwritable "cannot write '$tmp/nodir/j.d'"
[ -e "$tmp/j.etir" ] && fail "unwritable: the output was written although the dependency file failed"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left: $(ls "$tmp")"

# An interrupted compile leaves nothing: no fatbin, no .d, no temporary. (SIGTERM: a background
# job of a non-interactive shell ignores SIGINT.)
mkdir -p "$tmp/int"
"$etcc" samples/mlp.etir -o "$tmp/int/mlp.fatbin" -MD </dev/null >/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -TERM "$pid" 2>/dev/null
wait "$pid"
[ -z "$(ls -A "$tmp/int")" ] || fail "an interrupted compile left: $(ls "$tmp/int")"

# -v: one line per stage with its duration, front end to the written file.
run verbose 0 "$m" -arch sm_80 -o "$tmp/k.fatbin" -MD -v &&
  for stage in "etcc: front end (read 2 files" "etcc: lower-ops: " "etcc: verify-schedule: " "etcc: emit CUDA (" \
               "etcc: NVRTC + nvJitLink for 1 target (worker $(dirname "$etcc")/etc-nvrtc): " "etcc: write $tmp/k.fatbin and $tmp/k.d ("; do
    err_has verbose "$stage"
  done
# (The resource report that -v also prints is a table: its title and rows are not stages.)
not_stage='^etcc: .*[0-9] ms(,|$)|^etcc: graph @|^resources on |^  '
grep -vE "$not_stage" "$tmp/err" | grep -q . &&
  fail "verbose: a line without a duration: $(grep -vE "$not_stage" "$tmp/err" | head -3)"

finish "dependency files and -v"
