#!/usr/bin/env bash
# Command-line behaviour of etcc: exit codes, messages, outputs, hostile inputs.
# Usage: etcc_cli_test.sh ETCC MLP_FATBIN   (run from the repository root; MLP_FATBIN: samples/mlp.etir
# compiled with etcc's defaults, by the samples/mlp/compile test)
set -uo pipefail
etcc=$1
mlp_fatbin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0 passed=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passed=$((passed + 1)); }

# run NAME EXPECTED_RC ARGS... : runs etcc with a time limit (LIMIT seconds, default 10; a
# compile through NVRTC gets more, sanitized builds on 2 busy cores are slow); stdout ->
# $tmp/out, stderr -> $tmp/err
# Each run's seconds go to $tmp/times: the slowest are printed at the end (CI's time budget).
run() {
  local name=$1 want=$2 t0=$EPOCHREALTIME
  shift 2
  timeout "${LIMIT:-10}" "$etcc" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  echo "$t0 $EPOCHREALTIME $name" >>"$tmp/times"
  if [ "$rc" -ne "$want" ]; then
    fail "$name: exit status $rc, expected $want"; sed 's/^/  | /' "$tmp/err" | head -20
    return 1
  fi
  pass
}
stderr_is() {  # NAME EXPECTED_TEXT
  if [ "$(cat "$tmp/err")" != "$2" ]; then
    fail "$1: stderr differs"; diff <(echo "$2") "$tmp/err" | head -20
  else pass; fi
}
stderr_has() {  # NAME TEXT
  if ! grep -qF -- "$2" "$tmp/err"; then fail "$1: stderr lacks '$2'"; sed 's/^/  | /' "$tmp/err" | head -10; else pass; fi
}
smem_is() {  # NAME KERNEL STATIC+DYNAMIC: the kernel's shared memory in --resource-usage's table
  if ! awk -v k="$2" -v m="$3" '$1 == k && $5 == m { found = 1 } END { exit !found }' "$tmp/err"; then
    fail "$1: $2 does not reserve $3 bytes"; grep -F -- "$2" "$tmp/err" | sed 's/^/  | /' | head -5; else pass; fi
}
stdout_has() {
  if ! grep -qF -- "$2" "$tmp/out"; then fail "$1: stdout lacks '$2'"; sed 's/^/  | /' "$tmp/out" | head -10; else pass; fi
}

# ---- files that cannot be read ----------------------------------------------------------
run missing 1 "$tmp/nope.etir" && stderr_is missing "etcc: error: cannot read '$tmp/nope.etir': No such file or directory"
run directory 1 "$tmp" && stderr_is directory "etcc: error: cannot read '$tmp': is a directory"

# ---- options ----------------------------------------------------------------------------
run help 0 --help && stdout_has help "--emit" && stdout_has help "--verify-diagnostics"
run version 0 --version && stdout_has version "etcc "
run unknown-flag 1 --bogus samples/mlp.etir
run emit-unknown 1 --emit=llvm samples/mlp.etir
run arch-unknown 1 --emit=cuda -arch sm_9x samples/two_stage_sum.etir && stderr_has arch-unknown "unknown architecture 'sm_9x'"
run cubin-two-archs 1 --emit=cubin samples/two_stage_sum.etir && stderr_has cubin-two-archs "name exactly one with -arch"
run cubin-virtual 1 --emit=cubin --arch=compute_90 samples/two_stage_sum.etir && stderr_has cubin-virtual "needs a real architecture"
run emit-cuda 0 --emit=cuda samples/two_stage_sum.etir && stdout_has emit-cuda "etc_main_mega" && stdout_has emit-cuda "etc_descriptor"
run emit-tasks 0 --emit=tasks samples/mlp.etir && stdout_has emit-tasks "task @matmul_act" && stdout_has emit-tasks "wait ev_" &&
  stdout_has emit-tasks '{ transpose_b, act = "silu_mul", tile_k = 128 } -> act[:, i * 64 : min(I, i * 64 + 64)]'
# --no-gated-matmul keeps the gate/up matmul and the silu_mul as grids of their own.
run no-gated-matmul 0 --emit=tasks --no-gated-matmul samples/mlp.etir && stdout_has no-gated-matmul "task @matmul_gate_up" &&
  stdout_has no-gated-matmul "task @silu_mul_act"
LIMIT=120 run emit-ptx 0 --emit=ptx -arch compute_80 samples/two_stage_sum.etir && stdout_has emit-ptx ".target sm_80"
# A small MLP (a gated matmul, then one that waits for it; B up to 8, so one tile size: NVRTC
# takes 4 s on it where the mlp sample's tiles up to 128 rows take 12 and more).
printf 'module @small_mlp\nsym B in [1, 8]\ntensor x : bf16[B, 256] input\ntensor wg : bf16[512, 256] param\ntensor wu : bf16[512, 256] param\ntensor wd : bf16[256, 512] param\ntensor y : bf16[B, 256] output\ngraph @main {\n  a = matmul(x, wg, wu) { transpose_b, act = "silu_mul" }\n  y = matmul(a, wd) { transpose_b }\n}\n' >"$tmp/small_mlp.etir"
# --emit=tasks prints .etir that compiles to the byte-identical fatbin.
run tasks-form 0 "$tmp/small_mlp.etir" --emit=tasks -o "$tmp/mlp_tasks.etir"
LIMIT=300 run fatbin-from-ops 0 "$tmp/small_mlp.etir" -arch sm_80 -o "$tmp/ops.fatbin"
LIMIT=300 run fatbin-from-tasks 0 "$tmp/mlp_tasks.etir" --arch=sm_80 -o "$tmp/tasks.fatbin"
cmp -s "$tmp/ops.fatbin" "$tmp/tasks.fatbin" && pass || fail "tasks-roundtrip: the task-level form compiles to a different fatbin"
# And the mlp sample's task-level form (norms, the residual's add) to the same CUDA.
run mlp-tasks-form 0 samples/mlp.etir --emit=tasks -o "$tmp/mlp_sample_tasks.etir" &&
  run mlp-cuda-from-ops 0 samples/mlp.etir --emit=cuda -o "$tmp/mlp_ops.cu" &&
  run mlp-cuda-from-tasks 0 "$tmp/mlp_sample_tasks.etir" --emit=cuda -o "$tmp/mlp_tasks.cu" &&
  { cmp -s "$tmp/mlp_ops.cu" "$tmp/mlp_tasks.cu" && pass || fail "mlp-tasks-roundtrip: the task-level form emits different CUDA"; }
# A compile that NVRTC rejects (here: no toolkit headers) is an error with NVRTC's log, and no output.
# Schedules: --schedule overrides the source and auto; -v says which and why.
run schedule-auto 0 --emit=tasks -v samples/mlp.etir && stderr_has schedule-auto "etcc: graph @main: schedule static (cost model" &&
  stdout_has schedule-auto "graph @main schedule static {"
run schedule-data 0 --emit=tasks -v samples/moe_block.etir &&
  stderr_has schedule-data "schedule static (cost model at the sym upper bounds and the data-dependent grid of @grouped_matmul_act at its bound"
run schedule-forced 0 --emit=tasks -v --schedule=dynamic samples/two_stage_sum.etir &&
  stderr_has schedule-forced "etcc: graph @main: schedule dynamic (--schedule)" && stdout_has schedule-forced "graph @main schedule dynamic {"
run schedule-written 0 --emit=tasks -v samples/two_stage_sum.etir && stderr_has schedule-written "schedule static (written in the source)"
run schedule-bad 1 --schedule=fast samples/mlp.etir && stderr_has schedule-bad "--schedule: fast not in {auto,static,dynamic}"
# The dynamic megakernel: its queue loop and readiness code in the CUDA; compiled by NVRTC.
# A data grid's task reads its extent after the wait that orders the data (event 1, on @count,
# the writer of what the extent loads) and, past the extent, skips the other wait (event 0, on
# @t) too.
run data-grid-skip 0 --emit=cuda tests/golden/passes/elim_data_grid.etir &&
  if awk '/bool task_d\(/,/^}/' "$tmp/out" | grep -oE 'WaitSite\{2, [01],|c0 < x0' | uniq | tr '\n' ' ' |
     grep -qxF 'WaitSite{2, 1, c0 < x0 WaitSite{2, 0, '; then pass
  else fail "data-grid-skip: @d does not wait for the data, read its extent, then wait for @t"; fi
run dynamic-cuda 0 --emit=cuda --schedule=dynamic samples/mlp.etir && stdout_has dynamic-cuda "etc::dev::sched_pop(p, s, (unsigned)total, claimed)" &&
  stdout_has dynamic-cuda "__device__ __noinline__ void etc_ready<0>" && stdout_has dynamic-cuda "unsigned waits_matmul_down(const EtcParams& p, long long t)"
# Weight prefetch (--weight-prefetch: in every matmul task; by default only after the chain,
# below): a matmul of a param starts loading its weights before its task's first wait (the static
# schedule spins there); the silu_mul task (no matmul) prefetches nothing.
prefetch_before_wait() {  # NAME TASK: in task TASK's function, the prefetch precedes the first wait
  if awk -v t="task_$2(" 'index($0, "bool " t) {f = 1} f && /etc_prefetched = true/ {p = NR} f && /etc::dev::wait\(/ {w = NR; exit}
       END {exit !(p && w && p < w)}' "$tmp/out"; then pass; else fail "$1: no weight prefetch before the first wait of @$2"; fi
}
run prefetch 0 --emit=cuda --weight-prefetch samples/mlp.etir && stdout_has prefetch "etc::dev::matmul_prefetch<16, 64, 128>(ctx, a0, a1, true);" &&
  prefetch_before_wait prefetch matmul_down &&
  if awk '/bool task_silu_mul_act\(/ {f = 1} f && /^}/ {exit} f && /prefetch/ {found = 1} END {exit !found}' "$tmp/out"; then
    fail "prefetch: @silu_mul_act prefetches"; else pass; fi
run no-prefetch 0 --emit=cuda --no-weight-prefetch samples/mlp.etir &&
  if grep -q matmul_prefetch "$tmp/out"; then fail "no-prefetch: the CUDA prefetches"; else pass; fi
# --parallel-waits: a static task's run of waits becomes one WaitGroup (a check per event element,
# one join), the dynamic schedule's debug checks stay waits; without it, no group. The paged
# llama layer's attention task waits on two events (kv_append's and kv_ranges', each a counter
# that other grids wait on too) in one group. NVRTC compiles the groups, with --profile too (the
# group's own wait time), on wait_load below (a whole layer took NVRTC 18 s of the test's time).
run parallel-waits 0 --emit=cuda --parallel-waits samples/llama_layer_paged.etir &&
  if awk '/etc::dev::WaitGroup etc_wg;/ {g = 1; c = 0} g && /etc_wg.check\(/ {c++} g && /etc_wg.join\(\)/ {if (c >= 2) two = 1; g = 0}
         END {exit !two}' "$tmp/out"; then pass; else fail "parallel-waits: no group of two or more checks"; fi &&
  stdout_has parallel-waits "if (!etc_wg.join()) return false;" && stdout_has parallel-waits "if (!etc::dev::wait(p, p.events + lin,"
