#!/usr/bin/env bash
# tools/split_kv_by_length.py (session 75's per-launch choice between one-part and split-KV
# attention): the rewritten task-level module of a one-layer Llama-3.2-1B and Qwen3-0.6B verifies and
# schedules, and on the reference interpreter gives the original module's logits bit for bit on both sides
# of the threshold (every row at most T positions: the one-part grid; one row past it: the split
# grid and its merge), at B = 1 and 3; a module without split-KV attention, a missing file and a
# module without the cache length (`const S`) are refused by name.
# Usage: split_kv_by_length_test.sh ETCC ETC_RUN   (from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$1
run=$2
for model in llama3_2_1b qwen3_0_6b; do
  python3 tools/gen_decode_sample.py $model --layers 1 --vocab 1024 >"$tmp/l.etir" || fail "$model: gen_decode_sample.py"
  "$etcc" "$tmp/l.etir" --emit tasks -o "$tmp/l.tasks.etir" 2>"$tmp/err" || fail "$model: etcc --emit tasks: $(tail -3 "$tmp/err")"
  python3 tools/split_kv_by_length.py "$tmp/l.tasks.etir" --max-short 64 >"$tmp/dyn.etir" 2>"$tmp/err" ||
    fail "$model: the rewrite: $(cat "$tmp/err")"
  grep -qF "split_kv_by_length.py: 1 layers, one part while every row has at most 64 positions" "$tmp/err" ||
    fail "$model: the rewrite's report: $(cat "$tmp/err")"
  grep -qF 'task @attention_merge_o_0 grid [B * min(cdiv(16, B) - 1, 1) * min(max((load(lmax[0]) <= 4097) - 64, 0), 1), 8] (b, g) {' \
    "$tmp/dyn.etir" || fail "$model: the merge's extent does not read max(lens)"
  # Every pass again, the schedule's checks included.
  "$etcc" "$tmp/dyn.etir" --emit tasks -o "$tmp/dyn.out.etir" 2>"$tmp/err" ||
    fail "$model: etcc on the rewritten module: $(tail -3 "$tmp/err")"
  # pos = position of the new token; a row reads pos + 1 positions: 63 -> 64 (one part), 64 -> 65 (split).
  for case in "1 63" "1 64" "3 0 63 17" "3 0 64 17"; do
    set -- $case
    b=$1; shift
    name="B$b-$(echo "$*" | tr ' ' _)"
    npy_i32 "$tmp/pos_$name.npy" $# "$@"
    for v in l.tasks dyn; do
      "$run" "$tmp/$v.etir" --sym B=$b --in pos="$tmp/pos_$name.npy" --seed 4 --random-outputs \
        --out logits="$tmp/${v}_$name.npy" >/dev/null 2>"$tmp/err" || fail "$model: $v at $name: $(tail -3 "$tmp/err")"
    done
    cmp -s "$tmp/l.tasks_$name.npy" "$tmp/dyn_$name.npy" || fail "$model: $name: the logits differ from the original module's"
  done
done
python3 tools/split_kv_by_length.py samples/mlp.etir >/dev/null 2>"$tmp/err" && fail "a module without split-KV attention was rewritten"
grep -qF "split_kv_by_length.py: no split-KV attention (task @attention_merge_o_<layer>): nothing to rewrite" "$tmp/err" ||
  fail "the refusal's message: $(cat "$tmp/err")"
python3 tools/split_kv_by_length.py "$tmp/missing.etir" >/dev/null 2>"$tmp/err" && fail "a missing file was rewritten"
grep -qF "split_kv_by_length.py: $tmp/missing.etir: No such file or directory" "$tmp/err" ||
  fail "a missing file's message: $(cat "$tmp/err")"
# Without `const S`, the bound of max(lens) must be given.
sed '/^const S = /d' "$tmp/l.tasks.etir" | python3 tools/split_kv_by_length.py - >/dev/null 2>"$tmp/err" &&
  fail "a module without const S was rewritten without --cache-len"
grep -qF "the module has no \`const S = N\` (the cache's positions): give --cache-len" "$tmp/err" ||
  fail "no const S: $(cat "$tmp/err")"
finish "split_kv_by_length"
