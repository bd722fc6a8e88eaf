#!/usr/bin/env bash
# tools/gpu_ab.sh: the bundle holds every variant's fatbin, a stripped etc-run and the etcc
# commands; the script it writes is valid bash, checks and times each variant once per batch
# size and round, and says why when etc-run fails (here: no GPU, or a GPU); a variant that
# does not compile, a missing given fatbin (LABEL=FATBIN), a bad or repeated label leave nothing
# behind. The model is the smallest sample: the script does not depend on it, and every variant
# is a whole NVRTC compile.
# Usage: gpu_ab_test.sh BUILD_DIR   (from the repository root)
source "$(dirname "$0")/../harness.sh"
build=$1
name=ci_abtest_$$
cleanup() { rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh" "$tmp"; }
trap cleanup EXIT
leftovers() { ls gpu-out 2>/dev/null | grep -F "$name" || true; }

if ! tools/gpu_ab.sh -b "$build" -s N -B 1,8 -r 2 -n 3 -c '' "$name" samples/two_stage_sum.etir base \
     'ring:--device-define ETC_MM_RING_KIB=64' >"$tmp/out" 2>&1; then
  fail "gpu_ab.sh did not build the bundle"; cat "$tmp/out"
fi
grep -qF "gpu-out/$name.tar.xz" "$tmp/out" || fail "no word of the bundle: $(cat "$tmp/out")"
list=$(tar tJf "gpu-out/$name.tar.xz" 2>/dev/null | sort | tr '\n' ' ')
[ "$list" = "$name/ $name/base.fatbin $name/etc-run $name/ring.fatbin $name/variants.txt " ] ||
  fail "bundle lists: $list"
tar -xJOf "gpu-out/$name.tar.xz" "$name/variants.txt" |
  grep -qxF "ring: etcc samples/two_stage_sum.etir -arch sm_90a --megakernel-only --device-define ETC_MM_RING_KIB=64" ||
  fail "variants.txt lacks ring's etcc command"
# Only megakernels run there, so every variant is compiled without the unfused kernels.
tar -C "$tmp" -xJf "gpu-out/$name.tar.xz" "$name/base.fatbin"
"$build/tools/etc-run" "$tmp/$name/base.fatbin" --info 2>&1 | grep -qF "no unfused kernels (etcc --megakernel-only)" ||
  fail "base.fatbin has unfused kernels: $("$build/tools/etc-run" "$tmp/$name/base.fatbin" --info 2>&1 | head -5)"
bash -n "gpu-out/$name.sh" || fail "the script is not valid bash"
grep -qF -- "--sym N=\$b  --bench 3 --mode mega" "gpu-out/$name.sh" || fail "the script does not bench with --bench 3"

# Run it: without a GPU every line says why etc-run failed; with one, a median. Either way one
# check line per variant and one line per variant, batch size and round.
mkdir -p "$tmp/outdir"
OUT="$tmp/outdir" timeout 600 bash "gpu-out/$name.sh" >"$tmp/run" 2>&1
# Under $OUT (a lent GPU machine's folder that comes back) the same output goes to a file there.
# (The tee of the script's output may still be writing after the script ends: up to 20 s.)
for _ in $(seq 40); do cmp -s "$tmp/run" "$tmp/outdir/ab_$name.log" && break; sleep 0.5; done
cmp -s "$tmp/run" "$tmp/outdir/ab_$name.log" || fail "\$OUT/ab_$name.log is not the script's output"
[ "$(grep -cE '^check (base|ring) N=1 (passed|FAILED \(exit [0-9]+\): .+)' "$tmp/run")" = 2 ] ||
  { fail "check lines"; cat "$tmp/run"; }
[ "$(grep -cE '^(base|ring) N=(1|8) (bench mega: median|FAILED \(exit [0-9]+\): .+)' "$tmp/run")" = 8 ] ||
  { fail "bench lines"; cat "$tmp/run"; }
# Then the table of what it timed (tools/ab_summary.py): a row per batch size, a column per variant.
grep -qxF "median us per round; (change of the mean against base)" "$tmp/run" || { fail "no summary"; cat "$tmp/run"; }
[ "$(grep -cE '^N=(1|8) +[^ ]' "$tmp/run")" = 2 ] || { fail "summary rows"; cat "$tmp/run"; }

# -t: a spent budget starts no timing, says so, and still prints what there is (nothing).
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 -t 0 "$name" samples/two_stage_sum.etir base >"$tmp/out" 2>&1 ||
  { fail "gpu_ab.sh -t 0"; cat "$tmp/out"; }
timeout 120 bash "gpu-out/$name.sh" >"$tmp/run" 2>&1
grep -qxF "the timings' budget (0 s) is spent: the rest not timed" "$tmp/run" || { fail "-t 0: no word of the budget"; cat "$tmp/run"; }
grep -qE '^base N=1 ' "$tmp/run" && fail "-t 0: a timing ran"
grep -qF ": no timings" "$tmp/run" || { fail "-t 0: the summary did not say there was nothing"; cat "$tmp/run"; }
tools/gpu_ab.sh -b "$build" -s N -t 1s "$name" samples/two_stage_sum.etir base >"$tmp/err" 2>&1 && fail "-t 1s was accepted"
grep -qF "gpu_ab.sh: -t takes whole seconds: '1s'" "$tmp/err" || fail "no word of the bad budget: $(cat "$tmp/err")"

# -x OUTPUTS: each variant runs once and its outputs are compared with the first variant's
# (tools/npy_diff.py); without a GPU each run says why it failed. A bad output list is refused.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 -t 0 -x out "$name" samples/two_stage_sum.etir base \
  'ring:--device-define ETC_MM_RING_KIB=64' >"$tmp/out" 2>&1 || { fail "gpu_ab.sh -x"; cat "$tmp/out"; }
bash -n "gpu-out/$name.sh" || fail "-x: the script is not valid bash"
grep -qF -- "--seed 5 --random-outputs --out out=/tmp/ab_x_\${v}_out.npy >/tmp/ab_x.log" "gpu-out/$name.sh" ||
  fail "-x: the script does not write the output"
grep -qF "python3 tools/npy_diff.py /tmp/ab_x_base_out.npy /tmp/ab_x_\${v}_out.npy" "gpu-out/$name.sh" ||
  fail "-x: the script does not compare with the first variant"
timeout 300 bash "gpu-out/$name.sh" >"$tmp/run" 2>&1
n=$(grep -cE '^cross-check (base|ring) N=1 FAILED: .+$|^cross-check ring N=1 out against base: (bit-equal|differ) ' "$tmp/run")
[ "$n" -ge 1 ] || { fail "-x: cross-check lines"; cat "$tmp/run"; }
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N -x 'out,' "$name" samples/two_stage_sum.etir base >"$tmp/err" 2>&1 && fail "-x 'out,' was accepted"
grep -qxF "gpu_ab.sh: -x takes output names, comma-separated: 'out,'" "$tmp/err" || fail "no word of -x's list: $(cat "$tmp/err")"

# LABEL=FATBIN: a fatbin compiled before travels as that variant, beside the compiled ones.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
"$build/etcc" samples/two_stage_sum.etir -arch sm_90a --weight-prefetch -o "$tmp/old.fatbin" || fail "etcc did not compile two_stage_sum"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 "$name" samples/two_stage_sum.etir base "old=$tmp/old.fatbin" \
  'ring:--device-define ETC_MM_RING_KIB=64' >"$tmp/out" 2>&1 || { fail "gpu_ab.sh refused LABEL=FATBIN"; cat "$tmp/out"; }
list=$(tar tJf "gpu-out/$name.tar.xz" 2>/dev/null | sort | tr '\n' ' ')
[ "$list" = "$name/ $name/base.fatbin $name/etc-run $name/old.fatbin $name/ring.fatbin $name/variants.txt " ] ||
  fail "bundle with a given fatbin lists: $list"
tar -xJOf "gpu-out/$name.tar.xz" "$name/old.fatbin" | cmp -s - "$tmp/old.fatbin" || fail "old.fatbin is not the given file"
tar -xJOf "gpu-out/$name.tar.xz" "$name/variants.txt" | grep -qxF "old: $tmp/old.fatbin (compiled before)" ||
  fail "variants.txt lacks where old came from"
grep -qF "for v in base old ring; do" "gpu-out/$name.sh" || fail "the script does not time the given variant in order"

# -w: the script writes the model's weights once and times with them instead of random params.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 -p 7 -w llama3_2_1b "$name" samples/two_stage_sum.etir base >"$tmp/out" 2>&1 ||
  { fail "gpu_ab.sh -w llama3_2_1b"; cat "$tmp/out"; }
grep -qxF "[ -f /tmp/ab_weights_llama3_2_1b.safetensors ] || python3 tools/gen_decode_weights.py llama3_2_1b -o /tmp/ab_weights_llama3_2_1b.safetensors >/dev/null || echo 'weights FAILED: tools/gen_decode_weights.py llama3_2_1b'" "gpu-out/$name.sh" ||
  fail "-w: the script does not write the weights"
grep -qF -- "--bench 20 --mode mega --weights /tmp/ab_weights_llama3_2_1b.safetensors --seed 5 >" "gpu-out/$name.sh" ||
  fail "-w: the script does not time with the weights"
bash -n "gpu-out/$name.sh" || fail "-w: the script is not valid bash"

# LABEL:@OTHER.etir compiles another file; -T also compiles each compiled variant with --profile
# and the script traces each at the first batch size (here without a GPU: it says why), the
# first one alone and the others against it.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
sed 's/module @two_stage_sum/module @two_stage_sum_other/' samples/two_stage_sum.etir >"$tmp/other.etir"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 -T -t 300 "$name" samples/two_stage_sum.etir base "given=$tmp/old.fatbin" \
  "other:@$tmp/other.etir --device-define ETC_MM_RING_KIB=64" >"$tmp/out" 2>&1 || { fail "gpu_ab.sh -T"; cat "$tmp/out"; }
list=$(tar tJf "gpu-out/$name.tar.xz" 2>/dev/null | sort | tr '\n' ' ')
[ "$list" = "$name/ $name/base.fatbin $name/base.prof.fatbin $name/etc-run $name/given.fatbin $name/other.fatbin $name/other.prof.fatbin $name/variants.txt " ] ||
  fail "-T bundle lists: $list"
tar -xJOf "gpu-out/$name.tar.xz" "$name/variants.txt" | grep -qxF "other: etcc $tmp/other.etir -arch sm_90a --megakernel-only --device-define ETC_MM_RING_KIB=64" ||
  fail "variants.txt lacks other's etcc command: $(tar -xJOf "gpu-out/$name.tar.xz" "$name/variants.txt")"
bash -n "gpu-out/$name.sh" || fail "-T: the script is not valid bash"
mkdir -p "$tmp/traces"
OUT="$tmp/traces" timeout 600 bash "gpu-out/$name.sh" >"$tmp/run" 2>&1
if [ "$(grep -cE '^(trace (base|other) N=1 FAILED: .+|== trace base N=1|== trace other against base, N=1)$' "$tmp/run")" != 2 ]; then
  fail "-T: trace lines"; cat "$tmp/run"
fi
grep -q "trace given" "$tmp/run" && fail "-T: a given fatbin was traced"

# A given fatbin with its .prof.fatbin beside it is traced too.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
cp "$tmp/old.fatbin" "$tmp/old.prof.fatbin"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 -U given "$name" samples/two_stage_sum.etir base "given=$tmp/old.fatbin" >"$tmp/out" 2>&1 ||
  { fail "gpu_ab.sh -U given"; cat "$tmp/out"; }
list=$(tar tJf "gpu-out/$name.tar.xz" 2>/dev/null | sort | tr '\n' ' ')
[ "$list" = "$name/ $name/base.fatbin $name/etc-run $name/given.fatbin $name/given.prof.fatbin $name/variants.txt " ] ||
  fail "-U given bundle lists: $list"
grep -qF "trace_given.json" "gpu-out/$name.sh" || fail "-U given: the script does not trace the given fatbin"
rm -f "$tmp/old.prof.fatbin"

# -U LABELS traces only those: the others are compiled once; a label that is not a compiled
# variant is refused, leaving nothing.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N -B 1 -r 1 -U other "$name" samples/two_stage_sum.etir base \
  "other:@$tmp/other.etir --device-define ETC_MM_RING_KIB=64" >"$tmp/out" 2>&1 || { fail "gpu_ab.sh -U"; cat "$tmp/out"; }
list=$(tar tJf "gpu-out/$name.tar.xz" 2>/dev/null | sort | tr '\n' ' ')
[ "$list" = "$name/ $name/base.fatbin $name/etc-run $name/other.fatbin $name/other.prof.fatbin $name/variants.txt " ] ||
  fail "-U bundle lists: $list"
grep -qF "trace_other.json" "gpu-out/$name.sh" || fail "-U: the script does not trace other"
grep -qF "trace_base.json" "gpu-out/$name.sh" && fail "-U: the script traces base"
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N -U nope "$name" samples/two_stage_sum.etir base >"$tmp/err" 2>&1 && fail "-U nope was accepted"
grep -qxF "gpu_ab.sh: -U names 'nope', which is not a variant compiled here or given with its profiled fatbin" "$tmp/err" || fail "no word of -U's label: $(cat "$tmp/err")"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"

# Failures leave nothing behind.
rm -rf "gpu-out/$name" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"
tools/gpu_ab.sh -b "$build" -s N "$name" samples/two_stage_sum.etir base "old=$tmp/none.fatbin" >"$tmp/err" 2>&1 &&
  fail "a missing fatbin was accepted"
grep -qF "gpu_ab.sh: variant 'old': cannot read '$tmp/none.fatbin'" "$tmp/err" || fail "no word of the missing fatbin: $(cat "$tmp/err")"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
tools/gpu_ab.sh -b "$build" -s N "$name" samples/two_stage_sum.etir base 'bad:--device-define NOPE=1' >"$tmp/err" 2>&1 &&
  fail "a variant that does not compile was accepted"
grep -qF "gpu_ab.sh: variant 'bad' did not compile" "$tmp/err" || fail "no word of the failed variant: $(cat "$tmp/err")"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
tools/gpu_ab.sh -b "$build" -s N "$name" samples/two_stage_sum.etir base base >"$tmp/err" 2>&1 && fail "a repeated label was accepted"
grep -qF "two variants are labelled 'base'" "$tmp/err" || fail "no word of the repeated label: $(cat "$tmp/err")"
tools/gpu_ab.sh -b "$build" -s N "$name" samples/two_stage_sum.etir 'a b' >"$tmp/err" 2>&1 && fail "a label with a space was accepted"
grep -qF "a variant's label must be letters" "$tmp/err" || fail "no word of the bad label: $(cat "$tmp/err")"
tools/gpu_ab.sh -b "$build" -s N -B 1,x "$name" samples/two_stage_sum.etir base >"$tmp/err" 2>&1 && fail "-B 1,x was accepted"
tools/gpu_ab.sh -b "$build" -s N -w gpt2 "$name" samples/two_stage_sum.etir base >"$tmp/err" 2>&1 && fail "-w gpt2 was accepted"
grep -qF "gpu_ab.sh: -w takes a model that tools/gen_decode_weights.py knows (llama3_2_1b qwen3_0_6b): 'gpt2'" "$tmp/err" ||
  fail "no word of the unknown model: $(cat "$tmp/err")"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
finish gpu_ab