# A wait whose slice loads data is checked in a group of its own, after the group before it
# (its bounds may read what that group guards): here a[0], then b[0 : load(idx[0])], then b[7].
cat >"$tmp/wait_load.etir" <<'ETIR'
module @wait_load
sym N in [1, 64]
tensor x : f32[N] input
tensor idx : i32[1] input
tensor y : f32[N] output
event a : [1] init 1
event b : [8] init 1
task @first grid [1] (i) {
  copy(x) -> y
  notify a[0]
}
task @others grid [8] (j) {
  notify b[j]
}
task @reader grid [1] (i) {
  wait a[0]
  wait b[0 : load(idx[0])]
  wait b[7]
  copy(x) -> y
}
graph @main {
  run @first
  run @others
  run @reader
}
ETIR
run parallel-waits-load 0 --emit=cuda --parallel-waits "$tmp/wait_load.etir" &&
  if [ "$(grep -c 'etc::dev::WaitGroup etc_wg;' "$tmp/out")" = 3 ]; then pass; else
    fail "parallel-waits-load: $(grep -c 'etc::dev::WaitGroup etc_wg;' "$tmp/out") groups, expected 3"; fi
LIMIT=300 run parallel-waits-nvrtc 0 "$tmp/wait_load.etir" -arch sm_90a --parallel-waits --profile -o "$tmp/pw.fatbin"
run no-parallel-waits 0 --emit=cuda samples/llama_layer.etir &&
  if grep -q WaitGroup "$tmp/out"; then fail "no-parallel-waits: a WaitGroup without the flag"; else pass; fi
# --specialize SYM=C1,...: one megakernel a range (tests/golden/passes/specialize.etir shows which
# grids each keeps); a sym the module lacks, cuts that do not increase within the sym's range and
# text of another form are refused, with no output left behind.
sp=tests/golden/passes/specialize.etir
run specialize-kernels 0 --emit=cuda --specialize B=16,64 "$sp" &&
  if [ "$(grep -o '__global__ void __launch_bounds__(256, ETC_MIN_CTAS_PER_SM) etc_main_mega[A-Za-z0-9_]*' "$tmp/out" | sed 's/.* //')" != \
       "$(printf 'etc_main_mega_B1_15\netc_main_mega_B16_63\netc_main_mega_B64_128')" ]; then
    fail "specialize-kernels: not one megakernel a range"; grep 'etc_main_mega' "$tmp/out" | head -5; else pass; fi
LIMIT=300 run specialize-nvrtc 0 "$sp" -arch sm_90a --specialize B=16,64 -o "$tmp/sp_ok.fatbin" &&
  if [ -s "$tmp/sp_ok.fatbin" ]; then pass; else fail "specialize-nvrtc: no fatbin"; fi
LIMIT=300 run specialize-dynamic-nvrtc 0 "$sp" -arch sm_90a --schedule=dynamic --specialize B=16,64 -o "$tmp/sp_dyn.fatbin" &&
  if [ -s "$tmp/sp_dyn.fatbin" ]; then pass; else fail "specialize-dynamic-nvrtc: no fatbin"; fi
run specialize-unknown-sym 1 "$sp" --specialize C=16 -o "$tmp/sp.fatbin" &&
  stderr_is specialize-unknown-sym "etcc: error: --specialize: module @specialize has no sym 'C' (its syms: B)"
run specialize-repeated-cut 1 "$sp" --specialize B=16,16 -o "$tmp/sp.fatbin" &&
  stderr_is specialize-repeated-cut "etcc: error: --specialize: cut 16 of sym 'B' is not in (16, 128]: the cuts must increase and stay within the sym's range [1, 128]"
run specialize-past-range 1 "$sp" --specialize B=129 -o "$tmp/sp.fatbin" &&
  stderr_has specialize-past-range "cut 129 of sym 'B' is not in (1, 128]"
run specialize-at-lo 1 "$sp" --specialize B=1 -o "$tmp/sp.fatbin" && stderr_has specialize-at-lo "cut 1 of sym 'B' is not in (1, 128]"
run specialize-form 1 "$sp" --specialize B=1x -o "$tmp/sp.fatbin" &&
  stderr_has specialize-form "--specialize: expects SYM=C1,C2,... (integers), got 'B=1x'"
[ -e "$tmp/sp.fatbin" ] && fail "specialize: an output left behind on error" || pass
# A graph's own `specialize B = 16, LONG` (specialize_graph.etir) gives its kernels; --specialize
# replaces the graph's cuts with its own.
spg=tests/golden/passes/specialize_graph.etir
run specialize-graph-override 0 --emit=cuda --specialize B=32 "$spg" &&
  if [ "$(grep -o '__global__ void __launch_bounds__(256, ETC_MIN_CTAS_PER_SM) etc_main_mega[A-Za-z0-9_]*' "$tmp/out" | sed 's/.* //')" != \
       "$(printf 'etc_main_mega_B1_31\netc_main_mega_B32_128')" ]; then
    fail "specialize-graph-override: not the option's ranges"; grep 'etc_main_mega' "$tmp/out" | head -5; else pass; fi
# A megakernel of a range of B reserves the shared memory of the matmul instantiations that its
# rows reach only: B <= 31 runs tiles of 16 and 32 rows, B >= 32 those of 32 to 128.
cat >"$tmp/mm_ranges.etir" <<'ETIR'
module @mm_ranges
sym B in [1, 128]
tensor x : bf16[B, 256] input
tensor w : bf16[128, 256] param
tensor y : bf16[B, 128] output
graph @main specialize B = 32 {
  y = matmul(x, w) { transpose_b }
}
ETIR
run specialize-smem 0 --emit=cuda "$tmp/mm_ranges.etir" &&
  small=$(grep '^extern "C" __device__ const unsigned int etc_main_mega_B1_31_smem' "$tmp/out" | grep -o 'matmul_smem_bytes<__nv_bfloat16, [0-9]*' | sed 's/.* //' | tr '\n' ' ') &&
  large=$(grep '^extern "C" __device__ const unsigned int etc_main_mega_B32_128_smem' "$tmp/out" | grep -o 'matmul_smem_bytes<__nv_bfloat16, [0-9]*' | sed 's/.* //' | tr '\n' ' ') &&
  unfused=$(grep '^extern "C" __device__ const unsigned int etc_main_matmul_y_smem' "$tmp/out" | grep -c 'kSmem_matmul_y') &&
  if [ "$small" != "16 32 " ] || [ "$large" != "16 32 64 128 " ] || [ "$unfused" != 1 ]; then
    fail "specialize-smem: B1_31 reserves '$small', B32_128 '$large' (expected '16 32 ', '16 32 64 128 '), unfused $unfused"
  else pass; fi
# ... in the compiled kernels: the 128-row tile's 3 stages of 48 KiB (the large ring's 144 KiB)
# only where B reaches 65, and 4 with ETC_MM_FULL_RING_KIB=192; B <= 31 keeps the 32-row tile's
# 4 stages of 32 KiB either way (dynamic shared memory, from --resource-usage). Only the
# megakernels are looked at: --megakernel-only spares NVRTC the unfused kernels.
range_smem() {  # NAME EXPECTED(B1_31/B32_128) [etcc options]: compiles mm_ranges.etir, compares
  local name=$1 want=$2 got; shift 2
  LIMIT=120 run "$name" 0 "$tmp/mm_ranges.etir" -arch sm_90a --megakernel-only --resource-usage "$@" -o "$tmp/mmr.fatbin" || return
  got=$(for k in etc_main_mega_B1_31 etc_main_mega_B32_128; do
          cat "$tmp/out" "$tmp/err" | awk -v k="$k" '$1 == k { n = split($5, s, "+"); print s[n] }'
        done | paste -sd/)
  if [ "$got" != "$want" ]; then fail "$name: $got, expected $want"; else pass; fi
}
range_smem specialize-smem-cubin 132096/148480
range_smem specialize-smem-full-ring 132096/197632 --device-define ETC_MM_FULL_RING_KIB=192
# --fold-attention-merge: the matmul task merges its rows of the parts (rank 3) in the row form
# of several rows, before its matmul; the generated code compiles (NVRTC).
run fold-merge-cuda 0 --emit=cuda --fold-attention-merge tests/golden/passes/fold_attention_merge.etir &&
  stdout_has fold-merge-rows 'if (!etc::dev::attention_merge_rows<2, 128, 64>(ctx, a0, a1, a2))'
LIMIT=300 run fold-merge-nvrtc 0 tests/golden/passes/fold_attention_merge.etir --fold-attention-merge -arch sm_90a \
  -o "$tmp/fold.fatbin"
# An opt-in fold that finds nothing to fold warns (the output is then the default's); one that
# folds says nothing.
run fold-none-attention 0 --emit=tasks --fold-attention samples/mlp.etir &&
  stderr_is fold-none-attention "etcc: warning: --fold-attention: nothing folded (no per-row grid of q/k/v sums, rope and kv_append whose every reader is an attention grid covering its rows and heads)"
run fold-none-merge 0 --emit=tasks --fold-attention-merge samples/mlp.etir &&
  stderr_is fold-none-merge "etcc: warning: --fold-attention-merge: nothing folded (no split-KV merge grid whose one reader is a matmul reading whole heads of every row, within 16 Ki merged values a task)"
run fold-none-norms 0 --emit=tasks --fold-norms-below 3 samples/two_stage_sum.etir &&
  stderr_is fold-none-norms "etcc: warning: --fold-norms-below 3: nothing folded (no row norm grid below that batch whose readers are matmuls reading every row, within 48 Ki values a task)"
run fold-taken 0 --emit=tasks --fold-attention tests/golden/passes/fold_into_attention.etir && stderr_is fold-taken ""
# --fold-attention needs the attention grids to cover the row grid's rows once: two attention
# ops over the same new cache row cover every row twice (their one-part and split-KV grids tile
# the rows at every B, twice over), so the row grid stays and etcc warns; with one of them the
# row grid folds.
cat >"$tmp/fold_twice.etir" <<'ETIR'
module @fold_twice
sym B in [1, 64]
const H = 512
const D = 64
const Q = 4 * D
const KV = 2 * D
const S = 256
tensor x : bf16[B, H] input
tensor pos : i32[B] input
tensor lens : i32[B] input
tensor w_qkv : bf16[Q + 2 * KV, H] param
tensor kb : bf16[B, S, KV] output
tensor vb : bf16[B, S, KV] output
tensor o1 : bf16[B, Q] output
tensor o2 : bf16[B, Q] output
graph @main {
  qkv = matmul(x, w_qkv) { transpose_b, split_k = 2 }
  qr, kr = rope(qkv[:, 0:Q], qkv[:, Q : Q + KV], pos) { head_dim = D, theta = 1000000.0 }
  kb, vb = kv_append(kr, qkv[:, Q + KV : Q + 2 * KV], pos)
  o1 = attention_decode(qr, kb, vb, lens) { head_dim = D }
  o2 = attention_decode(qr, kb, vb, lens) { head_dim = D }
}
ETIR
grep -v o2 "$tmp/fold_twice.etir" >"$tmp/fold_once.etir"
run fold-twice 0 --emit=tasks --fold-attention "$tmp/fold_twice.etir" && stdout_has fold-twice "task @kv_append_kb grid [B] (i) {" &&
  stderr_has fold-twice "etcc: warning: --fold-attention: nothing folded"
