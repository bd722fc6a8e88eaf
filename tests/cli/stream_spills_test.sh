#!/usr/bin/env bash
# The weight stream across tasks (--device-define ETC_MM_STREAM=1) keeps a streamed matmul's
# accumulators in registers: etcc --resource-usage on a one-layer Llama-3.2-1B (the B <= 31
# megakernel streams) reports at most a few hundred bytes of spill stores in that megakernel.
# A call inside the K loop or the epilogue (the noinline stream_pump, where the inline
# stream_issue belongs) made ptxas spill the accumulators around it: 4.7 KB of stores in the
# two-layer model, and the step 1.9x slower on an H200 (session 61).
# Usage: stream_spills_test.sh ETCC   (from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$1
python3 tools/gen_decode_sample.py llama3_2_1b --layers 1 --vocab 1024 >"$tmp/l1.etir" || fail "gen_decode_sample.py"
"$etcc" "$tmp/l1.etir" -arch sm_90a --device-define ETC_MM_STREAM=1 --resource-usage -o "$tmp/l1.fatbin" \
  >"$tmp/usage" 2>&1 || fail "etcc: $(tail -3 "$tmp/usage")"
# "  etc_main_mega_B1_31   256   255   STACK/STORES+LOADS   STATIC+DYNAMIC ..."
line=$(grep -E '^ *etc_main_mega_B1_31 ' "$tmp/usage")
[ -n "$line" ] || fail "no etc_main_mega_B1_31 row in: $(head -5 "$tmp/usage")"
spills=$(awk '{print $4}' <<<"$line")
stores=${spills#*/}
stores=${stores%%+*}
dyn=$(awk '{print $5}' <<<"$line")
dyn=${dyn#*+}
# The kernel does stream (an etcc that declined to stream would pass the spill check without
# testing anything): its dynamic shared memory holds the ring of 8 units of 16 KiB and its
# alignment (kStreamKernelBytes) beside a streamed matmul's own (kStreamCtxBytes), 198656 bytes
# at least, where the default kernel has 148480.
[ "${dyn:-0}" -ge 198656 ] 2>/dev/null || fail "the B <= 31 megakernel's dynamic shared memory is '$dyn': not streaming? ($line)"
[ "${stores:-x}" -le 512 ] 2>/dev/null || fail "the streaming megakernel spills '$stores' bytes of stores (at most 512): $line"
finish "stream spills"
