#!/usr/bin/env bash
# Builds an A/B comparison for the GPU machine: one model compiled once per variant (etcc
# options, always with --megakernel-only: only megakernels run there), with a stripped
# etc-run, packed into gpu-out/NAME.tar.xz beside gpu-out/NAME.sh, a script that times every
# variant there (megakernel, etc-run --bench) at every batch size, the variants alternating
# within each batch size and the whole table repeated ROUNDS times, so that drift on the
# machine shows as disagreement between rounds rather than as a difference.
#
#   tools/gpu_ab.sh [options] NAME MODEL.etir LABEL[:ETCC OPTIONS]... [LABEL=FATBIN]...
#   then on the GPU machine (device tool): carry gpu-out/NAME.tar.xz and gpu-out/NAME.sh, run
#   bash gpu-out/NAME.sh   (where $OUT names a folder, its output also goes to $OUT/ab_NAME.log)
#
# LABEL=FATBIN takes a fatbin compiled before (say by an older etcc, to time HEAD's code against
# a previous commit's) instead of compiling MODEL: it must be MODEL's. Where FATBIN's name ends
# in .fatbin and the same name ending in .prof.fatbin is beside it (its etcc --profile compile),
# -T and -U trace it too.
# LABEL:@OTHER.etir OPTIONS compiles OTHER.etir instead of MODEL: the same model written another
# way (the same tensors; e.g. tools/gen_decode_sample.py --unsplit's projections).
#
# Options (before NAME):
#   -b DIR      build directory with etcc and etc-run (default build)
#   -B LIST     batch sizes, comma-separated (default 1,16,128)
#   -s SYM      the batch-size sym (default B)
#   -p POS      every request at position POS: an i32 input `pos` of B elements (decode models)
#   -n RUNS     launches timed per measurement (default 20)
#   -r ROUNDS   rounds of the whole table (default 2)
#   -a ARCH     etcc -arch (default sm_90a: the lent GPUs are Hopper)
#   -c ARGS     also check each variant against the CPU interpreter once, at the first batch
#               size, with these extra etc-run arguments (for example '--random-outputs')
#   -x OUTPUTS  also run each variant once at the first batch size with the timings' inputs and
#               a random past (--random-outputs, one seed for all), write these outputs
#               (comma-separated, e.g. logits,next_token) and compare each variant's with the
#               first variant's (tools/npy_diff.py: bit-equal, or by how much they differ):
#               seconds a variant where -c's CPU reference of a decode model takes minutes
#   -t SECONDS  the script's budget (default 540), counted from its start: it starts no timing
#               that would end past it, judged by the last timing's length (a lent GPU machine's
#               command limit is 600 s), then prints the table (tools/ab_summary.py) of what it timed
#   -w MODEL    time with weights that tools/gen_decode_weights.py MODEL writes (once, on the
#               GPU machine, to /tmp/ab_weights_MODEL.safetensors) instead of --seed's random
#               params: for a decode model, about 15 s a timing instead of 25 (the host then
#               draws no billion random numbers before each)
#   -T          also trace each compiled variant once at the first batch size, after the
#               timings (each compiled again with etcc --profile: LABEL.prof.fatbin), and print
#               tools/trace_stages.py of each against the first variant's trace (where the time
#               goes) and its --layer 5 (a decode layer's grids by their first op); under $OUT
#               the traces stay there (trace_LABEL.json). LABEL=FATBIN variants
#               are traced only with a profiled fatbin beside them (above).
#   -U LABELS   like -T, for these variants only (comma-separated): each traced one costs a second
#               compile, minutes for a decode model on 2 cores
#
# Example: tools/gpu_ab.sh -p 511 -B 1,128 tiling samples/llama3_2_1b.etir base \
#            'one:--device-define ETC_MM_LARGE_M_FM=0'
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
build=build batches=1,16,128 sym=B pos="" runs=20 rounds=2 arch=sm_90a weights="" budget=540 trace=0 trace_only=
cross=""
unset check  # -c '' is a check without extra arguments
while getopts "b:B:s:p:n:r:a:c:t:w:x:TU:h" o; do
  case $o in
    b) build=$OPTARG ;; B) batches=$OPTARG ;; s) sym=$OPTARG ;; p) pos=$OPTARG ;;
    n) runs=$OPTARG ;; r) rounds=$OPTARG ;; a) arch=$OPTARG ;; c) check=$OPTARG ;;
    t) budget=$OPTARG ;; w) weights=$OPTARG ;; x) cross=$OPTARG ;; T) trace=1 ;; U) trace=1 trace_only=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 3 ] || usage