run fold-once 0 --emit=tasks --fold-attention "$tmp/fold_once.etir" && stderr_is fold-once "" &&
  if grep -q "task @kv_append" "$tmp/out"; then fail "fold-once: the row grid stayed"; else pass; fi
# ETC_MM_STREAM=1 where no megakernel can stream (the MLP's 2048-deep gated tiles) warns; where
# one streams, nothing.
run stream-none 0 --emit=cuda --device-define ETC_MM_STREAM=1 samples/mlp.etir &&
  stderr_is stream-none "etcc: warning: ETC_MM_STREAM=1: no megakernel streams its weights (a static one streams where every task with a matmul has one, first, of 16-bit params with tensor maps, 128 deep, 64 or 128 columns a tile (the gated form 64 of each weight), tiles of at most 64 rows in its range)"
run stream-taken 0 --emit=cuda --device-define ETC_MM_STREAM=1 tests/cli/resources/stream_matmul.etir &&
  stderr_is stream-taken "" && stdout_has stream-taken "stream_start"
# --fold-norms-below: a cut of at least 1. The folded q and k tasks call the fused sum-and-norm
# row chain as a function of its own before their matmuls (one, shared: inlined beside a matmul
# it made ptxas spill), the norms' own grids (the folded one's and the output norm that stays)
# run it inline; without the fold only those two; the generated code compiles (NVRTC). Every
# folded task computes the same residual; the grid's first (t == 0) alone stores it.
run fold-norms-zero 1 --fold-norms-below 0 tests/golden/passes/fold_norms.etir &&
  stderr_has fold-norms-zero "--fold-norms-below: Value 0 not in range"
run unsplit-zero 1 --unsplit-below 0 tests/golden/passes/fold_norms.etir &&
  stderr_has unsplit-zero "--unsplit-below: Value 0 not in range"
# --norm-rows: 1 to 64 rows a norm task; the norm grid then has cdiv(B, N) tasks.
run norm-rows-zero 1 --norm-rows 0 tests/golden/passes/fold_norms.etir &&
  stderr_has norm-rows-zero "--norm-rows: Value 0 not in range 1 to 64"
run norm-rows 0 --emit=tasks --norm-rows 4 tests/golden/passes/fold_norms.etir &&
  stdout_has norm-rows "task @add_rmsnorm_h2 grid [cdiv(B, 4)] (i) {"
# The fused norm learns its tile's most rows (4), which keeps the form with rows in flight out
# of the default's tasks of one row (fused_rows.cuh).
run norm-rows-cuda 0 --emit=cuda --norm-rows 4 tests/golden/passes/fold_norms.etir &&
  stdout_has norm-rows-cuda "if (!etc::dev::reduce_add_rmsnorm_rows<1024, 4>(ctx, v0, v1, v3, v4, "
run norm-rows-cuda-default 0 --emit=cuda tests/golden/passes/fold_norms.etir &&
  stdout_has norm-rows-cuda-default "if (!etc::dev::reduce_add_rmsnorm_rows<1024, 1>(ctx, v0, v1, v3, v4, "
fold_chains() {  # NAME OUTLINED INLINE
  local got
  got="$(grep -cE 'if \(!etc::dev::reduce_add_rmsnorm_rows<1024, [0-9]+>\(ctx, a0' "$tmp/out")/$(grep -cE 'if \(!etc::dev::reduce_add_rmsnorm_rows<1024, [0-9]+>\(ctx, v0' "$tmp/out")"
  if [ "$got" != "$2/$3" ]; then fail "$1: $got fused norm chains (outlined/inline), expected $2/$3"; else pass; fi
}
run fold-norms-cuda 0 --emit=cuda --fold-norms-below 3 tests/golden/passes/fold_norms.etir &&
  fold_chains fold-norms-cuda 1 2 &&
  if [ "$(awk '/bool task_matmul_q_folded\(/,/^}/' "$tmp/out" | grep -cE '^    etc_op[0-9]+\(ctx, v0, v1, v2, v3, v4, v5, v6, t == 0\);')" != 1 ]; then
    fail "fold-norms-cuda: task_matmul_q_folded does not call the outlined chain, its first task storing the residual"; else pass; fi &&
  if ! grep -qE '^  if \(!etc::dev::reduce_add_rmsnorm_rows<1024, 8>\(ctx, a0, a1, a3, a4, [0-9.e-]+f, a5, a6, etc_store_res\)\)' "$tmp/out"; then
    fail "fold-norms-cuda: the outlined chain does not pass on whether its task stores the residual"; else pass; fi
run fold-norms-cuda-off 0 --emit=cuda tests/golden/passes/fold_norms.etir && fold_chains fold-norms-cuda-off 0 2 &&
  if grep -q 'ctx_after_ring' "$tmp/out"; then fail "fold-norms-cuda-off: a chain past a ring without a fold"; else pass; fi
# A folded task prefetches its weights before its waits although it waits on a matmul (y's), as
# every task whose matmul follows a row chain does: its chain's shared memory lies past the ring
# that the prefetch fills, so the folded kernel reserves the ring and a block reduction's 256
# bytes (the same task unfolded: the ring alone). Without the ring's room the chain's
# reductions would overwrite prefetched weights.
run fold-norms-prefetch 0 --emit=cuda --fold-norms-below 3 tests/golden/passes/fold_norms.etir &&
  if [ "$(awk '/bool task_matmul_q_folded\(/,/^}/' "$tmp/out" | grep -cE '^    etc_prefetched = true;|^    const etc::dev::Ctx etc_chain_ctx = etc::dev::ctx_after_ring\(ctx, ')" != 2 ]; then
    fail "fold-norms-prefetch: task_matmul_q_folded does not prefetch with its chain past the ring"; else pass; fi
# A cut above B's range (8) folds everywhere, but only what fits the bound: @add_rmsnorm_h would
# read 49 Ki values a task at B = 8 and stays; @add_rmsnorm_h2 (17 Ki) moves into @matmul_o.
run fold-norms-bound 0 --emit=tasks --fold-norms-below 9 tests/golden/passes/fold_norms.etir &&
  stdout_has fold-norms-bound "task @add_rmsnorm_h grid [B] (i) {" &&
  if grep -q "task @add_rmsnorm_h2 " "$tmp/out" || ! grep -qF "  add_rmsnorm(q[:, :], res[:, :], nw2)" "$tmp/out"; then
    fail "fold-norms-bound: @add_rmsnorm_h2 did not fold into @matmul_o"; else pass; fi
LIMIT=300 run fold-norms-nvrtc 0 tests/golden/passes/fold_norms.etir --fold-norms-below 3 -arch sm_90a \
  --resource-usage -o "$tmp/fold_norms.fatbin" &&
  smem_is fold-norms-nvrtc etc_main_matmul_q 16+132096 && smem_is fold-norms-nvrtc etc_main_matmul_q_folded 16+132352
# The weight stream across tasks (ETC_MM_STREAM=1, etc/device/stream.cuh): the megakernel of
# B <= 31 (tiles of 16 and 32 rows) streams, with its walk (etc_describe_0) and the ring before
# ctx's share; B >= 32 (tiles up to 128 rows) does not; nor does a kernel whose matmul reads an
# input as b (not a param); without the knob nothing streams.
run stream-cuda 0 --emit=cuda --device-define ETC_MM_STREAM=1 "$tmp/mm_ranges.etir" &&
  if [ "$(grep -c 'etc::dev::stream_start(etc_ring, &p, etc_describe_0, total);' "$tmp/out")" != 1 ] ||
     [ "$(grep -c 'stream_start' "$tmp/out")" != 1 ] ||
     ! grep -q '^extern "C" __device__ const unsigned int etc_main_mega_B1_31_smem = etc::dev::kStreamKernelBytes + ' "$tmp/out" ||
     ! grep -q 'return task_matmul_y<kProduce, 0>(p, ctx, t' "$tmp/out"; then
    fail "stream-cuda: not the B <= 31 kernel alone streaming"; grep -n 'stream_start\|_smem = \|kProduce, ' "$tmp/out" | head -8
  else pass; fi
run stream-off 0 --emit=cuda "$tmp/mm_ranges.etir" &&
  if grep -q 'stream_start\|kProduce, ' "$tmp/out"; then fail "stream-off: a kernel streams without ETC_MM_STREAM"; else pass; fi
sed 's/tensor w : bf16\[128, 256\] param/tensor w : bf16[128, 256] input/' "$tmp/mm_ranges.etir" >"$tmp/mm_input_b.etir"
run stream-input-b 0 --emit=cuda --device-define ETC_MM_STREAM=1 "$tmp/mm_input_b.etir" &&
  if grep -q 'stream_start' "$tmp/out"; then fail "stream-input-b: a matmul of an input's b streams"; else pass; fi
# ... compiled (NVRTC): the ring's 8 units of 16 KiB and 1 KiB of alignment, then a's ring of 4
# stages of 16 KiB and its alignment; the kernel of B >= 32 as without the knob.
range_smem stream-smem 198656/148480 --device-define ETC_MM_STREAM=1
# ETC_MM_INLINE (matmul.cuh, default 1): a task function holding a matmul is inlined into the
# megakernel, called from one site a kernel after the grid switch (with --profile, its record's
# task and extents set there too), and out of line (`_outlined`) from the unfused kernels. ptxas
# then sees no call boundary around the megakernel's products: no C7510 for the task functions'
# kStatic instantiation (template argument 1), which it reports with ETC_MM_INLINE=0.
printf 'module @mm_chain\nsym B in [1, 16]\ntensor x : bf16[B, 256] input\ntensor w1 : bf16[256, 256] param\ntensor w2 : bf16[256, 256] param\ntensor y : bf16[B, 256] output\ngraph @main {\n  h = matmul(x, w1) { transpose_b }\n  y = matmul(h, w2) { transpose_b }\n}\n' >"$tmp/mm_chain.etir"
run mm-inline-cuda 0 --emit=cuda "$tmp/mm_chain.etir" &&
  if [ "$(grep -c '^__device__ ETC_MM_FN bool task_matmul_[hy](' "$tmp/out")" != 2 ] ||
     [ "$(grep -c 'if (fn == [01] && !task_matmul_[hy]<kStatic, 0, ETC_MM_KERNEL_REACH(0x1ull)>(p, ctx, t)) return;' "$tmp/out")" != 2 ] ||
     [ "$(grep -c 'if (!task_matmul_[hy]_outlined<kUnfused, 0>(p, ctx, t)) return;' "$tmp/out")" != 2 ]; then
    fail "mm-inline-cuda: not inlined task functions with one call site and outlined unfused calls"
    grep -n 'ETC_MM_FN\|fn ==\|_outlined<' "$tmp/out" | head -8
  else pass; fi
