#!/usr/bin/env python3
"""Rewrites the task-level module of a decode step (etcc --emit tasks of a tools/gen_decode_sample.py
model) so that a launch runs split-KV attention only when some request is longer than T positions:
the per-launch choice between the one-part attention grid (no kv_ranges parts, no merge) and the
split grid with its merge, from the data. A measuring tool for what lower-ops should emit, not
part of the compiler (docs/benchmarks.md, session 75).

  etcc samples/llama3_2_1b.etir --emit tasks | tools/split_kv_by_length.py - [--max-short T] > dyn.etir
  etcc dyn.etir -o dyn.fatbin

The kv_ranges task also writes lmax = max(lens) and nlmax = -lmax (i32[1] temps). Where etcc
splits rows into parts (B < 16) the split grid and the merge take B * LONG rows and the one-part
grid B * SHORT rows from row 0, LONG = [lmax > T] read as min(max(load(lmax[0]) - T, 0), 1) and
SHORT = 1 - LONG read from nlmax, so that each extent grows with the value it loads (a
data-dependent grid's tasks are numbered over its bound: docs/backend.md). Every task of both
forms exists at the bound and notifies whether it runs or not; the count of the o projection's event
(which the merge notifies) is the merge's rows plus the one-part grid's. Both samples
(Llama-3.2-1B and Qwen3-0.6B) rewrite. The rewrite matches etcc's text exactly (the expressions
of the lowering in compiler/passes/lower_ops.cpp at session 75) and fails, naming what it did
not find, on any other module.
"""
import argparse
import re
import sys

# The lowering's expressions (parts > 1 below B = 16; the one-head one-part grid below B = 32).
M = "min(cdiv(16, B) - 1, 1)"
W = "min(max(32 - B, 0), 1)"
OLD_WHOLE = f"B * {W} - B * {M} * {W}"


class RewriteError(Exception):
    pass


def replace_once(text, old, new, what):
    n = text.count(old)
    if n != 1:
        raise RewriteError(f"{what}: expected once, found {n} times: {old[:120]}")
    return text.replace(old, new)


