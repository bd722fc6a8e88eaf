#!/usr/bin/env bash
# Prepares gpu-bundle/ for tests/gpu/run.sh on a GPU machine that has no compiler toolchain
# for etc (no re2c/bison): etc-run (stripped), the device-op test binary, and every sample
# compiled to a fatbin by this build's etcc. Usage: tools/gpu_bundle.sh [build-dir]
# The compiles run JOBS at a time (default: the CPU count): the decode models' sm_90a compiles
# take minutes each since session 57 inlined their matmuls, and the whole bundle over an hour on
# 2 cores. ONLY=REGEX (extended) makes a partial bundle for a targeted GPU call: only the fatbins
# and device-op test binaries whose file names match are built (etc-run, the runtime library and
# the watchdog tool always are), e.g. ONLY='^llama3_2_1b(_small)?\.fatbin$|^device_ops_test$';
# run.sh skips most rows whose files are absent.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
par="${JOBS:-$(nproc)}"
only="${ONLY:-}"
if [ -n "$only" ]; then
  rc=0; [[ "" =~ $only ]] || rc=$?
  [ "$rc" -ne 2 ] || { echo "gpu_bundle.sh: ONLY is not an extended regex: '$only'" >&2; exit 2; }
fi
# Whether file name $1 goes in the bundle.
wanted() { [ -z "$only" ] || [[ $1 =~ $only ]]; }
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
# Runs a command in the background, at most $par at once; drain waits for every one and fails,
# naming them, if any failed. A command whose output (-o) the bundle does not want is skipped.
spawn() {
  local prev="" a
  for a in "$@"; do
    [ "$prev" != -o ] || wanted "$(basename "$a")" || return 0
    prev=$a
  done
  while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n || true; done
  { "$@" || echo "gpu_bundle.sh: failed: $*" >>"$failures"; } &
}
drain() {
  wait
  if [ -s "$failures" ]; then
    cat "$failures" >&2
    exit 1
  fi
}
cmake --build "$build" -j2 --target etcc etc-run etcrt etc-watchdog-recovery
rm -rf gpu-bundle && mkdir -p gpu-bundle
: >gpu-bundle/auto_schedules.txt
strip -o gpu-bundle/etc-run "$build/tools/etc-run"
strip -o gpu-bundle/etc-watchdog-recovery "$build/tests/etc-watchdog-recovery"
# The runtime library for the Python binding (python/ travels with the working tree).
strip -o gpu-bundle/libetcrt.so "$build/runtime/libetcrt.so"
decode_models="llama3_2_1b qwen3_0_6b"
# What runs as megakernels only (the traces, the decode checks, the warm-up's second fatbin) is
# compiled without the unfused kernels: the same megakernels in about 40% less NVRTC time.
mo=--megakernel-only
# The decode models: one fatbin each for the GPU's sm_90a (the longest compiles, so first), and
# the full Llama with a timeline (etc-run --trace).
for n in $decode_models; do
  spawn "$build/etcc" "samples/$n.etir" -arch sm_90a -o "gpu-bundle/$n.fatbin"
done
# And as a server would ship them, for run.sh's warm-up rows.
for n in $decode_models; do
  spawn "$build/etcc" "samples/$n.etir" -arch sm_90a $mo -o "gpu-bundle/${n}_mo.fatbin"