run mm-inline-profile 0 --emit=cuda --profile "$tmp/mm_chain.etir" &&
  if [ "$(grep -c 'fn = 1; fti = 1; fx\[0\] = [0-9]*LL;' "$tmp/out")" != 1 ] ||
     [ "$(grep -c 'etc::dev::profile::end(p.events + [0-9]*LL, [0-9]*LL, prof_start, fti, t, fx);' "$tmp/out")" != 2 ]; then
    fail "mm-inline-profile: no record of the inlined calls' task"; grep -n 'fti\|prof_start' "$tmp/out" | head -8
  else pass; fi
run mm-inline-off 0 --emit=cuda --device-define=ETC_MM_INLINE=0 "$tmp/mm_chain.etir" &&
  if grep -q '_outlined\|fn == ' "$tmp/out"; then fail "mm-inline-off: one call site with ETC_MM_INLINE=0"; else pass; fi
CUDA_BIN=${CUDA_HOME:-/usr/local/cuda}/bin
mm_serialized() {  # NAME yes|no [etcc options]: whether ptxas reports the megakernel's matmuls serialized (C7510)
  local name=$1 want=$2 got; shift 2
  LIMIT=120 run "$name" 0 "$tmp/mm_chain.etir" --emit=ptx -arch compute_90a "$@" -o "$tmp/mmc.ptx" || return
  got=$("$CUDA_BIN/ptxas" -arch=sm_90a -v "$tmp/mmc.ptx" -o /dev/null 2>&1 | grep 'C7510' | grep -c 'ILi1ELi0E\|etc_main_mega')
  if [ "$got" = 0 ]; then got=no; else got=yes; fi
  if [ "$got" != "$want" ]; then fail "$name: serialized: $got, expected $want"; else pass; fi
}
mm_serialized mm-inline-ptxas no
mm_serialized mm-inline-ptxas-profile no --profile
mm_serialized mm-serialized yes --device-define ETC_MM_INLINE=0
# etcc's cubins come from nvJitLink, whose ptxas compiles relocatable code: a megakernel that
# calls a task function (here the rmsnorm's) makes extern calls, so ptxas serializes all of its
# wgmma products (C7509), which --resource-usage reports. --whole-program makes the cubin with
# NVRTC, whose ptxas sees the whole program and keeps a stage's products in one group; there
# ETC_MM_INLINE=0 serializes them in the task functions (C7510). tools/sass_wgmma.py reads the
# groups from the cubin's instruction words. The module's 16-row, 64-column tiles split each
# stage's K between the warpgroups (ETC_MM_WG_KSPLIT_ROWS): a stage is 4 m64n64k16 products a
# warpgroup, 8 HGMMA in the megakernel's code where the unsplit tiles had 16.
printf 'module @mm_norm\nsym B in [1, 16]\ntensor x : bf16[B, 256] input\ntensor w1 : bf16[256, 256] param\ntensor ln : bf16[256] param\ntensor w2 : bf16[256, 256] param\ntensor y : bf16[B, 256] output\ngraph @main {\n  h = matmul(x, w1) { transpose_b }\n  n = rmsnorm(h, ln) { eps = 1e-5 }\n  y = matmul(n, w2) { transpose_b }\n}\n' >"$tmp/mm_norm.etir"
mm_groups() {  # NAME 'GROUPS' REPORTED [etcc options]: the megakernel's groups, and the report's line
  local name=$1 want=$2 said=$3 got; shift 3
  LIMIT=300 run "$name" 0 "$tmp/mm_norm.etir" -arch sm_90a --resource-usage --emit=cubin -o "$tmp/mmn.cubin" "$@" || return
  got=$(python3 tools/sass_wgmma.py "$tmp/mmn.cubin" --function etc_main_mega | sed 's/^etc_main_mega //')
  if [ "$got" != "$want" ]; then fail "$name: the megakernel's products: '$got', expected '$want'"; return; fi
  if [ -z "$said" ]; then
    if grep -q 'serialized' "$tmp/err"; then fail "$name: serialized products reported"; grep serialized "$tmp/err"; else pass; fi
  else
    stderr_has "$name" "$said"
  fi
}
mm_groups mm-nvjitlink-serialized 'HGMMA 8 groups 8 serialized' \
  '  wgmma products serialized by ptxas in etc_main_mega (due to the presence of Extern calls)'
mm_groups mm-whole-program 'HGMMA 8 groups 2' '' --whole-program
mm_groups mm-whole-program-outlined 'HGMMA 4 groups 4 serialized' \
  '  wgmma products serialized by ptxas in task_matmul_h (due to wgmma pipeline crossing function boundary at a function call)' \
  --whole-program --device-define ETC_MM_INLINE=0