name=$1 model=$2
shift 2
die() { echo "gpu_ab.sh: $*" >&2; exit 1; }
[[ $name =~ ^[A-Za-z0-9_.-]+$ ]] || die "NAME must be letters, digits, '.', '_' or '-': '$name'"
[ -f "$model" ] || die "cannot read '$model'"
[[ $batches =~ ^[0-9]+(,[0-9]+)*$ ]] || die "-B takes batch sizes like 1,16,128: '$batches'"
for n in "$runs" "$rounds"; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "-n and -r take positive integers: '$n'"; done
[[ $budget =~ ^[0-9]+$ ]] || die "-t takes whole seconds: '$budget'"
[ -z "$cross" ] || [[ $cross =~ ^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$ ]] ||
  die "-x takes output names, comma-separated: '$cross'"
[ -z "$pos" ] || [[ $pos =~ ^[0-9]+$ ]] || die "-p takes a position: '$pos'"
if [ -n "$weights" ]; then
  known=$(python3 -c 'import sys; sys.path.insert(0, "tools"); from gen_decode_sample import MODELS; print(*sorted(MODELS))') ||
    die "cannot read the models of tools/gen_decode_sample.py"
  [[ " $known " == *" $weights "* ]] || die "-w takes a model that tools/gen_decode_weights.py knows ($known): '$weights'"
fi
[ -x "$build/etcc" ] && [ -x "$build/tools/etc-run" ] || die "no etcc or etc-run in '$build' (build first)"

