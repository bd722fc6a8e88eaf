#!/usr/bin/env bash
# etcc --megakernel-only: the fatbin carries the megakernel and no unfused kernels (its descriptor
# says "unfused": null), is smaller than the default's, and etc-run refuses an unfused run of it
# by name before it looks for a GPU (so this runs on CPU machines too).
# Usage: megakernel_only_test.sh ETCC ETC_RUN   (from the repository root)
etcc=$1
etc_run=$2
source "$(dirname "$0")/../harness.sh"

src=samples/two_stage_sum.etir
run default 0 "$src" -arch sm_90a -o "$tmp/full.fatbin"
run megakernel-only 0 "$src" -arch sm_90a --megakernel-only -o "$tmp/mega.fatbin"
[ -s "$tmp/mega.fatbin" ] && [ -s "$tmp/full.fatbin" ] || fail "a fatbin is missing"
# The descriptor's graph and its kernels, as etc-run --info lists them.
"$etc_run" "$tmp/mega.fatbin" --info >"$tmp/info" 2>&1 || fail "etc-run --info failed: $(cat "$tmp/info")"
grep -qF "    mega     etc_main_mega (" "$tmp/info" || fail "--info lacks the megakernel"
grep -qF "    unfused  " "$tmp/info" && fail "--info lists an unfused kernel of a --megakernel-only fatbin"
grep -qxF "    no unfused kernels (etcc --megakernel-only)" "$tmp/info" || fail "--info does not say that the unfused kernels were left out"
"$etc_run" "$tmp/full.fatbin" --info >"$tmp/info_full" 2>&1 || fail "etc-run --info of the default failed"
grep -qF "    unfused  " "$tmp/info_full" || fail "the default fatbin lists no unfused kernel"
grep -qF "no unfused kernels" "$tmp/info_full" && fail "the default fatbin says it has no unfused kernels"
# Smaller: the unfused kernels' code is gone (NVRTC and ptxas never saw it).
full=$(stat -c %s "$tmp/full.fatbin") mega=$(stat -c %s "$tmp/mega.fatbin")
# (two_stage_sum on sm_90a: 79936 bytes against 91408; a descriptor's null instead of the list
# is tens of bytes, so 5% smaller means code was left out.)
[ $((mega * 100)) -lt $((full * 95)) ] || fail "the --megakernel-only fatbin ($mega bytes) is not 5% smaller than the default ($full)"
# The generated CUDA has no unfused kernel and no unfused instantiation of a task function.
run cuda 0 "$src" --megakernel-only --emit=cuda -o "$tmp/mega.cu"
grep -q '__global__' "$tmp/mega.cu" || fail "no kernel in the CUDA"
grep '__global__' "$tmp/mega.cu" | grep -v 'etc_main_mega' && fail "a kernel other than the megakernel in the CUDA"
grep -qF '<kUnfused' "$tmp/mega.cu" && fail "the CUDA instantiates a task function for the unfused form"
run cuda-full 0 "$src" --emit=cuda -o "$tmp/full.cu"
grep -qF '<kUnfused' "$tmp/full.cu" || fail "the default CUDA has no unfused instantiation (the check above tests nothing)"

# etc-run: an unfused mode is refused by name, before the GPU is looked for, with status 1 and no output.
for mode in unfused unfused-graph all; do
  "$etc_run" "$tmp/mega.fatbin" --sym N=100 --mode "$mode" --out "out=$tmp/y.npy" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  want_mode=$mode
  [ "$mode" = all ] && want_mode=unfused
  [ "$rc" -eq 1 ] || fail "--mode $mode: exit status $rc, expected 1"
  grep -qxF "etc-run: --mode $want_mode: this fatbin has no unfused kernels (etcc --megakernel-only left them out): use --mode mega" "$tmp/err" ||
    { fail "--mode $mode: not the expected message"; sed 's/^/  | /' "$tmp/err" | head -5; }
  [ -e "$tmp/y.npy" ] && fail "--mode $mode left an output file"
done
finish megakernel-only
