"""Writes a router weight for samples/moe_block.etir that routes unevenly: 12 "hot" experts get
weights 40x larger than the other 116, so every token's top-8 falls among the hot ones (most
experts receive no token, a few receive many). bf16 is stored as raw 2-byte values ('|V2'),
the form etc-run reads. Usage: python3 moe_router.py OUT.npy"""
import sys

import numpy as np

E, H, HOT = 128, 2048, 12
rng = np.random.default_rng(11)
w = (rng.uniform(-1.0, 1.0, (E, H)) * 0.02).astype(np.float32)
w[:HOT] *= 40.0
bits = ((w.view(np.uint32) + 0x8000) >> 16).astype(np.uint16)  # round to nearest bf16
np.save(sys.argv[1], bits.view("V2"))