# In nvJitLink's relocatable code a function that makes no call keeps its products grouped; a
# 64-bit integer division, or an f32 division's slow path, is a call in ptxas's code (C7509).
# So the matmul's epilogues index their tiles in 32 bits and silu divides without div.rn.f32
# (etc/device/common.cuh, div_rn_by_ge1): mlp's gated and down matmuls, out of line (the
# unfused kernels' `_outlined` task functions; every instantiation with ETC_MM_INLINE=0), each
# stage's products one group. NAME FUNCTIONS [etcc options]: how many functions with products.
# With no options, the sm_90a cubin of the samples test's fatbin (the same compile; 30 s of NVRTC).
mm_leaf() {
  local name=$1 want=$2 got leaf=$mlp_fatbin; shift 2
  if [ $# -gt 0 ]; then
    leaf=$tmp/leaf.cubin
    LIMIT=300 run "$name" 0 samples/mlp.etir -arch sm_90a --emit=cubin -o "$leaf" "$@" || return
  fi
  python3 tools/sass_wgmma.py "$leaf" | grep -v '^etc_main_' >"$tmp/leaf.txt"
  got=$(grep -c ' HGMMA ' "$tmp/leaf.txt")
  if [ "$got" != "$want" ] || grep -q 'serialized' "$tmp/leaf.txt"; then
    fail "$name: $got functions with products (expected $want), serialized:"; grep serialized "$tmp/leaf.txt" | cut -c1-160
  else pass; fi
}
mm_leaf mm-leaf-outlined-tasks 2
mm_leaf mm-leaf-instantiations 8 --device-define ETC_MM_INLINE=0
# The weight stream by TMA (ETC_MM_TMA=1, etc/device/tma.cuh): the matmuls get their weights'
# tensor maps and the descriptor lists the weights ("tmaps"); without the knob, neither.
run tma-off 0 --emit=cuda samples/mlp.etir &&
  if grep -q 'tma_of' "$tmp/out"; then fail "tma-off: tensor maps passed without ETC_MM_TMA"; else pass; fi
run tma-on 0 --emit=cuda --device-define ETC_MM_TMA=1 samples/mlp.etir && stdout_has tma-on-gated \
  'etc::dev::tma_of(p, &p.tensor[2]), etc::dev::tma_of(p, &p.tensor[2])' && stdout_has tma-on-down 'etc::dev::TmaB m1)'
# --device-define: a knob before the device headers; anything but ETC_NAME=INTEGER is refused.
# One value an occurrence: the file after `--device-define X=1` or `-I DIR` is the input, not another value.
run device-define-then-file 0 --emit=cuda --device-define ETC_MM_RING_KIB=192 samples/mlp.etir
run include-dir-then-file 0 --emit=cuda -I samples samples/mlp.etir
run device-define 0 --emit=cuda --device-define ETC_MM_RING_KIB=192 --device-define=ETC_MM_MAX_STAGES=8 samples/mlp.etir &&
  if [ "$(grep -n '^#define ETC_MM_\|^#include' "$tmp/out" | head -3 | cut -d' ' -f1-3)" != "$(printf '2:#define ETC_MM_RING_KIB 192\n3:#define ETC_MM_MAX_STAGES 8\n4:#include "etc/device/etc.cuh"')" ]; then
    fail "device-define: the defines do not come first"; head -5 "$tmp/out"; else pass; fi
# On the small MLP (above): the weight stream by TMA; ETC_MM_PREFETCH_STAGES (a weight prefetch,
# --weight-prefetch, of fewer stages than the ring's S - 1) compiles.
LIMIT=300 run tma-nvrtc 0 "$tmp/small_mlp.etir" -arch sm_90a --device-define ETC_MM_TMA=1 -o "$tmp/tma.fatbin" &&
  if grep -qa '"tmaps":\[1,2,3\]' "$tmp/tma.fatbin"; then pass; else fail "tma-nvrtc: the descriptor does not list wg, wu and wd"; fi
# ETC_MM_FALLBACK_OUTLINED (matmul.cuh; default 1): on sm_90a the inlined megakernel's matmul sites
# call their mma.sync form (which runs where wgmma's conditions fail), a function of its own; the
# unfused kernels' task functions inline it (mm-leaf-outlined-tasks above: their products stay
# grouped). At 0 every site inlines it.
LIMIT=300 run fallback-outlined 0 --emit=ptx -arch sm_90a "$tmp/small_mlp.etir" &&
  if grep -q '^.func.*mm_tensor_core_outlined' "$tmp/out" &&
     [ "$(grep -cE '^\s+_ZN[^ ]*mm_tensor_core_outlined[^ ]*, *$' "$tmp/out")" = 2 ]; then pass  # a call's callee line
  else fail "fallback-outlined: the megakernel's two matmuls do not call mm_tensor_core_outlined once each"; fi
LIMIT=300 run fallback-inlined 0 --emit=ptx -arch sm_90a --device-define ETC_MM_FALLBACK_OUTLINED=0 "$tmp/small_mlp.etir" &&
  if grep -q 'mm_tensor_core_outlined' "$tmp/out"; then fail "fallback-inlined: ETC_MM_FALLBACK_OUTLINED=0 calls mm_tensor_core_outlined"; else pass; fi
LIMIT=300 run prefetch-stages-nvrtc 0 "$tmp/small_mlp.etir" -arch sm_90a --weight-prefetch --device-define ETC_MM_PREFETCH_STAGES=1 -o "$tmp/pf1.fatbin" &&
  if grep -q matmul_prefetch <("$etcc" --emit=cuda --weight-prefetch "$tmp/small_mlp.etir"); then pass; else fail "prefetch-stages-nvrtc: small_mlp has no prefetch"; fi
# Every unfused kernel calls its task function's instantiation 0 (one copy of each task's code
# for the unfused form, not one per kernel); the megakernel keeps its own.
run unfused-instances 0 --emit=cuda samples/llama_layer.etir &&
  if grep -q '<kUnfused, [1-9]' "$tmp/out" || ! grep -q '<kUnfused, 0>' "$tmp/out" || ! grep -q '<kStatic, 0>' "$tmp/out"; then
    fail "unfused-instances: unfused kernels do not all take instantiation 0"; grep -m3 '<kUnfused' "$tmp/out" | sed 's/^/  | /'
  else pass; fi
# A megakernel's inlined matmul task functions compile only the tile instantiations that its
# range of B reaches (kReach, matmulDispatch): the decode layer's tiles take B's rows, 16, 32, 64
# or 128 of them; [1, 19] reaches the first two, [20, 39] the 32 and 64 rows, [40, 128] the last two.
run mm-reach 0 --emit=cuda --specialize B=20,40 samples/llama_layer.etir &&
  if [ "$(grep -o 'ETC_MM_KERNEL_REACH(0x[0-9a-f]*ull)' "$tmp/out" | sed 's/.*(\(0x[0-9a-f]*\)ull)/\1/' | uniq -c | tr -s ' ' | tr '\n' ';')" != \
       " 4 0x3; 4 0x6; 4 0xc;" ]; then
    fail "mm-reach: the kernels' reach masks"; grep -o 'task_[a-z_]*<k[A-Za-z]*, [0-9]*, ETC_MM_KERNEL_REACH([0-9a-fx]*ull)' "$tmp/out" | sed 's/^/  | /'
  else pass; fi
run mm-reach-one-kernel 0 --emit=cuda samples/llama_layer.etir &&
  if grep -q 'ETC_MM_KERNEL_REACH(0x[0-9a-e]ull)' "$tmp/out" || ! grep -q 'ETC_MM_KERNEL_REACH(0xfull)' "$tmp/out"; then
    fail "mm-reach-one-kernel: B in [1, 128] reaches every instantiation"; else pass; fi
# A run of static notifies is one block: every plain add before the debug branch's checked
# notifies (a task whose statements' adds were spread between their debug loops was slower).
run notify-block 0 --emit=cuda samples/llama_layer.etir &&
  if awk '/if \(!\(p.flags & ETC_FLAG_DEBUG\)\) \{/ {fast = 1} fast && /notify_checked/ {bad = 1}
          fast && /^    \} else \{$/ {fast = 0} /notify_add\(/ && !fast {stray = 1}
          END {exit !(bad || stray)}' "$tmp/out"; then
    fail "notify-block: a checked notify in the fast path, or an add outside it"; else pass; fi
# Index math left in the code (--no-derived-syms): a divisor known only at run time takes the _rt
# helpers (cdiv(16, B) in the decode layer's attention grids), a constant one the plain helpers.
run index-div 0 --emit=cuda --no-derived-syms samples/llama_layer.etir &&
  stdout_has index-div "etc::dev::cdiv_rt(16LL, etc_s0)" && stdout_has index-div "etc::dev::cdiv(etc_s0, 4LL)"
# Syms and derived syms are read once per function into locals: p.sym and p.derived appear only in
# their declarations (a use of p.sym in an expression is loaded again after every wait's and
# notify's asm).
for sched in static dynamic; do
  for f in samples/moe_block.etir samples/llama_layer_paged.etir; do
    run "sym-locals-$sched" 0 --emit=cuda --schedule=$sched "$f" &&
      if grep 'p\.sym\[' "$tmp/out" | grep -qv '\[\[maybe_unused\]\] const long long etc_s[0-9]* = p\.sym\[[0-9]*\];'; then
        fail "sym-locals-$sched: $f uses p.sym outside the locals"
      elif ! grep -q 'p\.derived\[' "$tmp/out"; then
        fail "sym-locals-$sched: $f reads no derived sym"
      elif grep 'p\.derived\[' "$tmp/out" | grep -qv '\[\[maybe_unused\]\] const long long etc_d[0-9]* = p\.derived\[[0-9]*\];'; then
        fail "sym-locals-$sched: $f uses p.derived outside the locals"; else pass; fi
  done
done
# Decode attention alone at each model's shape (tests/gpu/resources) for the checks of its knobs
# below (the per-task kernel's shared memory is attention's): a whole decode layer took 5 to 9
# times as long in NVRTC.
attn_g2=tests/gpu/resources/attention_alone_qwen3_0_6b.etir attn_g4=tests/gpu/resources/attention_alone_llama3_2_1b.etir
# ETC_INDEX_DIV32=1 (the index helpers' 32-bit path) compiles, where cdiv(16, B) is left in the code.
LIMIT=300 run index-div32 0 "$attn_g4" -arch sm_90a --no-derived-syms --device-define ETC_INDEX_DIV32=1 -o "$tmp/div32.fatbin" &&
  if [ -s "$tmp/div32.fatbin" ]; then pass; else fail "index-div32: no fatbin"; fi
# The decode attention's knobs other than the defaults (FMA scores and o, plain cache copies, one
# 32 KiB slot) still compile: the default paths compile with every sample.
LIMIT=300 run attention-knobs 0 "$attn_g4" -arch sm_90a --device-define ETC_ATTN_MMA=0 --device-define ETC_ATTN_EVICT_FIRST=0 \
  --device-define ETC_ATTN_SLOTS=1 --device-define ETC_ATTN_BLOCK_KIB=32 -o "$tmp/attn_knobs.fatbin" &&
  if [ -s "$tmp/attn_knobs.fatbin" ]; then pass; else fail "attention-knobs: no fatbin"; fi
# Qwen3's attention (2 query heads a cache head) takes the tensor-core form of independent warps
# (ETC_ATTN_MMA_WARPS, default 1): a ring a warp for 8 warps, of 2 tiles (ETC_ATTN_WARP_SLOTS) of
# 16 K rows and 16 V rows at D = 128 (128 KiB), after the scratch; 1 tile a warp halves it.
LIMIT=300 run attention-mma-warps-g2 0 "$attn_g2" -arch sm_90a --resource-usage -o "$tmp/attn.fatbin" &&
  smem_is attention-mma-warps-g2 etc_main_attention_decode_o_whole 16+134176
LIMIT=300 run attention-mma-warps-g2-slots 0 "$attn_g2" -arch sm_90a --resource-usage \
  --device-define ETC_ATTN_WARP_SLOTS=1 -o "$tmp/attn.fatbin" &&
  smem_is attention-mma-warps-g2-slots etc_main_attention_decode_o_whole 16+68640
# Without it (ETC_ATTN_MMA_WARPS=0), the FMA form of independent warps (ETC_ATTN_WARPS, default
# 2), which stages nothing: its task reserves the scratch and the warps' reduction only, no ring.
LIMIT=300 run attention-warps-g2 0 "$attn_g2" -arch sm_90a --resource-usage --device-define ETC_ATTN_MMA_WARPS=0 \
  -o "$tmp/attn.fatbin" && smem_is attention-warps-g2 etc_main_attention_decode_o_whole 16+19488
# The generated task calls attention_decode itself, or through the shared op function, as
# ETC_INLINE_ATTENTION says.
python3 tools/gen_decode_sample.py qwen3_0_6b --layers 1 --vocab 2048 >"$tmp/q1.etir"
LIMIT=300 run attention-inline-emit 0 "$tmp/q1.etir" --emit cuda -o "$tmp/q1.cu" &&
  if grep -qE '^#if ETC_INLINE_ATTENTION$' "$tmp/q1.cu" &&
     grep -A1 -E '^#if ETC_INLINE_ATTENTION$' "$tmp/q1.cu" | grep -qE '^ +etc::dev::attention_decode<128, 2>\(ctx, v' &&
     grep -A3 -E '^#if ETC_INLINE_ATTENTION$' "$tmp/q1.cu" | grep -qE '^ +etc_op[0-9]+\(ctx, v'; then pass
  else fail "attention-inline-emit: no #if ETC_INLINE_ATTENTION around the attention call"; fi
# Without either form of independent warps (ETC_ATTN_WARPS=0) it is on tensor cores, staged: a
# ring of 2 slots (ETC_ATTN_SLOTS) of 128-row blocks (kAttnMmaBlockRows: 32 KiB of K and of V at D = 128, above
# ETC_ATTN_BLOCK_KIB's 16), one slot with ETC_ATTN_SLOTS=1 (compiled with the tensor-core form
# outlined, ETC_ATTN_MMA_OUTLINE=1, as well).
LIMIT=300 run attention-mma-g2 0 "$attn_g2" -arch sm_90a --resource-usage --device-define ETC_ATTN_MMA_WARPS=0 \
  --device-define ETC_ATTN_WARPS=0 -o "$tmp/attn.fatbin" && smem_is attention-mma-g2 etc_main_attention_decode_o_whole 16+134176
LIMIT=300 run attention-mma-g2-slots 0 "$attn_g2" -arch sm_90a --resource-usage --device-define ETC_ATTN_MMA_WARPS=0 \
  --device-define ETC_ATTN_WARPS=0 --device-define ETC_ATTN_SLOTS=1 --device-define ETC_ATTN_MMA_OUTLINE=1 -o "$tmp/attn.fatbin" &&
  smem_is attention-mma-g2-slots etc_main_attention_decode_o_whole 16+68640
# With ETC_ATTN_MMA_MIN_G=4 it takes the FMA form, whose blocks and slots are
# ETC_ATTN_FMA_BLOCK_KIB's and ETC_ATTN_FMA_SLOTS': one slot of 16 KiB of K and of V.
LIMIT=300 run attention-fma-block 0 "$attn_g2" -arch sm_90a --resource-usage --device-define ETC_ATTN_WARPS=0 \
  --device-define ETC_ATTN_MMA_MIN_G=4 --device-define ETC_ATTN_FMA_BLOCK_KIB=16 --device-define ETC_ATTN_FMA_SLOTS=1 \
  -o "$tmp/attn.fatbin" && smem_is attention-fma-block etc_main_attention_decode_o_whole 16+35872
# Llama's attention (4 query heads a cache head) keeps its ring whatever the FMA knobs say, and blocks of
# 128 rows (16 KiB at D = 64) where ETC_ATTN_BLOCK_KIB asks for fewer.
LIMIT=300 run attention-fma-block-mma 0 "$attn_g4" -arch sm_90a --resource-usage \
  --device-define ETC_ATTN_FMA_BLOCK_KIB=16 --device-define ETC_ATTN_FMA_SLOTS=1 --device-define ETC_ATTN_BLOCK_KIB=8 \
  -o "$tmp/ll.fatbin" && smem_is attention-fma-block-mma etc_main_attention_decode_o_whole 16+70720
# ETC_ATTN_WARPS=4 gives Llama's 4 heads a cache head the FMA form of independent warps: no ring
# (with an odd count of row steps in flight and plain cache loads, which compile too).
LIMIT=300 run attention-warps-g4 0 "$attn_g4" -arch sm_90a --resource-usage --device-define ETC_ATTN_WARPS=4 \
  --device-define ETC_ATTN_MMA_WARPS=0 \
  --device-define ETC_ATTN_WARP_STEPS=3 --device-define ETC_ATTN_EVICT_FIRST=0 -o "$tmp/ll.fatbin" &&
  smem_is attention-warps-g4 etc_main_attention_decode_o_whole 16+21568
# heads_per_task = 2: the one-part grid's tasks each take two cache heads (attention_decode over
# several heads through one ring on the device) and compile.
sed 's/{ head_dim = HEAD }/{ head_dim = HEAD, heads_per_task = 2 }/' samples/llama_layer.etir >"$tmp/heads2.etir"
sed 's/{ head_dim = D }/{ head_dim = D, heads_per_task = 2 }/' "$attn_g4" >"$tmp/attn_g4_heads2.etir"
grep -q 'heads_per_task = 2' "$tmp/attn_g4_heads2.etir" || fail "heads-per-task: attention_alone_llama3_2_1b.etir's attention changed"
LIMIT=300 run heads-per-task 0 "$tmp/attn_g4_heads2.etir" -arch sm_90a -o "$tmp/heads2.fatbin" &&
  if [ -s "$tmp/heads2.fatbin" ]; then pass; else fail "heads-per-task: no fatbin"; fi
run heads-per-task-tasks 0 --emit=tasks "$tmp/heads2.etir" &&
  stdout_has heads-per-task-tasks "task @attention_decode_attn_whole grid [B - B * min(cdiv(S, 64) - 1, cdiv(16, B) - 1, 1), 4] (b, g) {"
run device-define-bad 1 --emit=cuda --device-define 'ETC_X=1;int y' samples/mlp.etir &&
  stderr_has device-define-bad "expects ETC_NAME=INTEGER, got 'ETC_X=1;int y'"
run device-define-name 1 --device-define CUDA_ARCH=1 samples/mlp.etir -o "$tmp/dd.fatbin"
[ -e "$tmp/dd.fatbin" ] && fail "device-define: an output was left behind" || pass
# Shared task code (the default; --share-task-code says so): the layers of a decode model share
# their task functions, and it compiles; --no-share-task-code keeps one function per task. (One
# cache head an attention task and one kernel, as the checks below of its code expect.)
python3 tools/gen_decode_sample.py llama3_2_1b --layers 2 --vocab 2048 --heads-per-task 1 >"$tmp/l2.etir"
run share-task-code 0 --emit=cuda --share-task-code "$tmp/l2.etir" &&
  stdout_has share-task-code "// the code of 6 tasks: @matmul_q_0 @matmul_k_0 @matmul_v_0 @matmul_q_1 @matmul_k_1 @matmul_v_1" &&
  stdout_has share-task-code "fn = 0; fa0 = " &&
  stdout_has share-task-code "if (fn == 0 && !task_matmul_q_0<kStatic, 0, ETC_MM_KERNEL_REACH(0xfull)>(p, ctx, t, fa0, "
run share-task-code-default 0 --emit=cuda "$tmp/l2.etir" &&
  stdout_has share-task-code-default "// the code of 6 tasks: @matmul_q_0 @matmul_k_0 @matmul_v_0 @matmul_q_1 @matmul_k_1 @matmul_v_1"
run no-share-task-code 0 --emit=cuda --no-share-task-code "$tmp/l2.etir" &&
  if grep -q "// the code of" "$tmp/out"; then fail "no-share-task-code: tasks share code"; else pass; fi
# --run-by-last-notifier: a task whose one wait is on an element no other task waits for runs in
# the CTA of the notifier that completes it. In the 2-layer decode sample: each layer's merge (at
# every B), and where B <= 1 its kv_append, the norms after its o (layer 1: layer 0's waits on two
# events) and down projections and the final norm; not attention (its notifier completes a row of
# 8 heads at once). The chained task's static turn ends at once where its element has notifiers;
# the notifiers add with notify_last and queue it; the kernel runs the queue after each task.
chained_cases() {  # NAME TASKS...: etc_chain's cases are exactly these tasks
  local name=$1; shift
  local got want
  got=$(grep -oE "^    case [0-9]+: \{  // @[a-z_0-9]+$" "$tmp/out" | sed 's/.*@//' | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  if [ "$got" = "$want" ]; then pass; else fail "$name: chained tasks '$got', expected '$want'"; fi
}
# (short_kv = 0: the merge of every launch, whose grid then reads no data.)
python3 tools/gen_decode_sample.py llama3_2_1b --layers 2 --vocab 2048 --heads-per-task 1 --short-kv 0 >"$tmp/l2s.etir"
run chained-decode 0 --emit=cuda --run-by-last-notifier "$tmp/l2s.etir" &&
  chained_cases chained-decode attention_merge_o_0 attention_merge_o_1 kv_append_k_cache_0 kv_append_k_cache_1 \
    add_rmsnorm_h_1 add_rmsnorm_h2_1 add_rmsnorm_hn &&
  stdout_has chained-decode "    if ((etc_s0) <= 1LL) {" &&
  stdout_has chained-decode "if (!etc_chain_drain<0>(p, ctx)) return;" &&
  stdout_has chained-decode "if (!task_attention_merge_o_0<kChained, 0>(p, ctx, t, "
run chained-sum 0 --emit=cuda --run-by-last-notifier samples/two_stage_sum.etir &&
  chained_cases chained-sum final &&
  stdout_has chained-sum "if (etc::dev::notify_last(p.events + lin, 1u, (unsigned)(" &&
  if awk '/bool task_final\(/ {f = 1} f && /return true;/ {r = NR} f && /etc::dev::wait\(/ {w = NR; exit}
          END {exit !(r && w && r < w)}' "$tmp/out"; then pass; else fail "chained-sum: @final's turn does not end before its wait"; fi
run chained-off 0 --emit=cuda samples/two_stage_sum.etir &&
  if grep -q "etc_chain\|notify_last" "$tmp/out"; then fail "chained-off: chaining without --run-by-last-notifier"; else pass; fi
# NVRTC compiles the chain (the queue, etc_chain's call of the kChained task), with --profile too.
LIMIT=300 run chained-nvrtc 0 samples/two_stage_sum.etir -arch sm_90a --run-by-last-notifier --profile -o "$tmp/chain.fatbin" &&
  if [ -s "$tmp/chain.fatbin" ]; then pass; else fail "chained-nvrtc: no fatbin"; fi
# Derived syms (the default): sym-only index math that divides or takes a min or max is read from
# the kernel parameters, which the runtime fills once per binding (the descriptor's "derived"), in
# locals of each function that uses them; --no-derived-syms keeps it in the code.
# (Its slot number follows the order the code first uses the expressions in.)
run derived-syms 0 --emit=cuda "$tmp/l2.etir" &&
  k=$(sed -n 's|^  //   etc_d\([0-9]*\) = min(cdiv(16, B), 8)$|\1|p' "$tmp/out" | head -1) &&
  stdout_has derived-syms "  //   etc_d$k = min(cdiv(16, B), 8)" &&
  stdout_has derived-syms "  [[maybe_unused]] const long long etc_d$k = p.derived[$k];" &&
  stdout_has derived-syms "static_assert(sizeof(EtcParams) == "
run no-derived-syms 0 --emit=cuda --no-derived-syms "$tmp/l2.etir" &&
  if grep -q "p\.derived\|etc_d[0-9]\|ETC_DERIVED" "$tmp/out"; then fail "no-derived-syms: the code reads derived syms"; else pass; fi
# Row forms (etc/device/rows.cuh) where a decode tile's row length is a constant, each falling
# back to the generic op in a function of its own; none for a row of symbolic length.
run row-forms 0 --emit=cuda --no-gated-matmul "$tmp/l2.etir" &&
  stdout_has row-forms "if (!etc::dev::add_rmsnorm_rows<2048>(ctx, a0, a1, a2, 1.0000000000000001e-05f, a3, a4)) etc_op" &&
  stdout_has row-forms "if (!etc::dev::reduce_parts_rows<512>(ctx, a0, a1)) etc_op" &&
  stdout_has row-forms "if (!etc::dev::rope_row<2048, 512, 64>(ctx, a0, a1, a2, a3, a4, etc::dev::RopeParams{64, 500000, true, 32, 1, 4, 8192})) etc_op" &&
  stdout_has row-forms "if (!etc::dev::silu_mul_rows<1024>(ctx, a0, a1, a2)) etc_op" &&
  stdout_has row-forms "if (!etc::dev::rmsnorm_rows<2048>(ctx, a0, a1, 1.0000000000000001e-05f, a2)) etc_op" &&
  stdout_has row-forms "if (!etc::dev::attention_merge_row<8, 256, 64>(ctx, a0, a1, a2, etc::dev::View<float>{})) etc_op"
# Fused row chains (etc/device/fused_rows.cuh): a layer's norm and q/k/v tasks, inline in the
# task with the chain's calls in a function of their own for other shapes. With
# --fold-attention the q/k/v chain runs in each attention task for its cache head (4 query heads
# and 1 cache head of 64), before the attention call, and the row grid is gone.
run fused-rows 0 --emit=cuda "$tmp/l2.etir" &&
  stdout_has fused-rows "    if (!etc::dev::reduce_add_rmsnorm_rows<2048, 1>(ctx, v0, v1, v3, v4, 1.0000000000000001e-05f, v5, v6)) etc_op" &&
  stdout_has fused-rows "    if (!etc::dev::qkv_rope_append_row<2048, 512, 64, 2, false, __nv_bfloat16>(ctx, v2, v0, v9, etc::dev::View<const __nv_bfloat16>{}, etc::dev::View<const __nv_bfloat16>{}, 0.0f, v6, etc::dev::RopeParams{64, 500000, true, 32, 1, 4, 8192}, v7, v14, v15)) etc_op"
run fused-rows-fold 0 --emit=cuda --fold-attention "$tmp/l2.etir" &&
  stdout_has fused-rows-fold "    if (!etc::dev::qkv_rope_append_row<256, 64, 64, 2, false, __nv_bfloat16>(ctx, v2, v0, v9, etc::dev::View<const __nv_bfloat16>{}, etc::dev::View<const __nv_bfloat16>{}, 0.0f, v6, etc::dev::RopeParams{64, 500000, true, 32, 1, 4, 8192}, v7, v14, v15)) etc_op" &&
  if grep -q "task @kv_append_k_cache_0" "$tmp/out"; then fail "fused-rows-fold: the q/k/v row grid is still there"; else pass; fi
run fold-attention-tasks 0 --emit=tasks --fold-attention "$tmp/l2.etir" &&
  stdout_has fold-attention-tasks "  kv_append(kr_1[b, g * 64 : g * 64 + 64], v_1[b, g * 64 : g * 64 + 64], pos[b]) -> k_cache_1[b, :, g * 64 : g * 64 + 64], v_cache_1[b, :, g * 64 : g * 64 + 64]" &&
  if grep -q "task @kv_append_k_cache_1 " "$tmp/out"; then fail "fold-attention-tasks: the row grid is still there"; else pass; fi
printf 'module @symrow\nsym N in [1, 64]\ntensor x : bf16[4, N] input\ntensor w : bf16[N] param\ntensor y : bf16[4, N] output\ngraph @main {\n  y = rmsnorm(x, w) { eps = 1e-5 }\n}\n' >"$tmp/symrow.etir"
# The gated matmul: its weights prefetched (both) before the waits with --weight-prefetch, one
# instantiation per tile_m.
run gated-matmul-cuda 0 --emit=cuda --weight-prefetch "$tmp/l2.etir" &&
  stdout_has gated-matmul-cuda "etc::dev::matmul_silu_mul_prefetch<16, 128, 128>(ctx, a0, a1, a2, true);" &&
  stdout_has gated-matmul-cuda "etc::dev::matmul_silu_mul<128, 128, 128, kFallbackCall>(ctx, a0, a1, a2, true, a3, prefetched);" &&
  stdout_has gated-matmul-cuda "(ctx, pa, pb, pc);"
# --weight-prefetch-after-chain: only the tasks whose producers run no matmul prefetch (q/k/v
# after the norm, o after attention, gate/up after the post-attention norm, the LM head), not
# down after gate/up; the three forms exclude each other.
no_prefetch_in() {  # NAME TASK: task TASK's function issues no prefetch
  if awk -v t="task_$2(" 'index($0, "bool " t) {f = 1} f && /^}/ {exit} f && /etc_prefetched = true/ {found = 1} END {exit !found}' "$tmp/out"; then
    fail "$1: @$2 prefetches"; else pass; fi
}
run prefetch-after-chain 0 --emit=cuda --weight-prefetch-after-chain "$tmp/l2.etir" &&
  prefetch_before_wait prefetch-after-chain matmul_q_0 && prefetch_before_wait prefetch-after-chain matmul_attn_0 &&
  prefetch_before_wait prefetch-after-chain matmul_act_0 && prefetch_before_wait prefetch-after-chain matmul_logits &&
  no_prefetch_in prefetch-after-chain matmul_down_0 && no_prefetch_in prefetch-after-chain matmul_down_0_wide
# The default is the after-chain form, said or not.
for flags in "" --weight-prefetch-after-chain; do
  run "prefetch-after-chain-mlp$flags" 0 --emit=cuda $flags samples/mlp.etir &&
    prefetch_before_wait "prefetch-after-chain-mlp$flags" matmul_act && no_prefetch_in "prefetch-after-chain-mlp$flags" matmul_down
done
run prefetch-all-down 0 --emit=cuda --weight-prefetch "$tmp/l2.etir" && prefetch_before_wait prefetch-all-down matmul_down_0
run prefetch-off-both 1 --emit=cuda --weight-prefetch-after-chain --no-weight-prefetch "$tmp/l2.etir" &&
  stderr_has prefetch-off-both "--weight-prefetch-after-chain excludes --no-weight-prefetch"
run prefetch-both 1 --emit=cuda --weight-prefetch --weight-prefetch-after-chain "$tmp/l2.etir" &&
  stderr_has prefetch-both "--weight-prefetch-after-chain excludes --weight-prefetch"
# tile_n = 24 (a multiple of 8, not a power of two): the device tile is the next power of two (32
# columns, 32 + 32 for the gated form), its columns past 24 clipped; the fatbin builds.
run tile-n-24 0 --emit=cuda tests/golden/passes/matmul_tile_n_24.etir &&
  stdout_has tile-n-24 "etc::dev::matmul_silu_mul<16, 64, 128, kFallbackCall>(ctx, a0, a1, a2, true, a3, prefetched);" &&
  stdout_has tile-n-24 "etc::dev::matmul<16, 32, 128, kFallbackCall>(ctx, a0, a1, true, a2, prefetched);"
LIMIT=300 run tile-n-24-nvrtc 0 tests/golden/passes/matmul_tile_n_24.etir -o "$tmp/t24.fatbin" &&
  if [ -s "$tmp/t24.fatbin" ]; then pass; else fail "tile-n-24-nvrtc: no fatbin"; fi
# gen_decode_sample.py --gated-tile-n 24: Qwen3-0.6B's gate/up as one gated matmul in 128 tasks of
# 24 columns (etcc's own choice is 96 of 32); a width that is not a multiple of 8 is refused.
python3 tools/gen_decode_sample.py qwen3_0_6b --layers 1 --vocab 1024 --gated-tile-n 24 >"$tmp/q24.etir"
run gated-tile-n-sample 0 --emit=tasks "$tmp/q24.etir" && stdout_has gated-tile-n-sample "task @matmul_act_0 grid [cdiv(I, 24)] (i) {"
if python3 tools/gen_decode_sample.py qwen3_0_6b --gated-tile-n 20 >/dev/null 2>"$tmp/gerr"; then
  fail "gated-tile-n-sample: --gated-tile-n 20 was accepted"
elif grep -qF -- "--gated-tile-n must be a multiple of 8 from 8 to 64" "$tmp/gerr"; then pass; else
  fail "gated-tile-n-sample: no word of the bad width: $(cat "$tmp/gerr")"; fi
# Each matmul instantiation in a function of its own, the dispatch over them in the task: a
# function holding all of them has the largest one's register count, and its prologue's
# register saves cost every call (docs/backend.md, "Matmul instantiations").
run matmul-instantiations 0 --emit=cuda --weight-prefetch "$tmp/l2.etir" &&
  stdout_has matmul-instantiations "    if constexpr (ETC_MM_REACH(0)) if (!etc_mm_done && (!(ETC_MM_REACH(1) || ETC_MM_REACH(2) || ETC_MM_REACH(3)) || v0.rank == 1 || v0.ext[0] <= 16)) { etc_op" &&
  stdout_has matmul-instantiations "    if constexpr (ETC_MM_REACH(2)) if (!etc_mm_done && (!(ETC_MM_REACH(3)) || pa.rank == 1 || pa.ext[0] <= 64)) { etc_op" &&
  stdout_has matmul-instantiations "    if constexpr (ETC_MM_REACH(3)) if (!etc_mm_done && (true)) { etc_op" &&
  stdout_has matmul-instantiations "(ctx, v0, v1, v2, etc_prefetched);" &&
  stdout_has matmul-instantiations "(ctx, pa, pb, pc);" &&
  if awk '/^__device__ __noinline__ void etc_op/ { n = 0 } /etc::dev::matmul(_silu_mul)?(_prefetch)?</ { n += gsub(/etc::dev::matmul(_silu_mul)?(_prefetch)?</, "") }
          /^}/ { if (n > 1) bad = 1; n = 0 } END { exit bad ? 0 : 1 }' "$tmp/out"; then
    fail "matmul-instantiations: a function holds more than one matmul instantiation"
  else pass; fi
# wgmma on sm_90a for the tiles of 64 and 128 rows (docs/backend.md); none for sm_80, nor with
# the knob that turns it off.
printf 'module @wg\nsym B in [1, 128]\ntensor x : bf16[B, 256] input\ntensor w : bf16[64, 256] param\ntensor y : bf16[B, 64] output\ngraph @main {\n  y = matmul(x, w) { transpose_b }\n}\n' >"$tmp/wg.etir"
LIMIT=60 run wgmma-ptx 0 --emit=ptx -arch sm_90a "$tmp/wg.etir" &&
  stdout_has wgmma-ptx "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16" &&
  stdout_has wgmma-ptx "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"
n_default=$(grep -c "wgmma.mma_async" "$tmp/out")
# The 16- and 32-row tiles take wgmma too by default (ETC_MM_WGMMA_MIN_ROWS 1); at 33 they keep
# mma.sync (fewer products in the PTX).
LIMIT=60 run wgmma-min-rows 0 --emit=ptx -arch sm_90a --device-define ETC_MM_WGMMA_MIN_ROWS=33 "$tmp/wg.etir" &&
  if [ "$(grep -c "wgmma.mma_async" "$tmp/out")" -lt "$n_default" ]; then pass; else
    fail "wgmma-min-rows: $(grep -c "wgmma.mma_async" "$tmp/out") wgmma products at 33, not fewer than the default's $n_default"; fi
for args in "-arch sm_80" "-arch sm_90a --device-define ETC_MM_WGMMA=0"; do
  # shellcheck disable=SC2086
  LIMIT=60 run "no-wgmma ($args)" 0 --emit=ptx $args "$tmp/wg.etir" &&
    if grep -q wgmma "$tmp/out"; then fail "no-wgmma ($args): the PTX has wgmma"; else pass; fi
done
# A hand-written matmul tile larger than the device kernel holds is refused, not clipped.
printf 'module @tl\ntensor x : bf16[4, 64] input\ntensor wg : bf16[100, 64] param\ntensor wu : bf16[100, 64] param\ntensor y : bf16[4, 100] output\ntask @t grid [1] (i) {\n  matmul(x, wg, wu) { transpose_b, act = "silu_mul" } -> y\n}\ngraph @main {\n  run @t\n}\n' >"$tmp/gated_tile.etir"
run gated-tile-too-large 1 "$tmp/gated_tile.etir" -o "$tmp/gated_tile.fatbin" &&
  stderr_has gated-tile-too-large "error: matmul has no device kernel for this form: a task's tile is at most 128 rows by 64 columns in the gated form (act = \"silu_mul\"), and this one has up to 4 by 100; cut the grid finer" &&
  if [ -e "$tmp/gated_tile.fatbin" ]; then fail "gated-tile-too-large: a fatbin was left behind"; else pass; fi
sed -e 's/wg, wu) { transpose_b, act = "silu_mul" }/wg) { transpose_b }/' -e 's/\[100, 64\]/[300, 64]/g' -e 's/\[4, 100\]/[4, 300]/' "$tmp/gated_tile.etir" >"$tmp/tile.etir"
run tile-too-large 1 --emit=cuda "$tmp/tile.etir" &&
  stderr_has tile-too-large "a task's tile is at most 256 rows by 256 columns, and this one has up to 4 by 300; cut the grid finer"
# The gated kernel walks b_up with b's strides: b_up from a tensor of another layout is refused.
printf 'module @st\nsym B in [1, 8]\ntensor x : bf16[B, 64] input\ntensor wg : bf16[32, 64] param\ntensor wu2 : bf16[32, 128] param\ntensor y : bf16[B, 32] output\ngraph @main {\n  y = matmul(x, wg, wu2[:, 0:64]) { transpose_b, act = "silu_mul" }\n}\n' >"$tmp/gated_strides.etir"
run gated-strides 1 --emit=cuda "$tmp/gated_strides.etir" &&
  stderr_has gated-strides "error: matmul has no device kernel for this form: the gated form (act = \"silu_mul\") reads b_up with b's strides, and wg and wu2 are laid out differently; make them slices of tensors of one shape"
run no-row-form 0 --emit=cuda "$tmp/symrow.etir" &&
  if grep -q "_rows<" "$tmp/out"; then fail "no-row-form: a row of symbolic length got a row form"; else pass; fi
# Shared task code through NVRTC: the samples' compile tests (every layer of the decode models
# shares its task functions by default; their sm_80 cubins call them out of line, as
# ETC_MM_INLINE=0 does on sm_90a, which mm-leaf-instantiations compiles). A 2-layer compile here
# took 30 to 45 s of this test's time and covered nothing they do not.
LIMIT=300 run dynamic-fatbin 0 --schedule=dynamic "$tmp/small_mlp.etir" -arch sm_90a -o "$tmp/dyn.fatbin"
# verify-schedule rejects a cycle; --no-verify-schedule lets it through (for watchdog tests).
run cycle-rejected 1 tests/gpu/hang/cycle.etir --emit=tasks && stderr_has cycle-rejected "wait on each other in a cycle: @first -> @second -> @first"
run cycle-unverified 0 tests/gpu/hang/cycle.etir --emit=tasks --no-verify-schedule
# A starved dynamic queue names a blocked task: its waits, spun on with a short budget.
run starved-diagnosis 0 tests/gpu/hang/missing_notify.etir --no-verify-schedule --schedule=dynamic --emit=cuda &&
  stdout_has starved-diagnosis "__device__ __noinline__ void diagnose_consume(const EtcParams& p, long long t)" &&
  stdout_has starved-diagnosis "if (etc::dev::sched_pending(s, g) < waits_consume(p, t)) stuck = g;" &&
  stdout_has starved-diagnosis "diagnose_consume(q, t);"
# A task's grid comes from the prefix ends in shared memory: a forward cursor in the static
# schedule, a binary search in the dynamic one; a graph without tasks runs none.
run dispatch-static 0 --emit=cuda --schedule=static --no-merge-tasks samples/mlp.etir &&
  stdout_has dispatch-static "while (g >= ends[kind]) ++kind;" &&
  stdout_has dispatch-static "const long long total = ends[4];"
run dispatch-dynamic 0 --emit=cuda --schedule=dynamic --no-merge-tasks samples/mlp.etir &&
  stdout_has dispatch-dynamic "const int kind = etc::dev::grid_of(ends, 5, g);"
printf 'module @e\ntensor x : f32[4] input\ntensor y : f32[4] output\ngraph @main {\n  y = add(x, x)\n}\ngraph @empty {\n}\n' >"$tmp/empty.etir"
for sched in static dynamic; do
  run "empty-graph-$sched" 0 --emit=cuda --schedule=$sched "$tmp/empty.etir" &&
    stdout_has "empty-graph-$sched" "const long long total = 0LL;" &&
    if grep -q "ends\[1844" "$tmp/out"; then fail "empty-graph-$sched: reads ends[-1]"; else pass; fi
done
LIMIT=300 run starved-fatbin 0 tests/gpu/hang/cycle.etir --no-verify-schedule --schedule=dynamic -arch sm_90a -o "$tmp/cyc.fatbin"

CUDA_HOME=/nonexistent run nvrtc-fails 1 samples/two_stage_sum.etir -arch sm_80 -o "$tmp/n.fatbin" &&
  stderr_has nvrtc-fails "the CUDA compile for sm_80 failed; NVRTC / nvJitLink said:" &&
  stderr_has nvrtc-fails 'could not open source file "cuda_fp16.h"'
[ -e "$tmp/n.fatbin" ] && fail "nvrtc-fails: output written on error" || pass
# A decode layer with a symbolic cache length lowers (split-KV parts follow S).
run decode-layer-lowers 0 samples/llama_layer.etir --emit=tasks -o "$tmp/l.tasks"
grep -q "attention_merge" "$tmp/l.tasks" && pass || fail "decode-layer-lowers: no attention_merge in the task-level form"
run no-file 1
run print-after-unknown 1 --print-after=bogus samples/mlp.etir
run color-bad 1 --color=sometimes samples/mlp.etir

# ---- outputs ----------------------------------------------------------------------------
run stdout-print 0 samples/two_stage_sum.etir && stdout_has stdout-print "module @two_stage_sum"
run write-o 0 samples/mlp.etir -o "$tmp/mlp.out.etir"
[ -s "$tmp/mlp.out.etir" ] && pass || fail "write-o: no output file"
ls "$tmp" | grep -q '\.tmp\.' && fail "write-o: temporary file left behind" || pass

printf 'module @bad\ntensor x : f32[Q] input\n' >"$tmp/bad.etir"
run error-no-output 1 "$tmp/bad.etir" -o "$tmp/bad.out"
[ -e "$tmp/bad.out" ] && fail "error-no-output: output file written on error" || pass
ls "$tmp" | grep -q '\.tmp\.' && fail "error-no-output: temporary file left behind" || pass
stderr_is error-render "$tmp/bad.etir:2:16: error: undefined name 'Q'
  tensor x : f32[Q] input
                 ^"

run unwritable-output 1 samples/mlp.etir -o "$tmp/no/such/dir/out.etir"
stderr_has unwritable-output "cannot write '$tmp/no/such/dir/out.etir'"

timeout 10 "$etcc" - <samples/mlp.etir >"$tmp/out" 2>"$tmp/err" && pass || fail "stdin: rejected"
stdout_has stdin "module @mlp"

run summary 0 samples/llama_layer.etir --summary -o "$tmp/l.etir"
stderr_has summary "module @llama_layer: verified"
stderr_has summary "w_gate_up"

# A dump after a pass that the options skip says so (fold-into-attention runs only with
# --fold-attention).
run print-after-skipped 0 samples/mlp.etir --print-after=fold-into-attention -o "$tmp/m.etir"
stderr_has print-after-skipped "// ----- IR after fold-into-attention (skipped) ----- //"
run print-after-specialize-skipped 0 samples/mlp.etir --print-after=specialize -o "$tmp/m.etir"
stderr_has print-after-specialize-skipped "// ----- IR after specialize (skipped) ----- //"
run print-after-specialize 0 tests/golden/passes/specialize.etir --specialize B=16,64 --print-after=specialize -o "$tmp/m.etir"
stderr_has print-after-specialize "// etc_main_mega_B16_63: megakernel of graph @main, schedule static, B in [16, 63]: @mid @sum"
run print-after-all 0 samples/mlp.etir --print-after-all -o "$tmp/m.etir"
stderr_has print-after-all "// ----- IR after parse ----- //"

# ---- colour -----------------------------------------------------------------------------
run color-always 1 --color=always "$tmp/bad.etir"
grep -q $'\033\[' "$tmp/err" && pass || fail "color-always: no escape codes"
run color-never 1 --color=never "$tmp/bad.etir"
grep -q $'\033\[' "$tmp/err" && fail "color-never: escape codes" || pass
NO_COLOR=1 run no-color-env 1 "$tmp/bad.etir"
grep -q $'\033\[' "$tmp/err" && fail "NO_COLOR: escape codes" || pass

# ---- includes ---------------------------------------------------------------------------
mkdir -p "$tmp/inc/lib"
printf 'const H = 64\n' >"$tmp/inc/lib/dims.etir"
printf 'module @m\ninclude "dims.etir"\ntensor x : f32[H] input\n' >"$tmp/inc/main.etir"
run include-missing 1 "$tmp/inc/main.etir"
stderr_has include-missing "cannot find include file 'dims.etir'"
run include-dir 0 -I "$tmp/inc/lib" "$tmp/inc/main.etir" && stdout_has include-dir "const H = 64"
printf 'include "b.etir"\nconst A = 1\n' >"$tmp/inc/a.etir"
printf 'include "a.etir"\nconst B = 2\n' >"$tmp/inc/b.etir"
printf 'module @m\ninclude "a.etir"\n' >"$tmp/inc/cycle.etir"
run include-cycle 1 "$tmp/inc/cycle.etir"
stderr_has include-cycle "include cycle: 'a.etir' is already being included"

# ---- resource limits: per-architecture shared memory, the report, the task queue ------------
# moe_align keeps 12 bytes per expert in shared memory: 14000 experts need 168016 bytes, above
# sm_80's 163 KiB per CTA but within sm_90's 227 KiB.
cat >"$tmp/experts.etir" <<'ETIR'
module @experts
sym T in [1, 64]
tensor ids : i32[T, 2] input
tensor sorted : i32[(cdiv(T * 2, 16) + 14000) * 16] output
tensor bexp : i32[cdiv(T * 2, 16) + 14000] output
tensor nblk : i32[1] output
graph @main {
  sorted, bexp, nblk = moe_align(ids) { num_experts = 14000, block = 16 }
}
ETIR
LIMIT=300 run smem-sm80 1 "$tmp/experts.etir" -arch sm_80 -arch sm_90a -o "$tmp/experts.fatbin" &&
  stderr_has smem-sm80 "etcc: error: kernel etc_main_mega needs " &&
  stderr_has smem-sm80 "of shared memory per CTA" &&
  stderr_has smem-sm80 "more than the 166912 bytes (163 KiB) a CTA may have on sm_80: use smaller tiles in task @moe_align" &&
  stderr_has smem-sm80 "or leave sm_80 out of --arch"
[ -e "$tmp/experts.fatbin" ] && fail "smem-sm80: an output was left behind" || pass
grep -q "sm_90a" "$tmp/err" && fail "smem-sm80: sm_90a reported as not fitting" || pass
LIMIT=300 run smem-sm90 0 "$tmp/experts.etir" -arch sm_90a --resource-usage -o "$tmp/experts.fatbin" &&
  stderr_has smem-sm90 "resources on sm_90a (232448 bytes (227 KiB) shared memory per CTA" &&
  stderr_has smem-sm90 "etc_main_mega" && stderr_has smem-sm90 "shared memory"
LIMIT=300 run smem-written-anyway 0 "$tmp/experts.etir" -arch sm_80 --no-check-resources -o "$tmp/experts80.fatbin" &&
  stderr_has smem-written-anyway "etcc: warning: kernel etc_main_mega needs " &&
  stderr_has smem-written-anyway "(written anyway: --no-check-resources)"
[ -s "$tmp/experts80.fatbin" ] && pass || fail "smem-written-anyway: no fatbin written"
run help-resources 0 --help && stdout_has help-resources "--resource-usage" && stdout_has help-resources "--no-check-resources"
# A dynamic schedule whose grid can reach 2^31 tasks: the 32-bit queue cannot hold it.
cat >"$tmp/queue.etir" <<'ETIR'
module @queue
sym N in [1, 140737488355328]
tensor a : u8[N] input
tensor b : u8[N] output
graph @main schedule dynamic {
  b = copy(a)
}
ETIR
run queue-limit 1 --emit=cuda "$tmp/queue.etir" && stderr_has queue-limit "the dynamic schedule's queue holds at most 2^31 - 1"

# ---- hostile inputs: a diagnostic and exit status 1, never a crash or a hang --------------
: >"$tmp/empty.etir"
run empty 1 "$tmp/empty.etir" && stderr_has empty "missing module declaration"
head -c 65536 /dev/urandom >"$tmp/random.etir"
run random-bytes 1 "$tmp/random.etir"
printf 'module @m\nsym N in [1, 4]\x00\x00 const X = 1\n' >"$tmp/nul.etir"
run nul-bytes 1 "$tmp/nul.etir" && stderr_has nul-bytes "null character in input"
printf 'module @m\ninclude "unterminated\n' >"$tmp/string.etir"
run unterminated-string 1 "$tmp/string.etir" && stderr_has unterminated-string "unterminated string"
{ printf 'module @m\nconst X = '; head -c 1000000 /dev/zero | tr '\0' '1'; printf '\n'; } >"$tmp/longline.etir"
run long-literal 1 "$tmp/longline.etir"
{ printf 'module @m\nconst X = '; for i in $(seq 1 1000); do printf '1 + '; done; printf '1\n'; } >"$tmp/chain.etir"
run chain-1000 1 "$tmp/chain.etir" && stderr_has chain-1000 "nested too deeply"
{ printf 'module @m\nconst X = '; head -c 100000 /dev/zero | tr '\0' '('; printf '1\n'; } >"$tmp/parens.etir"
run nested-parens 1 "$tmp/parens.etir" && stderr_has nested-parens "nested too deeply"
{ printf 'module @m\n'; for i in $(seq 1 200); do printf 'tensor t%d : f32[Q] input\n' "$i"; done; } >"$tmp/many.etir"
run many-errors 1 "$tmp/many.etir" && stderr_has many-errors "too many errors"

echo "slowest runs (s):$(awk '{ printf "%.1f %s\n", $2 - $1, $3 }' "$tmp/times" | sort -rn | head -8 | tr '\n' ',' | sed 's/,$//; s/,/, /g; s/^/ /')"
echo "$passed passed, $failures failed"
[ "$failures" -eq 0 ]
