#!/usr/bin/env python3
"""Writes the .etir of one decode step of a Llama-3 or Qwen3 model: embedding, every layer
(rmsnorm, q/k/v projections, [Qwen3: per-head q/k rmsnorm], rope, kv_append, split-KV decode
attention, o projection, residual add + rmsnorm, gate/up projections, silu_mul, down
projection), the final norm, the tied LM head and argmax. The residual stream is f32 (the
projections and the normed activations that feed the matmuls are bf16): a bf16 residual put
the logits of Llama-3.2-1B at 2.07e-2 relative L2 from a float32 PyTorch model, over the 2e-2
bf16 tolerance.

Param names are the Hugging Face tensor names with '.' written as '_' (etc-run binds
`model_layers_0_self_attn_q_proj_weight` to the .safetensors entry
`model.layers.0.self_attn.q_proj.weight`). One sym B (requests) and an input `pos` (each
request's position: its cache holds pos tokens, the new one is written at pos and attention
reads pos + 1 positions).

With --paged PAGE the KV caches are page pools instead (vLLM's paged cache): per layer
k_pages_<l>, v_pages_<l> : bf16[B * MAXP, PAGE, KW], MAXP = cdiv(S, PAGE) pages per request,
so the pool holds as many positions as the contiguous caches; an input page_table i32[B, MAXP]
gives request b's j-th page (positions j * PAGE .. j * PAGE + PAGE - 1). Which pages a request
uses is up to the caller (any pages, any order; the identity table b * MAXP + j reproduces the
contiguous layout).

  tools/gen_decode_sample.py llama3_2_1b > samples/llama3_2_1b.etir
  tools/gen_decode_sample.py qwen3_0_6b --layers 2 --vocab 4096 > small.etir   (reduced variant)
  tools/gen_decode_sample.py llama3_2_1b --paged 16 > llama3_2_1b_paged.etir
  tools/gen_decode_sample.py llama3_2_1b --heads-per-task 1 > llama3_2_1b_one_head.etir

By default the attention tasks of a one-part row take a number of cache heads that follows the
batch (heads_per_task = 0), and the graph asks for a megakernel per side of the first batch
that takes more than one (`specialize B = 32` for 8 cache heads), so that the smaller batches
run a kernel without the several-head grids: on an H200 (docs/benchmarks.md, session 54)
-2.4% to -8.2% at B = 32 to 128 and +0.3% to +1.7% at B = 1 to 16 against one head a task.
--heads-per-task N writes N instead, without the clause.
"""
import argparse
import shlex
import sys

MODELS = {
    # hidden, layers, q heads, kv heads, head dim, mlp, vocab, eps, rope attributes
    "llama3_2_1b": dict(
        title="Llama-3.2-1B", hidden=2048, layers=16, hq=32, hk=8, d=64, mlp=8192, vocab=128256, eps="1e-5",
        qk_norm=False,
        rope='theta = 500000.0, scaling = "llama3", scaling_factor = 32.0, low_freq_factor = 1.0, '
             'high_freq_factor = 4.0, original_max_position = 8192'),
    "qwen3_0_6b": dict(
        title="Qwen3-0.6B", hidden=1024, layers=28, hq=16, hk=8, d=128, mlp=3072, vocab=151936, eps="1e-6",
        qk_norm=True, rope="theta = 1000000.0"),
}


def param_shape(model, vocab, shape):
    """The numbers of a shape expression of param_names, e.g. "[QW, H]" -> (2048, 2048)."""
    m = MODELS[model]
    consts = dict(V=vocab, H=m["hidden"], QW=m["hq"] * m["d"], KW=m["hk"] * m["d"], D=m["d"], I=m["mlp"])
    return tuple(consts[x.strip()] for x in shape.strip("[]").split(","))


def param_names(model, layers):
    """(name, shape expression) of every param in Hugging Face order, '.' written as '_'."""
    m = MODELS[model]
    out = [("model_embed_tokens_weight", "[V, H]")]
    for l in range(layers):
        p = f"model_layers_{l}_"
        out += [(p + "input_layernorm_weight", "[H]"),
                (p + "self_attn_q_proj_weight", "[QW, H]"),
                (p + "self_attn_k_proj_weight", "[KW, H]"),
                (p + "self_attn_v_proj_weight", "[KW, H]")]
        if m["qk_norm"]:
            out += [(p + "self_attn_q_norm_weight", "[D]"), (p + "self_attn_k_norm_weight", "[D]")]
        out += [(p + "self_attn_o_proj_weight", "[H, QW]"),
                (p + "post_attention_layernorm_weight", "[H]"),
                (p + "mlp_gate_proj_weight", "[I, H]"),
                (p + "mlp_up_proj_weight", "[I, H]"),
                (p + "mlp_down_proj_weight", "[H, I]")]
    out.append(("model_norm_weight", "[H]"))
    return out


