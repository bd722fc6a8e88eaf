#!/usr/bin/env bash
# The event passes' time under the opt-in forms that multiply a model's waits: Qwen3-0.6B (28
# layers) with --reuse-temps (which adds the waits its shared temps imply) and the folds. etcc -v
# reports each pass's milliseconds; infer-events and eliminate-events must each take at most
# LIMIT seconds. Before session 65 eliminate-events took 10.6 s here in an optimized build and
# 92 s in the sanitized one (its index of statements rebuilt after every retarget, duplicates and
# joins looked for among all pairs of events); now 1.6 s, and 22 s sanitized on a loaded 2-core
# machine. Both passes are still superlinear in the layers (about 3.5 times the time for twice
# the layers, from 14 to 28), so the bound is on this one input.
# Usage: pass_time_test.sh ETCC LIMIT   (from the repository root)
source "$(dirname "$0")/../harness.sh"
etcc=$1
limit=$2
"$etcc" samples/qwen3_0_6b.etir --emit tasks -o "$tmp/q.tasks" -v --fold-attention --fold-norms-below 3 --reuse-temps \
  --no-merge-tasks --no-gated-matmul 2>"$tmp/log" || fail "etcc: $(tail -3 "$tmp/log")"
for pass in infer-events eliminate-events; do
  ms=$(sed -n "s/^etcc: $pass: \([0-9.]*\) ms\$/\1/p" "$tmp/log")
  [ -n "$ms" ] || { fail "no '$pass' timing in etcc -v's report: $(head -5 "$tmp/log")"; continue; }
  awk -v ms="$ms" -v limit="$limit" 'BEGIN { exit !(ms <= limit * 1000) }' ||
    fail "$pass took $ms ms, over the $limit s allowed"
done
[ -s "$tmp/q.tasks" ] || fail "no task-level module written"
finish "pass time"
