#!/usr/bin/env bash
# tests/gpu/run.sh's own logic, without a GPU: it skips cleanly where nvidia-smi finds none, and
# with a stand-in nvidia-smi and etc-run (which fails two chosen checks) its check and
# decodecheck sections give the same table and failure count whether their checks run one at a
# time or CHECK_JOBS at once, and leave no slot files behind. The stand-ins live in a copy of the
# script's tree, so the repository's gpu-bundle/ and gpu-out/ are not touched.
# Usage: gpu_run_harness_test.sh   (from the repository root)
source "$(dirname "$0")/../harness.sh"
root=$tmp/tree
mkdir -p "$root/tests/gpu" "$root/gpu-bundle" "$root/tools" "$tmp/bin"
cp tests/gpu/run.sh "$root/tests/gpu/"
printf 'import sys\nsys.exit(1)\n' >"$root/tests/gpu/moe_router.py"  # no router: the MoE rows skip
printf 'import sys\nsys.exit(0)\n' >"$root/tools/gen_decode_weights.py"

printf '#!/bin/sh\nexit 9\n' >"$tmp/bin/nvidia-smi"
chmod +x "$tmp/bin/nvidia-smi"
got=$(PATH="$tmp/bin:$PATH" OUT="$tmp/o0" bash "$root/tests/gpu/run.sh" 2>&1)
rc=$?
[ "$rc" = 0 ] && [ "$got" = "SKIP: no NVIDIA GPU here" ] || fail "without a GPU: exit $rc, '$got'"

cat >"$tmp/bin/nvidia-smi" <<'EOF'
#!/bin/sh
if [ "$1" = -L ]; then echo "GPU 0: stand-in"; else echo "stand-in GPU, 0.0"; fi
EOF
# Each check takes a different time, so that parallel checks end out of order.
cat >"$root/gpu-bundle/etc-run" <<'EOF'
#!/bin/bash
sleep "0.$(( $(echo "$*" | cksum | cut -d' ' -f1) % 4 ))"
case "$*" in *mlp_dynamic.fatbin\ --sym\ B=16*|*small_stream.fatbin\ --sym\ B=7\ *) echo "logits FAIL"; exit 1 ;; esac
echo "logits: bf16 [2] rel L2 1.0e-3 ok"
echo "next_token: i32 [1] 0 of 1 differ"
EOF
chmod +x "$root/gpu-bundle/etc-run"
for f in two_stage_sum mlp llama_layer llama_layer_paged; do
  touch "$root/gpu-bundle/${f}_static.fatbin" "$root/gpu-bundle/${f}_dynamic.fatbin"
done
touch "$root/gpu-bundle/llama3_2_1b.fatbin" "$root/gpu-bundle/llama3_2_1b_small.fatbin" \
  "$root/gpu-bundle/llama3_2_1b_small_stream.fatbin"

for jobs in 1 6; do
  PATH="$tmp/bin:$PATH" SECTIONS=check,decodecheck DECODE_MODELS=llama3_2_1b CHECK_JOBS=$jobs OUT="$tmp/o$jobs" \
    bash "$root/tests/gpu/run.sh" >"$tmp/out$jobs" 2>/dev/null
  rc=$?
  [ "$rc" = 1 ] || fail "CHECK_JOBS=$jobs: exit $rc, expected 1 (two checks fail)"
  grep -qx '2 FAILED' "$tmp/out$jobs" || fail "CHECK_JOBS=$jobs: no '2 FAILED': $(tail -1 "$tmp/out$jobs")"
  ls -a "$tmp/o$jobs" | grep -q '^\.row_' && fail "CHECK_JOBS=$jobs: slot files left behind"
  # The table after the GPU's name: every check's row, in the order the checks started.
  sed -n '/^== /,$p' "$tmp/out$jobs" >"$tmp/table$jobs"
done
rows=$(grep -c '^check ' "$tmp/table1")
[ "$rows" = 48 ] || fail "the sequential table has $rows check rows, expected 48"
grep -q '^check mlp_dynamic B=16 (mega, unfused, graph) *FAIL' "$tmp/table1" || fail "mlp_dynamic B=16 did not fail"
grep -q '^check llama3_2_1b_small_stream B=7 pos mixed *FAIL' "$tmp/table1" || fail "the stream check at B = 7 did not fail"
diff "$tmp/table1" "$tmp/table6" >"$tmp/diff" || fail "CHECK_JOBS=6 gave another table: $(cat "$tmp/diff")"
# In parallel each row also shows as its check ends, before the table.
[ "$(sed '/^== /,$d' "$tmp/out6" | grep -c '^check ')" = 48 ] || fail "CHECK_JOBS=6 did not show each row as it ended"
# A partial bundle (gpu_bundle.sh ONLY=...): a fatbin it left out has no row, and no failure.
rm "$root/gpu-bundle/llama_layer_paged_dynamic.fatbin"
PATH="$tmp/bin:$PATH" SECTIONS=check DECODE_MODELS=llama3_2_1b OUT="$tmp/op" bash "$root/tests/gpu/run.sh" >"$tmp/outp" 2>/dev/null
grep -qx '1 FAILED' "$tmp/outp" || fail "without llama_layer_paged_dynamic: not '1 FAILED': $(tail -1 "$tmp/outp")"
grep -q 'llama_layer_paged_dynamic' "$tmp/outp" && fail "a row for the absent llama_layer_paged_dynamic.fatbin"
grep -q 'llama_layer_paged_static B=8' "$tmp/outp" || fail "no row for llama_layer_paged_static, which is there"
# A bundle of one decode variant (ONLY='..._small_foldnorms...'): its rows run without the
# default's reduced fatbin (session 81's first call printed ALL PASS having checked nothing).
rm "$root/gpu-bundle/llama3_2_1b_small.fatbin" "$root/gpu-bundle/llama3_2_1b_small_stream.fatbin" \
  "$root/gpu-bundle/llama3_2_1b.fatbin"
touch "$root/gpu-bundle/llama3_2_1b_small_foldnorms.fatbin"
PATH="$tmp/bin:$PATH" SECTIONS=decodecheck DECODE_MODELS=llama3_2_1b OUT="$tmp/of" bash "$root/tests/gpu/run.sh" >"$tmp/outf" 2>/dev/null
rc=$?
[ "$rc" = 0 ] && [ "$(tail -1 "$tmp/outf")" = "ALL PASS" ] || fail "a foldnorms-only bundle: exit $rc, '$(tail -1 "$tmp/outf")'"
[ "$(sed -n '/^== /,$p' "$tmp/outf" | grep -cE '^check llama3_2_1b_small_foldnorms B=[123] pos mixed +PASS')" = 3 ] ||
  fail "a foldnorms-only bundle: not its 3 rows: $(sed -n '/^== /,$p' "$tmp/outf" | head -5)"
# Nothing that the sections ask for: no row, which is not a pass.
rm "$root/gpu-bundle/llama3_2_1b_small_foldnorms.fatbin"
PATH="$tmp/bin:$PATH" SECTIONS=decodecheck DECODE_MODELS=llama3_2_1b OUT="$tmp/oe" bash "$root/tests/gpu/run.sh" >"$tmp/oute" 2>/dev/null
rc=$?
[ "$rc" = 1 ] && tail -1 "$tmp/oute" | grep -q '^NO ROWS: nothing of SECTIONS=decodecheck is in ' ||
  fail "an empty bundle: exit $rc, '$(tail -1 "$tmp/oute")'"
finish gpu_run_harness_test
