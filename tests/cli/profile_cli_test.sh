#!/usr/bin/env bash
# etcc --profile and etc-run --trace without a GPU: the profile is in the descriptor and in the
# CUDA only when asked for, the profiled CUDA compiles for every target, and etc-run refuses
# --trace where it cannot mean anything before touching a device.
# Usage: profile_cli_test.sh ETCC ETC_RUN   (run from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$1 run=$2

for s in two_stage_sum mlp; do
  "$etcc" samples/$s.etir --emit=cuda -o "$tmp/$s.cu" || fail "$s: --emit=cuda"
  "$etcc" samples/$s.etir --emit=cuda --profile -o "$tmp/${s}_prof.cu" || fail "$s: --emit=cuda --profile"
  # No cost without --profile: not one line of profiling code.
  grep -qiE "profile" "$tmp/$s.cu" && fail "$s: the CUDA without --profile mentions profiling"
  grep -q "^#define ETC_PROFILE 1" "$tmp/${s}_prof.cu" || fail "$s: no ETC_PROFILE in the profiled CUDA"
  # One record per task call of every megakernel, none in the unfused kernels.
  calls=$(grep -c "etc::dev::profile::end(" "$tmp/${s}_prof.cu")
  tasks=$(grep -c "^task @" <("$etcc" samples/$s.etir --emit=tasks))
  [ "$calls" -eq "$tasks" ] || fail "$s: $calls profile::end calls for $tasks tasks"
done

# The profiled fatbin (static and dynamic schedule) compiles through NVRTC and says so in its descriptor.
"$etcc" samples/two_stage_sum.etir --profile -arch sm_90a -o "$tmp/prof.fatbin" || fail "profiled fatbin"
"$etcc" samples/two_stage_sum.etir --profile --schedule=dynamic -arch sm_80 -o "$tmp/prof_dyn.fatbin" || fail "profiled dynamic fatbin"
"$etcc" samples/two_stage_sum.etir -arch sm_90a -o "$tmp/plain.fatbin" || fail "plain fatbin"
"$run" "$tmp/prof.fatbin" --info >"$tmp/info" 2>&1
# N <= 10^8: cdiv(N, 1024) partial tasks and one final at most.
grep -q "profiled (etcc --profile): up to 97658 task records per megakernel launch" "$tmp/info" ||
  fail "--info of a profiled fatbin: $(head -4 "$tmp/info")"
"$run" "$tmp/plain.fatbin" --info | grep -q profiled && fail "--info says a plain fatbin is profiled"
# With a megakernel a range of B (--specialize), a launch runs one of them: room for the records
# of the largest (tests/golden/passes/specialize.etir: [64, 128] has up to 128 + 1 tasks), not of all.
"$etcc" tests/golden/passes/specialize.etir --specialize B=16,64 --profile -arch sm_90a -o "$tmp/prof_ranges.fatbin" ||
  fail "profiled fatbin of sym ranges"
"$run" "$tmp/prof_ranges.fatbin" --info 2>&1 | grep -q "up to 129 task records per megakernel launch" ||
  fail "--info of a profiled fatbin of sym ranges: $("$run" "$tmp/prof_ranges.fatbin" --info 2>&1 | grep profiled)"

# --trace refusals come before any device is needed.
"$run" "$tmp/plain.fatbin" --sym N=10 --trace "$tmp/t.json" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "needs a fatbin compiled with etcc --profile" "$tmp/out" || fail "--trace on a plain fatbin: $(cat "$tmp/out")"
"$run" "$tmp/prof.fatbin" --sym N=10 --mode unfused --trace "$tmp/t.json" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "use --mode mega or all" "$tmp/out" || fail "--trace with --mode unfused: $(cat "$tmp/out")"
[ -e "$tmp/t.json" ] && fail "a refused --trace left a file"

finish "--profile and --trace"