dir=gpu-out/$name
# Nothing is left behind on a failure (a variant that does not compile, say).
done_ok=0
trap '[ $done_ok = 1 ] || rm -rf "$dir" "gpu-out/$name.tar.xz" "gpu-out/$name.sh"' EXIT
rm -rf "$dir" && mkdir -p "$dir"
labels=() traced=()
# Whether -T or -U asks for a trace of variant $1.
traced_label() { [ "$trace" = 1 ] && { [ -z "$trace_only" ] || [[ ",$trace_only," == *",$1,"* ]]; }; }
for v in "$@"; do
  given=""
  if [[ ${v%%=*} =~ ^[A-Za-z0-9_-]+$ && $v == *=* ]]; then
    label=${v%%=*} given=${v#*=}
  else
    label=${v%%:*}
  fi
  opts=""
  [[ -z $given && $v == *:* ]] && opts=${v#*:}
  [[ $label =~ ^[A-Za-z0-9_-]+$ ]] || die "a variant's label must be letters, digits, '_' or '-': '$label'"
  for l in "${labels[@]}"; do [ "$l" != "$label" ] || die "two variants are labelled '$label'"; done
  labels+=("$label")
  if [ -n "$given" ]; then
    [ -f "$given" ] || die "variant '$label': cannot read '$given'"
    cp "$given" "$dir/$label.fatbin"
    echo "$label: $given (compiled before)" >>"$dir/variants.txt"
    prof=${given%.fatbin}.prof.fatbin
    if traced_label "$label" && [[ $given == *.fatbin && -f $prof ]]; then
      cp "$prof" "$dir/$label.prof.fatbin"
      traced+=("$label")
    fi
    continue
  fi
  src=$model
  if [[ $opts == @* ]]; then
    src=${opts%% *} opts=${opts#"$src"} src=${src#@} opts=${opts# }
    [ -f "$src" ] || die "variant '$label': cannot read '$src'"
  fi
  # The script runs megakernels only (--mode mega, and --check's default): etcc leaves the
  # unfused kernels out, about 40% of a decode model's NVRTC time (the megakernels' code is the
  # same either way).
  [[ " $opts " == *" --megakernel-only "* ]] || opts="--megakernel-only${opts:+ $opts}"
  # Options are split on spaces, as on a command line (no quoting inside them).
  # shellcheck disable=SC2086
  "$build/etcc" "$src" -arch "$arch" $opts -o "$dir/$label.fatbin" || die "variant '$label' did not compile"
  echo "$label: etcc $src -arch $arch${opts:+ $opts}" >>"$dir/variants.txt"
  if traced_label "$label"; then
    # shellcheck disable=SC2086
    "$build/etcc" "$src" -arch "$arch" $opts --profile -o "$dir/$label.prof.fatbin" ||
      die "variant '$label' did not compile with --profile"
    traced+=("$label")
  fi
done
for l in ${trace_only//,/ }; do
  [[ " ${traced[*]} " == *" $l "* ]] || die "-U names '$l', which is not a variant compiled here or given with its profiled fatbin"
done
strip -o "$dir/etc-run" "$build/tools/etc-run"
tar -C gpu-out -cJf "gpu-out/$name.tar.xz" "$name"

{
  echo "# A/B '$name' (tools/gpu_ab.sh): $model; variants in gpu-out/$name/variants.txt."
  echo "set -u"
  # Under a lent GPU machine's \$OUT the output also goes to a file there, which comes back
  # even when the call's time limit stops the script (a pipe's output would not).
  echo "[ -n \"\${OUT:-}\" ] && [ -d \"\$OUT\" ] && exec > >(tee -a \"\$OUT/ab_$name.log\") 2>&1"
  echo "rm -rf gpu-out/$name && mkdir -p gpu-out && tar -C gpu-out -xJf gpu-out/$name.tar.xz"
  echo "D=gpu-out/$name; R=\$D/etc-run"
  echo "nvidia-smi --query-gpu=name,driver_version --format=csv,noheader"
  echo "cat \$D/variants.txt"
  echo "why() { { grep -E 'FAIL|rror|etc-run:' \"\$1\" || tail -1 \"\$1\"; } | head -2 | tr '\\n' ' '; }  # what a failed etc-run said"
  in=""
  if [ -n "$pos" ]; then
    echo "python3 -c \"import numpy as np; [np.save(f'/tmp/ab_pos{b}.npy', np.full(b, $pos, np.int32)) for b in ($batches,)]\""
    in="--in pos=/tmp/ab_pos\$b.npy"
  fi
  timing_inputs="--seed 5"
  if [ -n "$weights" ]; then
    wf=/tmp/ab_weights_$weights.safetensors
    echo "[ -f $wf ] || python3 tools/gen_decode_weights.py $weights -o $wf >/dev/null || echo 'weights FAILED: tools/gen_decode_weights.py $weights'"
    timing_inputs="--weights $wf --seed 5"
  fi
  if [ -n "${check+set}" ]; then
    b0=${batches%%,*}
    echo "b=$b0"
    for l in "${labels[@]}"; do
      echo "timeout 300 \$R \$D/$l.fatbin --sym $sym=\$b $in --check --seed 9 $check >/tmp/ab_check.log 2>&1; rc=\$?"
      echo "if [ \$rc -eq 0 ]; then echo \"check $l $sym=\$b passed: \$(grep -oE 'rel L2 [0-9.e+-]+' /tmp/ab_check.log | sort -u | tr '\\n' ' ')\";" \
        "else echo \"check $l $sym=\$b FAILED (exit \$rc): \$(why /tmp/ab_check.log)\"; fi"
    done
  fi
  if [ -n "$cross" ]; then
    # Each variant's outputs against the first's: same inputs, weights and random past.
    b0=${batches%%,*} first=${labels[0]} outs=""
    for o in ${cross//,/ }; do outs+=" --out $o=/tmp/ab_x_\${v}_$o.npy"; done
    echo "b=$b0; rm -f /tmp/ab_x_*.npy"
    echo "for v in ${labels[*]}; do"
    echo "  timeout 120 \$R \$D/\$v.fatbin --sym $sym=\$b $in $timing_inputs --random-outputs$outs >/tmp/ab_x.log 2>&1 ||" \
         "echo \"cross-check \$v $sym=\$b FAILED: \$(why /tmp/ab_x.log)\""
    echo "  [ \$v = $first ] && continue"
    for o in ${cross//,/ }; do
      echo "  [ -f /tmp/ab_x_${first}_$o.npy ] && [ -f /tmp/ab_x_\${v}_$o.npy ] &&" \
           "echo \"cross-check \$v $sym=\$b $o against $first: \$(python3 tools/npy_diff.py /tmp/ab_x_${first}_$o.npy /tmp/ab_x_\${v}_$o.npy)\""
    done
    echo "done"
  fi
  # The budget counts from the script's start (checks and weights included); a timing starts
  # only if one as long as the last would end within it.
  echo ": >/tmp/ab_$name.log; last=0"
  echo "for round in \$(seq $rounds); do"
  echo "  for b in ${batches//,/ }; do"
  echo "    for v in ${labels[*]}; do"
  echo "      if [ \$((SECONDS + last)) -ge $budget ]; then echo \"the timings' budget ($budget s) is spent: the rest not timed\"; break 3; fi"
  echo "      t0=\$SECONDS"
  echo "      timeout 120 \$R \$D/\$v.fatbin --sym $sym=\$b $in --bench $runs --mode mega $timing_inputs >/tmp/ab_bench.log 2>&1"
  echo "      rc=\$?; last=\$((SECONDS - t0)); line=\$(grep -m1 'median' /tmp/ab_bench.log) || line=\"FAILED (exit \$rc): \$(why /tmp/ab_bench.log)\""
  echo "      echo \"\$v $sym=\$b \$line\" | tee -a /tmp/ab_$name.log"
  echo "    done"
  echo "  done"
  echo "done"
  echo "python3 tools/ab_summary.py /tmp/ab_$name.log"
  if [ ${#traced[@]} -gt 0 ]; then
    # Where the time goes: a trace of each at the first batch size, against the first one's, and
    # one layer's grids by their first op (layer 5: a decode model's, past the first layers).
    b0=${batches%%,*} first=${traced[0]} layer=5
    echo "b=$b0; T=\${OUT:-/tmp}"
    for l in "${traced[@]}"; do
      echo "if [ \$((SECONDS + 60)) -ge $budget ]; then echo \"the budget ($budget s) is spent: $l not traced\"; else"
      echo "  rm -f \$T/trace_$l.json; timeout 120 \$R \$D/$l.prof.fatbin --sym $sym=\$b $in $timing_inputs --trace \$T/trace_$l.json >/tmp/ab_trace.log 2>&1 ||" \
           "echo \"trace $l $sym=\$b FAILED: \$(why /tmp/ab_trace.log)\""
      if [ "$l" = "$first" ]; then
        echo "  [ -f \$T/trace_$l.json ] && echo \"== trace $l $sym=\$b\" && python3 tools/trace_stages.py \$T/trace_$l.json --top 30 | tail -32"
      else
        echo "  [ -f \$T/trace_$l.json ] && [ -f \$T/trace_$first.json ] && echo \"== trace $l against $first, $sym=\$b\" &&" \
             "python3 tools/trace_stages.py \$T/trace_$l.json --against \$T/trace_$first.json | head -60"
      fi
      echo "  [ -f \$T/trace_$l.json ] && python3 tools/trace_stages.py \$T/trace_$l.json --layer $layer"
      echo "fi"
    done
  fi
} >"gpu-out/$name.sh"
done_ok=1
echo "gpu-out/$name.tar.xz ($(du -h "gpu-out/$name.tar.xz" | cut -f1)) and gpu-out/$name.sh: carry both, run bash gpu-out/$name.sh"
