#!/usr/bin/env bash
# etc-run on the CPU reference interpreter with the paged decode layer (samples/llama_layer_paged.etir):
# random inputs (page ids 1..7 in a pool of at least 8 pages) run; the result does not depend on
# which pages hold a request's positions (identity and shuffled tables, zero pools) nor on the
# interpreter's order of the tiles (--order); a page id outside the pool is reported. Usage: etc_run_paged_cli_test.sh ETC_RUN   (from the repository root)
source "$(dirname "$0")/../harness.sh"
run=$1
sample=samples/llama_layer_paged.etir
syms=(--sym B=2 --sym MAXP=4 --sym P=8)

"$run" "$sample" "${syms[@]}" >"$tmp/out" 2>"$tmp/err" || { fail "random inputs: exit status $?"; cat "$tmp/err"; }
grep -qF "output k_pages: bf16 [8, 16, 512]" "$tmp/out" || fail "random inputs: no k_pages in the output"

# Request 0 on pages 0-3, request 1 on pages 4-7, in order and shuffled: the same y.
npy_i32 "$tmp/identity.npy" 2x4 0 1 2 3 4 5 6 7
npy_i32 "$tmp/shuffled.npy" 2x4 5 2 7 0 3 6 1 4
for t in identity shuffled; do
  "$run" "$sample" "${syms[@]}" --in page_table="$tmp/$t.npy" --out y="$tmp/y_$t.npy" >/dev/null 2>"$tmp/err" ||
    { fail "$t table: exit status $?"; cat "$tmp/err"; }
done
cmp -s "$tmp/y_identity.npy" "$tmp/y_shuffled.npy" || fail "identity and shuffled page tables give different y"

# The interpreter's other orders of the tiles give the same bits (the events order every access).
for order in latest-first random; do
  "$run" "$sample" "${syms[@]}" --in page_table="$tmp/shuffled.npy" --order $order --seed 3 --out y="$tmp/y_$order.npy" \
    >/dev/null 2>"$tmp/err" || { fail "--order $order: exit status $?"; cat "$tmp/err"; }
done
"$run" "$sample" "${syms[@]}" --in page_table="$tmp/shuffled.npy" --seed 3 --out y="$tmp/y_run.npy" >/dev/null 2>&1 ||
  fail "seed 3: exit status $?"
cmp -s "$tmp/y_run.npy" "$tmp/y_latest-first.npy" || fail "--order latest-first gives other bits"
cmp -s "$tmp/y_run.npy" "$tmp/y_random.npy" || fail "--order random gives other bits"
"$run" model.fatbin --order random >/dev/null 2>"$tmp/err" && fail "--order with a fatbin: exit status 0"
grep -qxF "etc-run: --order is for an .etir file run on the CPU interpreter" "$tmp/err" ||
  { fail "--order with a fatbin: no diagnosis"; cat "$tmp/err"; }

# Random positions are in [1, 8): entry 0 of each row holds the new token; page 8 is past the pool.
npy_i32 "$tmp/bad.npy" 2x4 8 1 2 3 4 5 6 7
"$run" "$sample" "${syms[@]}" --in page_table="$tmp/bad.npy" >/dev/null 2>"$tmp/err" && fail "page 8 of 8: exit status 0"
grep -qF "kv_append: page 8 of row 0 (for position" "$tmp/err" || { fail "page 8 of 8: no diagnosis"; cat "$tmp/err"; }
finish etc-run-paged
