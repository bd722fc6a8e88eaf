#!/usr/bin/env bash
# attention_decode's short_kv (the per-launch choice between one part a row and split-KV parts
# with their merge, from the longest row): on a one-layer Llama-3.2-1B and Qwen3-0.6B with
# short_kv = 64, the lowering's grids read max(lens), the merge and the one-part grid that
# both write o wait for neither, and on the reference interpreter the logits are bit for bit
# those of one part a row (kv_splits = 1) where every row holds at most 64 positions and those
# of the split form (short_kv = 0) where one row holds more, at B = 1 and 3. With
# --fold-attention the row grid (q/k/v sums, rope, kv_append) moves into both forms' attention
# tasks, and the logits stay bit for bit the same at B = 3, in a random order of the tiles.
# Usage: short_kv_test.sh ETCC ETC_RUN   (from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$1
run=$2
for model in llama3_2_1b qwen3_0_6b; do
  gen() { python3 tools/gen_decode_sample.py $model --layers 1 --vocab 1024 "$@"; }
  gen --short-kv 64 >"$tmp/dyn.etir" && gen --kv-splits 1 >"$tmp/one.etir" && gen --short-kv 0 >"$tmp/split.etir" ||
    fail "$model: gen_decode_sample.py"
  "$etcc" "$tmp/dyn.etir" --emit tasks -o "$tmp/dyn.tasks.etir" 2>"$tmp/err" ||
    fail "$model: etcc --emit tasks: $(tail -3 "$tmp/err")"
  long='min(max((load(lens_max[0]) <= 4097) - 64, 0), 1)'
  short='min(max(65 - (load(lens_max[0]) <= 4097), 0), 1)'
  grep -qF "task @attention_merge_o_0 grid [B * min(cdiv(16, B) - 1, 1) * $long, 8] (b, g) {" "$tmp/dyn.tasks.etir" ||
    fail "$model: the merge's extent does not read max(lens)"
  grep -qF "task @attention_decode_o_0_short grid [B * min(cdiv(16, B) - 1, 1) * $short, 8] (b, g) {" \
    "$tmp/dyn.tasks.etir" || fail "$model: no one-part grid for short rows"
  # Neither of the two writers of o waits for the other.
  awk '/^task @attention_(merge_o_0|decode_o_0_short) /,/^}/' "$tmp/dyn.tasks.etir" >"$tmp/writers"
  grep -E 'wait ev_(attention_merge_o_0|attention_decode_o_0_short)_' "$tmp/writers" &&
    fail "$model: the merge and the one-part grid are ordered"
  "$etcc" "$tmp/split.etir" --emit tasks 2>"$tmp/err" | grep -qF 'lens_max' && fail "$model: short_kv = 0 still reads max(lens)"
  "$etcc" "$tmp/dyn.etir" --fold-attention --emit tasks -o "$tmp/fold.etir" 2>"$tmp/err" ||
    fail "$model: etcc --fold-attention --emit tasks: $(tail -3 "$tmp/err")"
  grep -qE '^task @kv_append' "$tmp/fold.etir" && fail "$model: --fold-attention left the row grid: $(cat "$tmp/err")"
  for g in attention_decode_o_0_short attention_decode_o_0; do
    awk "/^task @$g /,/^}/" "$tmp/fold.etir" | grep -qE '^  kv_append\(' || fail "$model: @$g does not append the row"
  done
  # pos = position of the new token; a row reads pos + 1 positions: 63 -> 64 (one part), 64 -> 65 (split).
  for case in "1 63:one" "1 64:split" "3 0 63 17:one" "3 0 64 17:split"; do
    want=${case##*:}
    set -- ${case%%:*}
    b=$1; shift
    name="B$b-$(echo "$*" | tr ' ' _)"
    npy_i32 "$tmp/pos_$name.npy" $# "$@"
    # The fold at B = 3 only, in both forms (the interpreter's random order is the slow part).
    fold=""
    [ "$b" = 3 ] && fold=fold:random
    for v in dyn $want $fold; do
      "$run" "$tmp/${v%:*}.etir" --sym B=$b --in pos="$tmp/pos_$name.npy" --seed 4 --random-outputs \
        --order "$([ "$v" = fold:random ] && echo random || echo run)" \
        --out logits="$tmp/${v%:*}_$name.npy" >/dev/null 2>"$tmp/err" || fail "$model: $v at $name: $(tail -3 "$tmp/err")"
    done
    cmp -s "$tmp/${want}_$name.npy" "$tmp/dyn_$name.npy" || fail "$model: $name: the logits differ from the $want form's"
    [ -z "$fold" ] || cmp -s "$tmp/dyn_$name.npy" "$tmp/fold_$name.npy" || fail "$model: $name: --fold-attention's logits differ"
  done
done
python3 tools/gen_decode_sample.py llama3_2_1b --short-kv -1 >/dev/null 2>"$tmp/err" && fail "--short-kv -1 was taken"
grep -qF "error: --short-kv must be 0 or positive" "$tmp/err" || fail "--short-kv -1: $(cat "$tmp/err")"
finish "short_kv"