def kv_lines(l, page, heads_per_task=0, kv_splits=0, short_kv=None):
    """The kv_append and attention_decode of layer l: contiguous caches, or page pools."""
    attrs = "head_dim = D" + ("" if heads_per_task == 1 else f", heads_per_task = {heads_per_task}")
    attrs += f", kv_splits = {kv_splits}" if kv_splits else ""
    attrs += f", short_kv = {short_kv}" if short_kv is not None else ""
    if page is None:
        return (f"  k_cache_{l}, v_cache_{l} = kv_append(kr_{l}, v_{l}, pos)",
                f"  o_{l} = attention_decode(qr_{l}, k_cache_{l}, v_cache_{l}, lens) {{ {attrs} }}")
    return (f"  k_pages_{l}, v_pages_{l} = kv_append(kr_{l}, v_{l}, pos, page_table)",
            f"  o_{l} = attention_decode(qr_{l}, k_pages_{l}, v_pages_{l}, lens, page_table) {{ {attrs} }}")


def mlp_lines(l, p, gated_tile_n=None):
    """The gate and up projections and their silu_mul: three ops, which fuse-gated-matmul joins,
    or (gated_tile_n) the gated matmul written out with that tile width."""
    if gated_tile_n is not None:
        return [f"  act_{l} = matmul(h2_{l}, {p}mlp_gate_proj_weight, {p}mlp_up_proj_weight) "
                f"{{ transpose_b, act = \"silu_mul\", tile_n = {gated_tile_n} }}"]
    return [f"  gate_{l} = matmul(h2_{l}, {p}mlp_gate_proj_weight) {{ transpose_b }}",
            f"  up_{l} = matmul(h2_{l}, {p}mlp_up_proj_weight) {{ transpose_b }}",
            f"  act_{l} = silu_mul(gate_{l}, up_{l})"]


def first_several_heads(hk, rows_hi=128, tasks=128):
    """The smallest batch whose attention tasks take several cache heads under heads_per_task = 0
    (lower-ops: the largest divisor of hk up to hk / cdiv(tasks, B)); None if none up to rows_hi."""
    for b in range(1, rows_hi + 1):
        cap = hk // -(-tasks // b)
        if max((d for d in range(1, hk + 1) if hk % d == 0 and d <= cap), default=1) > 1:
            return b
    return None


# The tile attributes that --qkv-attrs, --o-attrs and --down-attrs may give a projection.
TILE_ATTRS = ("tile_m", "tile_n", "tile_k", "split_k")


def parse_tile_attrs(text):
    """'tile_n = 16, split_k = 1' -> the same text, normalized; ValueError naming what is wrong."""
    out = []
    for item in text.split(","):
        name, eq, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or name not in TILE_ATTRS or not value.isdigit() or int(value) < 1:
            raise ValueError(f"'{item.strip()}' is not NAME = POSITIVE INTEGER with NAME one of {', '.join(TILE_ATTRS)}")
        out.append(f"{name} = {int(value)}")
    return ", ".join(out)