def rewrite(text, t, cache_len=None):
    layers = sorted({int(x) for x in re.findall(r"^task @attention_merge_o_(\d+) grid", text, re.M)})
    if not layers:
        raise RewriteError("no split-KV attention (task @attention_merge_o_<layer>): nothing to rewrite")
    if cache_len is None:
        m = re.search(r"^const S = (\d+)", text, re.M)
        if not m:
            raise RewriteError("the module has no `const S = N` (the cache's positions): give --cache-len")
        cache_len = int(m.group(1))
    long_ = f"min(max((load(lmax[0]) <= {cache_len}) - {t}, 0), 1)"
    short = f"min(max((load(nlmax[0]) <= 0) + {t + 1}, 0), 1)"
    text = replace_once(text, "tensor lens : i32[B] temp\n",
                        "tensor lens : i32[B] temp\ntensor lmax : i32[1] temp\ntensor negone : i32[1] temp\n"
                        "tensor nlmax : i32[1] temp\n", "the lens temp")
    text = replace_once(text, "  kv_ranges(lens) {",
                        "  reduce_max(lens) -> lmax[0]\n  fill() { value = -1 } -> negone\n"
                        "  mul(lmax, negone) -> nlmax\n  kv_ranges(lens) {", "the kv_ranges task")
    for l in layers:
        at = f"layer {l}"
        text = replace_once(text, f"task @attention_decode_o_{l} grid [B * {M}, 8, min(cdiv(16, B), 8)] (b, g, p)",
                            f"task @attention_decode_o_{l} grid [B * {M} * {long_}, 8, min(cdiv(16, B), 8)] (b, g, p)",
                            f"{at}: the split grid")
        text = replace_once(text, f"task @attention_merge_o_{l} grid [B * {M}, 8] (b, g)",
                            f"task @attention_merge_o_{l} grid [B * {M} * {long_}, 8] (b, g)", f"{at}: the merge")
        m = re.search(rf"^task @attention_decode_o_{l}_whole grid \[{re.escape(OLD_WHOLE)}, 8\] \(b, g\) \{{\n(.*?)\n\}}",
                      text, re.S | re.M)
        if not m:
            raise RewriteError(f"{at}: the one-part grid (task @attention_decode_o_{l}_whole grid [{OLD_WHOLE}, 8])")
        # Its rows start at 0: wherever it has rows below B = 16, the split grid has none.
        body = m.group(1).replace(f"B * {M} + b", "b")
        text = (text[:m.start()] + f"task @attention_decode_o_{l}_whole grid [{OLD_WHOLE} + B * {M} * {W} * {short}, 8] "
                f"(b, g) {{\n{body}\n}}" + text[m.end():])
        merge_ev = f"ev_attention_decode_o_{l}_attention_merge_o_{l}"
        init = f"init (b, g) -> min(cdiv(16, B), 8) * max(min(B * {M} - b, 1), 0)"
        text = replace_once(text, f"event {merge_ev} : [B * {M}, 8] {init}\n",
                            f"event {merge_ev} : [B * {M}, 8] {init} * {long_}\n", f"{at}: the merge's event")
        whole_ev = f"ev_kv_append_k_cache_{l}_attention_decode_o_{l}_whole"
        text = replace_once(text, f"event {whole_ev} : [{OLD_WHOLE}, 8] init (b, g) -> max(min(B - B * {M} - b, 1), 0)\n",
                            f"event {whole_ev} : [B * {W}, 8] init (b, g) -> max(min(B - b, 1), 0)\n",
                            f"{at}: the one-part grid's event")
        text, n = re.subn(rf"^  notify {whole_ev}\[[^\n]*\]\n",
                          f"  notify {whole_ev}[min(B * {W}, i) : min(B * {W}, i + 1), 0:8]\n", text, flags=re.M)
        if n != 1:
            raise RewriteError(f"{at}: kv_append's notify of the one-part grid, found {n} times")
        # The o projection's event, which the merge notifies: its count loses the merge's rows at
        # the syms (B * M) and gains them times LONG, and the one-part grid's B * M * W * SHORT.
        m = re.search(rf"^task @attention_merge_o_{l} grid [^\n]*\{{\n(?:[^\n]*\n)*?  notify (\w+)\[", text, re.M)
        if not m:
            raise RewriteError(f"{at}: the merge's notify")
        m = re.search(rf"^event {m.group(1)} : \[[^\n]*\] init ([^\n]*)$", text, re.M)
        if not m:
            raise RewriteError(f"{at}: the o projection's event")
        text = (text[:m.end(1)] + f" - B * {M} + B * {M} * {long_} + B * {M} * {W} * {short}" + text[m.end(1):])
    return text, len(layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tasks", help="the task-level module (etcc --emit tasks), '-' for standard input")
    ap.add_argument("--max-short", type=int, default=1024, metavar="T",
                    help="the longest row (positions) that still takes the one-part form (default 1024)")
    ap.add_argument("--cache-len", type=int, metavar="S",
                    help="the cache's positions, the bound of max(lens) (default: the module's `const S`)")
    a = ap.parse_args()
    if a.max_short < 1 or (a.cache_len is not None and a.cache_len < 1):
        ap.error("--max-short and --cache-len must be positive")
    try:
        text = sys.stdin.read() if a.tasks == "-" else open(a.tasks).read()
    except OSError as e:
        sys.exit(f"split_kv_by_length.py: {a.tasks}: {e.strerror}")
    try:
        out, n = rewrite(text, a.max_short, a.cache_len)
    except RewriteError as e:
        sys.exit(f"split_kv_by_length.py: {e}")
    sys.stdout.write(out)
    print(f"split_kv_by_length.py: {n} layers, one part while every row has at most {a.max_short} positions",
          file=sys.stderr)


if __name__ == "__main__":
    main()
