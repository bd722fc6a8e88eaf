#!/usr/bin/env bash
# The weight stream across tasks (--device-define ETC_MM_STREAM=1) keeps a streamed matmul's
# accumulators in registers: etcc --resource-usage on one decode projection (its megakernel
# streams) reports at most 64 bytes of spill stores there. A call inside the K loop or the
# epilogue (the noinline stream_pump, where the inline stream_issue belongs) made ptxas spill
# the accumulators around it: 256 bytes of stores in this module, 4.7 KB in the reduced
# Llama-3.2-1B, whose step it made 1.9x slower on an H200 (session 61).
# Usage: stream_spills_test.sh ETCC   (from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$1
"$etcc" tests/cli/resources/stream_matmul.etir -arch sm_90a --device-define ETC_MM_STREAM=1 --resource-usage \
  -o "$tmp/s.fatbin" >"$tmp/usage" 2>&1 || fail "etcc: $(tail -3 "$tmp/usage")"
# "  etc_main_mega   256   254   STACK/STORES+LOADS   STATIC+DYNAMIC ..."
line=$(grep -E '^ *etc_main_mega ' "$tmp/usage")
[ -n "$line" ] || fail "no etc_main_mega row in: $(head -5 "$tmp/usage")"
spills=$(awk '{print $4}' <<<"$line")
stores=${spills#*/}
stores=${stores%%+*}
dyn=$(awk '{print $5}' <<<"$line")
dyn=${dyn#*+}
# The kernel does stream (an etcc that declined to stream would pass the spill check without
# testing anything): its dynamic shared memory holds the ring of 8 units of 16 KiB and its
# alignment (kStreamKernelBytes) beside a streamed matmul's own (kStreamCtxBytes), 198656 bytes
# at least; without the knob the same kernel has 132096.
[ "${dyn:-0}" -ge 198656 ] 2>/dev/null || fail "the megakernel's dynamic shared memory is '$dyn': not streaming? ($line)"
[ "${stores:-x}" -le 64 ] 2>/dev/null || fail "the streaming megakernel spills '$stores' bytes of stores (at most 64): $line"
finish "stream spills"
