#!/usr/bin/env python3
"""Writes random weights of a decode sample (tools/gen_decode_sample.py) as .safetensors in the
Hugging Face tensor names (model.layers.0.self_attn.q_proj.weight, ...), bf16, numpy only.
etc-run binds them with --weights (a param's '_' matches the entry's '.').

  tools/gen_decode_weights.py llama3_2_1b -o llama.safetensors [--layers N] [--vocab V] [--seed S]

Linear weights are N(0, 0.02) as in the models' initialization, norm weights 1 + N(0, 0.1), the
embedding N(0, 1) (tied: it is also the LM head, so logits stay O(1) after the final norm
scales hidden states to unit RMS... times 0.02 * sqrt(H)). Each tensor's values depend only on
the seed and its name. The file is written to a temporary and renamed: no partial file is left.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_decode_sample import MODELS, param_names, param_shape  # noqa: E402


def hf_name(name):
    """model_layers_0_self_attn_q_proj_weight -> model.layers.0.self_attn.q_proj.weight"""
    parts = name.split("_")
    out, i = [], 0
    # Known multi-word components of the Hugging Face names, longest first.
    words = ["embed_tokens", "input_layernorm", "post_attention_layernorm", "self_attn", "q_proj", "k_proj",
             "v_proj", "o_proj", "q_norm", "k_norm", "gate_proj", "up_proj", "down_proj"]
    while i < len(parts):
        for w in words:
            n = w.count("_") + 1
            if "_".join(parts[i:i + n]) == w:
                out.append(w)
                i += n
                break
        else:
            out.append(parts[i])
            i += 1
    return ".".join(out)


def to_bf16_bytes(x):
    """float32 array -> bf16 bytes (round to nearest even)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return r.tobytes()


def values(name, shape, seed):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if name.endswith("norm_weight") or name.endswith("layernorm_weight"):
        return 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
    if name == "model_embed_tokens_weight":
        return rng.standard_normal(shape, dtype=np.float32)
    return 0.02 * rng.standard_normal(shape, dtype=np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    m = MODELS[a.model]
    layers, vocab = a.layers or m["layers"], a.vocab or m["vocab"]
    params = [(n, param_shape(a.model, vocab, s)) for n, s in param_names(a.model, layers)]
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in params:
        size = int(np.prod(shape)) * 2
        header[hf_name(name)] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    tmp = a.output + ".tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for name, shape in params:
                f.write(to_bf16_bytes(values(name, shape, a.seed)))
        os.replace(tmp, a.output)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


if __name__ == "__main__":
    main()