def generate(model, layers, vocab, command, page=None, heads_per_task=0, gated_tile_n=None, proj_attrs=None,
             kv_splits=0, short_kv=None):
    m = MODELS[model]
    proj_attrs = proj_attrs or {}

    def mm(kind):
        """A projection's attribute block: transpose_b and the tiles the command line gave it."""
        return "{ transpose_b" + (", " + proj_attrs[kind] if proj_attrs.get(kind) else "") + " }"

    cut = first_several_heads(m["hk"]) if heads_per_task == 0 else None
    eps = m["eps"]
    lines = [f"// Generated by {command}; do not edit.",
             f"// One decode step of {m['title']} ({layers} layers, vocab {vocab}): every request (B of them) has",
             "// its own position pos[b]; its KV cache holds pos[b] tokens, the new token's k and v are written",
             "// at pos[b] and attention reads pos[b] + 1 positions. One fatbin serves every B and every position.",
             f"module @{model}" + ("" if (layers, vocab) == (m["layers"], m["vocab"]) else f"_l{layers}_v{vocab}")
             + ("" if page is None else f"_paged{page}"),
             "",
             "sym B in [1, 128]",
             f"const H = {m['hidden']}",
             f"const HQ = {m['hq']}   // query heads",
             f"const HK = {m['hk']}    // key/value heads",
             f"const D = {m['d']}    // head dim",
             "const QW = HQ * D",
             "const KW = HK * D",
             f"const I = {m['mlp']}",
             f"const V = {vocab}",
             "const S = 4097  // cache positions per request: 4096 past tokens and the new one",
             ]
    if page is not None:
        lines += [f"const PAGE = {page}  // positions per page of the KV pools",
                  "const MAXP = cdiv(S, PAGE)  // pages per request"]
    lines += ["",
              "tensor tokens : i32[B] input",
              "tensor pos : i32[B] input"]
    if page is not None:
        lines.append("tensor page_table : i32[B, MAXP] input  // request b's j-th page of every layer's pools")
    for name, shape in param_names(model, layers):
        lines.append(f"tensor {name} : bf16{shape} param")
    for l in range(layers):
        if page is None:
            lines.append(f"tensor k_cache_{l} : bf16[B, S, KW] output")
            lines.append(f"tensor v_cache_{l} : bf16[B, S, KW] output")
        else:
            lines.append(f"tensor k_pages_{l} : bf16[B * MAXP, PAGE, KW] output")
            lines.append(f"tensor v_pages_{l} : bf16[B * MAXP, PAGE, KW] output")
    lines += ["tensor ones : i32[B] temp",
              "tensor emb : bf16[B, H] temp",
              "tensor res : f32[B, H] temp   // the residual stream, in f32, updated in place",
              "tensor logits : bf16[B, V] output",
              "tensor next_token : i32[B] output",
              "",
              "graph @main {" if cut is None else f"graph @main specialize B = {cut} {{",
              "  ones = fill() { value = 1 }",
              "  lens = add(pos, ones)",
              "  emb = embedding(tokens, model_embed_tokens_weight)",
              "  res = cast(emb)"]
    for l in range(layers):
        p = f"model_layers_{l}_"
        if l == 0:
            lines.append(f"  h_0 = rmsnorm(emb, {p}input_layernorm_weight) {{ eps = {eps} }}")
        q, k = f"q_{l}", f"k_{l}"
        lines += [f"  q_{l} = matmul(h_{l}, {p}self_attn_q_proj_weight) {mm('qkv')}",
                  f"  k_{l} = matmul(h_{l}, {p}self_attn_k_proj_weight) {mm('qkv')}",
                  f"  v_{l} = matmul(h_{l}, {p}self_attn_v_proj_weight) {mm('qkv')}"]
        if m["qk_norm"]:
            lines += [f"  qn_{l} = rmsnorm(q_{l}, {p}self_attn_q_norm_weight) {{ eps = {eps}, head_dim = D }}",
                      f"  kn_{l} = rmsnorm(k_{l}, {p}self_attn_k_norm_weight) {{ eps = {eps}, head_dim = D }}"]
            q, k = f"qn_{l}", f"kn_{l}"
        lines += [f"  qr_{l}, kr_{l} = rope({q}, {k}, pos) {{ head_dim = D, {m['rope']} }}",
                  *kv_lines(l, page, heads_per_task, kv_splits, short_kv),
                  f"  attn_{l} = matmul(o_{l}, {p}self_attn_o_proj_weight) {mm('o')}",
                  f"  h2_{l}, res = add_rmsnorm(attn_{l}, res, {p}post_attention_layernorm_weight) {{ eps = {eps} }}",
                  *mlp_lines(l, p, gated_tile_n),
                  f"  down_{l} = matmul(act_{l}, {p}mlp_down_proj_weight) {mm('down')}"]
        nxt = f"model_layers_{l + 1}_input_layernorm_weight" if l + 1 < layers else "model_norm_weight"
        out = f"h_{l + 1}" if l + 1 < layers else "hn"
        lines.append(f"  {out}, res = add_rmsnorm(down_{l}, res, {nxt}) {{ eps = {eps} }}")
    lines += ["  logits = matmul(hn, model_embed_tokens_weight) { transpose_b }   // tied embeddings",
              "  next_token = argmax(logits)",
              "}"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--layers", type=int, help="number of layers (default: the model's)")
    ap.add_argument("--vocab", type=int, help="vocabulary size (default: the model's)")
    ap.add_argument("--paged", type=int, metavar="PAGE",
                    help="a paged KV cache: page pools of PAGE positions per page and an input page_table")
    ap.add_argument("--heads-per-task", type=int, metavar="N", default=0,
                    help="attention_decode's heads_per_task: cache heads an attention task takes where a row is one "
                         "part (B >= 16); 0 (the default): by the batch, with a megakernel per side of the first "
                         "batch that takes several (docs/ops.md); 1: the op's default, one kernel")
    ap.add_argument("--kv-splits", type=int, metavar="N", default=0,
                    help="attention_decode's kv_splits: the parts every row's positions are split into at every B; "
                         "1: no split and no merge, faster where every context is short (an H100, Llama-3.2-1B: "
                         "3.2%% faster at B = 1 and 5.2%% at 8 at position 511, but 9.7%% and 4.0%% slower at 4095; "
                         "docs/benchmarks.md, session 75); 0 (the default): parts that follow the batch and the "
                         "lengths")
    ap.add_argument("--short-kv", type=int, metavar="N",
                    help="attention_decode's short_kv: a launch whose rows all hold at most N positions takes one "
                         "part a row and no merge where the batch would split them (below B = 16); 0: never; "
                         "unwritten: the op's default, 1024")
    ap.add_argument("--gated-tile-n", type=int, metavar="N",
                    help="write each layer's gate/up projections as one gated matmul with tile_n = N (a multiple "
                         "of 8 up to 64) instead of letting etcc fuse them and choose the tiles: Qwen3-0.6B's 3072 "
                         "columns take 96 tasks of 32 by default, 128 of 24 with N = 24 (on an H200 level with 32: "
                         "docs/benchmarks.md, session 36)")
    for kind, what in (("qkv", "q, k and v"), ("o", "o"), ("down", "down")):
        ap.add_argument(f"--{kind}-attrs", metavar="ATTRS",
                        help=f"tile attributes of every layer's {what} projection{'s' if kind == 'qkv' else ''}, e.g. "
                             "'tile_n = 16, tile_k = 512, split_k = 1' (tile_m, tile_n, tile_k, split_k), instead of "
                             "etcc's plan (session 67 timed narrow tiles without split-K this way: docs/benchmarks.md)")
    ap.add_argument("--unsplit", action="store_true",
                    help="every layer's q/k/v, o and down projections without split-K parts: q/k/v in tiles of 32 "
                         "rows of the weights, o and down in 128 tasks (hidden / 128 rows each), all 256 deep; "
                         "--qkv-attrs, --o-attrs and --down-attrs override it. With etcc --fold-norms-below 3 "
                         "--fold-attention a layer is then 6 grids below B = 3 instead of 9 (docs/benchmarks.md, "
                         "session 68)")
    a = ap.parse_args()
    m = MODELS[a.model]
    layers, vocab = a.layers or m["layers"], a.vocab or m["vocab"]
    if layers < 1 or vocab < 1:
        ap.error("--layers and --vocab must be positive")
    if a.paged is not None and a.paged < 1:
        ap.error("--paged must be positive")
    if a.heads_per_task < 0 or (a.heads_per_task > 0 and m["hk"] % a.heads_per_task):
        ap.error(f"--heads-per-task must be 0 or divide the model's {m['hk']} cache heads")
    if a.kv_splits < 0:
        ap.error("--kv-splits must be 0 or positive")
    if a.short_kv is not None and a.short_kv < 0:
        ap.error("--short-kv must be 0 or positive")
    if a.gated_tile_n is not None and (a.gated_tile_n % 8 or not 8 <= a.gated_tile_n <= 64):
        ap.error("--gated-tile-n must be a multiple of 8 from 8 to 64")
    proj_attrs = {}
    if a.unsplit:
        rows = m["hidden"] // 128
        proj_attrs = {"qkv": "tile_n = 32, tile_k = 256, split_k = 1",
                      "o": f"tile_n = {rows}, tile_k = 256, split_k = 1",
                      "down": f"tile_n = {rows}, tile_k = 256, split_k = 1"}
    for kind in ("qkv", "o", "down"):
        text = getattr(a, f"{kind}_attrs")
        if text is not None:
            try:
                proj_attrs[kind] = parse_tile_attrs(text)
            except ValueError as e:
                ap.error(f"--{kind}-attrs: {e}")
    command = "tools/gen_decode_sample.py " + " ".join(shlex.quote(x) for x in sys.argv[1:])
    sys.stdout.write(generate(a.model, layers, vocab, command, a.paged, a.heads_per_task, a.gated_tile_n, proj_attrs,
                              a.kv_splits, a.short_kv))


if __name__ == "__main__":
    main()