done
spawn "$build/etcc" samples/llama3_2_1b.etir --profile -arch sm_90a $mo -o gpu-bundle/llama3_2_1b_profile.fatbin
# Every sample as the compiler chooses, and forced to each schedule (the decode models below).
for s in samples/*.etir; do
  n=$(basename "${s%.etir}")
  case " $decode_models " in *" $n "*) continue ;; esac
  # -v says which schedule auto picked and why: run.sh prints it beside the timings.
  if wanted "$n.fatbin"; then
    "$build/etcc" "$s" -v -o "gpu-bundle/$n.fatbin" 2>&1 | grep -E ': schedule ' | sed "s|^|$n: |" >>gpu-bundle/auto_schedules.txt
  fi
  spawn "$build/etcc" "$s" --schedule=static -o "gpu-bundle/${n}_static.fatbin"
  spawn "$build/etcc" "$s" --schedule=dynamic -o "gpu-bundle/${n}_dynamic.fatbin"
done
# The decode layer with attention tasks of two cache heads (heads_per_task = 2: the one-part
# grid's heads through one ring), for run.sh's checks and sanitizer runs.
sed 's/{ head_dim = HEAD }/{ head_dim = HEAD, heads_per_task = 2 }/' samples/llama_layer.etir >gpu-bundle/llama_layer_heads2.etir
grep -q 'heads_per_task = 2' gpu-bundle/llama_layer_heads2.etir || { echo "gpu_bundle.sh: llama_layer's attention changed" >&2; exit 1; }
spawn "$build/etcc" gpu-bundle/llama_layer_heads2.etir --schedule=static -o gpu-bundle/llama_layer_heads2_static.fatbin
# And with heads_per_task = 0 (the count by the batch: a one-part grid per count), both schedules.
sed 's/{ head_dim = HEAD }/{ head_dim = HEAD, heads_per_task = 0 }/' samples/llama_layer.etir >gpu-bundle/llama_layer_heads0.etir
for sched in static dynamic; do
  spawn "$build/etcc" gpu-bundle/llama_layer_heads0.etir --schedule=$sched -o gpu-bundle/llama_layer_heads0_$sched.fatbin
done
# Tasks run by their last notifier (etcc --run-by-last-notifier, opt-in): two_stage_sum's final
# sum, the layer's merge and (B = 1) norm, the MoE block's routing tasks.
for n in two_stage_sum llama_layer moe_block; do
  spawn "$build/etcc" samples/$n.etir --schedule=static --run-by-last-notifier -o "gpu-bundle/${n}_lastnotifier.fatbin"
done
# Profiled builds (etcc --profile) for etc-run --trace.
for n in mlp two_stage_sum moe_block llama_layer; do
  spawn "$build/etcc" samples/$n.etir --profile $mo -o "gpu-bundle/${n}_profile.fatbin"
done
# The decode models' reduced variants (2 layers, a 2048-word vocabulary) for the checks against
# the CPU interpreter, each for the GPU's sm_90a only.
# The variants run as megakernels only (decodecheck, trace): $mo. The default _small.fatbin
# keeps its unfused kernels (the san section runs them).
for n in $decode_models; do
  python3 tools/gen_decode_sample.py "$n" --layers 2 --vocab 2048 >"gpu-bundle/${n}_small.etir"
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a -o "gpu-bundle/${n}_small.fatbin"
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --schedule=dynamic -o "gpu-bundle/${n}_small_dynamic.fatbin"
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --weight-prefetch -o "gpu-bundle/${n}_small_prefetch.fatbin"
  # Without the weight prefetch (the default from session 35 to 70; --no-weight-prefetch).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --no-weight-prefetch -o "gpu-bundle/${n}_small_noprefetch.fatbin"
  # The merges, and at B = 1 the kv_appends and norms, run by their last notifier.
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --run-by-last-notifier -o "gpu-bundle/${n}_small_lastnotifier.fatbin"
  # The weight stream by TMA (ETC_MM_TMA=1; the runtime makes the weights' tensor maps).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --device-define ETC_MM_TMA=1 -o "gpu-bundle/${n}_small_tma.fatbin"
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --profile -o "gpu-bundle/${n}_small_profile.fatbin"
  # Without the o and down projections' plan by range of B (etcc --no-matmul-plan-by-range; Qwen3
  # has none: its parts have no room for it).
  [ "$n" != llama3_2_1b ] ||
    spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --no-matmul-plan-by-range -o "gpu-bundle/${n}_small_nobyrange.fatbin"
  # The merge inside the o projection below B = 16 (etcc --fold-attention-merge, opt-in).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --fold-attention-merge -o "gpu-bundle/${n}_small_foldmerge.fatbin"
  # The norms inside the matmuls that read them below B = 3 (etcc --fold-norms-below 3, opt-in).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --fold-norms-below 3 -o "gpu-bundle/${n}_small_foldnorms.fatbin"
  # The row grid (q/k/v sums, rope, kv_append) inside the attention tasks (etcc --fold-attention,
  # opt-in: every attention grid of the batch's ranges), and the 6-grid layer below B = 3 of the
  # projections without split-K parts (--unsplit) with both folds.
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --fold-attention -o "gpu-bundle/${n}_small_foldattn.fatbin"
  python3 tools/gen_decode_sample.py "$n" --layers 2 --vocab 2048 --unsplit >"gpu-bundle/${n}_small_unsplit.etir"
  spawn "$build/etcc" "gpu-bundle/${n}_small_unsplit.etir" -arch sm_90a $mo --fold-norms-below 3 --fold-attention \
    -o "gpu-bundle/${n}_small_chain.fatbin"
  # Its narrow tiles on wgmma, a's padding aliased (ETC_MM_WG_NARROW, ETC_MM_WG_ALIAS_A; opt-in).
  spawn "$build/etcc" "gpu-bundle/${n}_small_unsplit.etir" -arch sm_90a $mo --fold-norms-below 3 --fold-attention \
    --device-define ETC_MM_WG_NARROW=1 --device-define ETC_MM_WG_ALIAS_A=1 -o "gpu-bundle/${n}_small_chainnarrow.fatbin"
  # The same layer below B = 3 only (etcc --unsplit-below 3), the default's grids from 3 on.
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --unsplit-below 3 --fold-norms-below 3 --fold-attention \
    -o "gpu-bundle/${n}_small_chaincut.fatbin"
  # Temps with disjoint lives sharing tensors (etcc --reuse-temps, opt-in).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --reuse-temps -o "gpu-bundle/${n}_small_reuse.fatbin"
  # The weights streamed across tasks (ETC_MM_STREAM=1, opt-in): the kernel of B <= 31 streams
  # where every matmul can (Llama's; Qwen3's 32-column gated tiles cannot, its sample with
  # 64-column ones can, in a ring of 5 units beside its larger attention blocks).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --device-define ETC_MM_STREAM=1 -o "gpu-bundle/${n}_small_stream.fatbin"
  python3 tools/gen_decode_sample.py "$n" --layers 2 --vocab 2048 --gated-tile-n 64 >"gpu-bundle/${n}_small_g64.etir"
  spawn "$build/etcc" "gpu-bundle/${n}_small_g64.etir" -arch sm_90a $mo --device-define ETC_MM_STREAM=1 \
    --device-define ETC_MM_STREAM_UNITS=5 -o "gpu-bundle/${n}_small_g64_stream.fatbin"
  # Attention tasks of one cache head and one megakernel (heads_per_task = 1, the samples' form
  # before session 54; the default takes the count by the batch, with a kernel per side of 32).
  python3 tools/gen_decode_sample.py "$n" --layers 2 --vocab 2048 --heads-per-task 1 >"gpu-bundle/${n}_small_heads1.etir"
  spawn "$build/etcc" "gpu-bundle/${n}_small_heads1.etir" -arch sm_90a $mo -o "gpu-bundle/${n}_small_heads1.fatbin"
  # The default with more megakernels of B's ranges (etcc --specialize over the graph's cut):
  # each range's grids only.
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --specialize B=16,32,64,128 \
    -o "gpu-bundle/${n}_small_ranges.fatbin"
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --specialize B=16,32,64,128 --schedule=dynamic \
    -o "gpu-bundle/${n}_small_ranges_dynamic.fatbin"
  # The default attention (tensor cores in independent warps, its call in the task) behind the
  # op function's call (ETC_INLINE_ATTENTION=0), and the forms before it (ETC_ATTN_MMA_WARPS=0:
  # the staged tensor-core form, and Qwen3's FMA warps).
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --device-define ETC_INLINE_ATTENTION=0 \
    -o "gpu-bundle/${n}_small_called.fatbin"
  spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --device-define ETC_ATTN_MMA_WARPS=0 \
    --device-define ETC_INLINE_ATTENTION=0 -o "gpu-bundle/${n}_small_nommawarps.fatbin"
  # Qwen3's attention (2 query heads a cache head) in its earlier forms (ETC_ATTN_WARPS=0): FMA
  # throughout, as before tensor cores took its calls of a block or more (ETC_ATTN_MMA_MIN_G),
  # and staged with tensor cores, as before the FMA form of independent warps became its default.
  if [ "$n" = qwen3_0_6b ]; then
    spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --device-define ETC_ATTN_WARPS=0 \
      --device-define ETC_ATTN_MMA_MIN_G=4 -o "gpu-bundle/${n}_small_fma.fatbin"
    spawn "$build/etcc" "gpu-bundle/${n}_small.etir" -arch sm_90a $mo --device-define ETC_ATTN_WARPS=0 \
      --device-define ETC_ATTN_MMA_WARPS=0 -o "gpu-bundle/${n}_small_staged.fatbin"
  fi
done
# Programs that wait forever, compiled without verify-schedule: the watchdog must stop them.
for s in tests/gpu/hang/*.etir; do
  n=$(basename "${s%.etir}")
  for sched in static dynamic; do
    spawn "$build/etcc" "$s" --no-verify-schedule --schedule=$sched -o "gpu-bundle/hang_${n}_$sched.fatbin"
  done
done
# A fatbin without code for Hopper: etc-run must refuse it on an H100/H200 and list what it has.
spawn "$build/etcc" samples/two_stage_sum.etir -arch sm_80 -o gpu-bundle/sm80_only.fatbin
# Decode attention alone in a megakernel, at each model's shape, in each of its forms: the
# default (tensor cores in independent warps, the call in the task), the same behind the op
# function's call (ETC_INLINE_ATTENTION=0), and the forms before it (ETC_ATTN_MMA_WARPS=0): FMA
# in independent warps wherever they apply (ETC_ATTN_WARPS=8), staged on tensor cores
# (ETC_ATTN_WARPS=0), and the previous default; run.sh's attn section times them.
for n in llama3_2_1b qwen3_0_6b; do
  for v in default:"" called:"--device-define ETC_INLINE_ATTENTION=0" \
           warps:"--device-define ETC_ATTN_MMA_WARPS=0 --device-define ETC_ATTN_WARPS=8" \
           staged:"--device-define ETC_ATTN_MMA_WARPS=0 --device-define ETC_ATTN_WARPS=0" \
           nommawarps:"--device-define ETC_ATTN_MMA_WARPS=0 --device-define ETC_INLINE_ATTENTION=0"; do
    # shellcheck disable=SC2086  # the options are words
    spawn "$build/etcc" "tests/gpu/resources/attention_alone_$n.etir" -arch sm_90a ${v#*:} \
      -o "gpu-bundle/attention_alone_${n}_${v%%:*}.fatbin"
  done
done
# A kernel that needs more shared memory than any GPU has, written despite the compile-time
# check: the runtime's load-time check must refuse it with what to change.
spawn "$build/etcc" tests/gpu/resources/smem_too_large.etir -arch sm_90a -arch sm_80 --no-check-resources \
  -o gpu-bundle/smem_too_large.fatbin 2>/dev/null
# Rebuilt when a device header or a device test is newer than it (a stale one tests old code).
# Decode attention's forms by ETC_ATTN_MMA_WARPS and ETC_ATTN_WARPS (the most query heads a cache
# head that take the FMA form of independent warps): the defaults in the first binary (tensor
# cores in independent warps wherever they apply); without them (ETC_ATTN_MMA_WARPS=0) every
# shape the FMA form admits in the second (8), none in the third (0: the staged and tensor-core
# forms), and the previous defaults in the fourth. The third also keeps the matmul tiles under
# 64 rows on mma.sync (ETC_MM_WGMMA_MIN_ROWS=33), the form sm_80 runs, which the default gives
# only to the odd shapes on sm_90a, and calls it as an inlined megakernel does
# (DEVICE_TEST_MM_FALLBACK_CALL). The fifth has the narrow wgmma tiles and a's aliased padding
# (ETC_MM_WG_NARROW, ETC_MM_WG_ALIAS_A; opt-in), the sixth each stage's K split between the
# warpgroups in the 32-row tiles and the 128-column ones too (ETC_MM_WG_KSPLIT_ROWS and _MAX_N
# beyond their defaults, which split only the 16-row tiles of 64 columns). The variants are for
# sm_90a only.
for t in device_ops_test:"" device_ops_test_warps:"-DETC_ATTN_MMA_WARPS=0 -DETC_ATTN_WARPS=8" \
         device_ops_test_staged:"-DETC_ATTN_MMA_WARPS=0 -DETC_ATTN_WARPS=0 -DETC_MM_WGMMA_MIN_ROWS=33 -DDEVICE_TEST_MM_FALLBACK_CALL=1" \
         device_ops_test_nommawarps:-DETC_ATTN_MMA_WARPS=0 \
         device_ops_test_narrow:"-DETC_MM_WG_NARROW=1 -DETC_MM_WG_ALIAS_A=1" \
         device_ops_test_ksplit:"-DETC_MM_WG_KSPLIT_ROWS=64 -DETC_MM_WG_KSPLIT_MAX_N=128"; do
  bin=${t%%:*}
  wanted "$bin" || continue
  if [ ! -x "$build/gpu/$bin" ] ||
     [ -n "$(find runtime/include/etc/device tests/gpu -name '*.cu*' -newer "$build/gpu/$bin" | head -1)" ]; then
    NVCC_FLAGS=${t#*:} HOPPER_ONLY=${t#*:} tests/gpu/build_device_test.sh "$build/gpu/$bin"
  fi
  cp "$build/gpu/$bin" gpu-bundle/
done
drain
du -sh gpu-bundle
# The whole folder is over 64 MiB (the full decode models), more than a lent GPU machine takes
# with a working tree; compressed it is about 19 MB (session 48). run.sh unpacks it where gpu-bundle/ is absent.
tar cJf gpu-bundle.tar.xz gpu-bundle
ls -l gpu-bundle.tar.xz
