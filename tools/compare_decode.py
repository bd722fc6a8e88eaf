#!/usr/bin/env python3
"""The decode-step comparison harness (docs/benchmarks.md): one model, one fatbin, one process.

    PYTHONPATH=python python3 tools/compare_decode.py llama3_2_1b --fatbin gpu-bundle/llama3_2_1b.fatbin \
        --weights /tmp/llama.safetensors [--batches 1,2,4,8,16,32,64,128] [--kv 1,511,4096] [--bench-kv 512]

The weights are a .safetensors file in the Hugging Face names (tools/gen_decode_weights.py
writes random ones); the same file feeds the etc fatbin (a param's '_' is the entry's '.') and
a PyTorch model of the same decode step written here from the model's config
(tools/gen_decode_sample.py MODELS).

Correctness, for every batch B and KV length: the megakernel's logits against a float32
PyTorch reference (relative L2, tolerance 2e-2) and its argmax tokens against the reference's
argmax (at least 99% equal), each request at its own position (requests' lengths differ).

Timing, for every batch B at --bench-kv: PyTorch eager (bf16, attention through the fused SDPA
kernel), PyTorch replayed as a CUDA graph (and the capture time), at the batches of
--compile-batches the same under torch.compile replayed as a CUDA graph (and the compile time),
etc unfused, etc unfused under a CUDA graph, etc megakernel, and the
floor: the bytes that must move (weights once, the KV cache read, the new KV written) over the
measured device-to-device copy bandwidth. Device events, median of --iters launches after
warm-up. Prints one table; exit 1 if a correctness check fails, 77 without PyTorch or a GPU.
"""
import argparse
import json
import os
import struct
import sys
import time

T_START = time.perf_counter()

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: PyTorch sees no GPU")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
from gen_decode_sample import MODELS  # noqa: E402
import etc  # noqa: E402

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "I32": torch.int32}
CACHE_LEN = 4097  # the samples' S: 4096 past positions and the new one


def load_safetensors(path):
    """name -> CPU tensor, read as the file says (dtype, shape, offsets checked)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = DTYPES[info["dtype"]]
        a, b = info["data_offsets"]
        if not 0 <= a <= b <= len(data):
            raise ValueError(f"{path}: {name}: offsets {a}..{b} outside the data ({len(data)} bytes)")
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=dtype).reshape(info["shape"])
    return out


# ---- the PyTorch model ------------------------------------------------------------------------------
def rope_inv_freq(cfg):
    """Per-pair frequencies (float64), with Llama 3's rescaling where the model has it."""
    d = cfg["d"]
    attrs = dict(kv.split(" = ") for kv in cfg["rope"].split(", "))
    theta = float(attrs["theta"])
    f = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    if attrs.get("scaling", '"none"').strip('"') == "llama3":
        factor, low, high = (float(attrs[k]) for k in ("scaling_factor", "low_freq_factor", "high_freq_factor"))
        orig = float(attrs["original_max_position"])
        wavelen = 2 * torch.pi / f
        smooth = (orig / wavelen - low) / (high - low)
        mid = (1 - smooth) * f / factor + smooth * f
        f = torch.where(wavelen > orig / low, f / factor, torch.where(wavelen >= orig / high, mid, f))
    return f


def rmsnorm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


class TorchDecode:
    """One decode step of the model, in `dtype` (bf16: the timed baseline; float32: the reference)."""

    def __init__(self, cfg, weights, dtype):
        self.cfg, self.dtype = cfg, dtype
        self.eps = float(cfg["eps"])
        self.w = {k: v.to("cuda", dtype) for k, v in weights.items()}
        self.inv_freq = rope_inv_freq(cfg).to("cuda", torch.float32)

    def rope(self, x, pos, heads):
        d = self.cfg["d"]
        ang = pos.float()[:, None] * self.inv_freq[None, :]  # [B, d/2]
        cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
        x = x.view(x.shape[0], heads, d).float()
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        y = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return y.reshape(x.shape[0], heads * d).to(self.dtype)

    def step(self, tokens, pos, k_cache, v_cache, kv_max):
        """tokens, pos: int32 [B]; caches: per layer [B, S, HK*D], updated at pos; kv_max: the
        largest pos + 1 (attention reads cache[:, :kv_max] with positions >= pos + 1 masked)."""
        c, w, eps = self.cfg, self.w, self.eps
        B, hq, hk, d = tokens.shape[0], c["hq"], c["hk"], c["d"]
        rows = torch.arange(B, device="cuda")
        res = w["model.embed_tokens.weight"][tokens.long()]
        keep = torch.arange(kv_max, device="cuda")[None, :] <= pos.long()[:, None]  # [B, L]: positions read
        h = rmsnorm(res, w["model.layers.0.input_layernorm.weight"], eps)
        for layer in range(c["layers"]):
            p = f"model.layers.{layer}."
            q = h @ w[p + "self_attn.q_proj.weight"].T
            k = h @ w[p + "self_attn.k_proj.weight"].T
            v = h @ w[p + "self_attn.v_proj.weight"].T
            if c["qk_norm"]:
                q = rmsnorm(q.view(B, hq, d), w[p + "self_attn.q_norm.weight"], eps).view(B, hq * d)
                k = rmsnorm(k.view(B, hk, d), w[p + "self_attn.k_norm.weight"], eps).view(B, hk * d)
            q, k = self.rope(q, pos, hq), self.rope(k, pos, hk)
            k_cache[layer][rows, pos.long()] = k.to(k_cache[layer].dtype)
            v_cache[layer][rows, pos.long()] = v.to(v_cache[layer].dtype)
            # Grouped-query attention as a PyTorch user writes it in the model's dtype: the
            # fused SDPA kernel, each cache head's G query heads as G query rows against that
            # head's positions (no copy of the cache, no float32 detour).
            kc = k_cache[layer][:, :kv_max].view(B, kv_max, hk, d).transpose(1, 2).to(self.dtype)
            vc = v_cache[layer][:, :kv_max].view(B, kv_max, hk, d).transpose(1, 2).to(self.dtype)
            qg = q.view(B, hk, hq // hk, d)
            o = torch.nn.functional.scaled_dot_product_attention(qg, kc, vc, attn_mask=keep[:, None, None, :])
            o = o.reshape(B, hq * d)
            attn = o @ w[p + "self_attn.o_proj.weight"].T
            res = res + attn
            h2 = rmsnorm(res, w[p + "post_attention_layernorm.weight"], eps)
            act = torch.nn.functional.silu(h2 @ w[p + "mlp.gate_proj.weight"].T) * (h2 @ w[p + "mlp.up_proj.weight"].T)
            res = res + act @ w[p + "mlp.down_proj.weight"].T
            nxt = f"model.layers.{layer + 1}.input_layernorm.weight" if layer + 1 < c["layers"] else "model.norm.weight"
            h = rmsnorm(res, w[nxt], eps)
        logits = h @ w["model.embed_tokens.weight"].T
        return logits, logits.argmax(-1).to(torch.int32)


# ---- inputs ----------------------------------------------------------------------------------------
def positions(batch, kv):
    """Each request's position (its cache holds pos tokens; attention reads pos + 1): the first
    request at kv - 1, the others spread below it, so lengths differ between requests."""
    g = torch.Generator().manual_seed(batch * 7919 + kv)
    p = torch.randint(0, kv, (batch,), generator=g, dtype=torch.int32)
    p[0] = kv - 1
    return p.cuda()


def caches(cfg, batch, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    kw = cfg["hk"] * cfg["d"]
    # Drawn in bf16 in place: a float32 draw of Qwen3's layer at B = 128 is 2 GiB more at the peak.
    mk = lambda: torch.randn(batch, CACHE_LEN, kw, device="cuda", generator=g, dtype=torch.bfloat16).mul_(0.5)  # noqa: E731
    return [mk() for _ in range(cfg["layers"])], [mk() for _ in range(cfg["layers"])]


class EtcDecode:
    def __init__(self, path, weights_gpu):
        self.m = etc.Module(path)
        self.names = {t.name for t in self.m.tensors}
        self.params = {name.replace(".", "_"): t for name, t in weights_gpu.items()}
        missing = [t.name for t in self.m.tensors if t.role == "param" and t.name not in self.params]
        if missing:
            raise SystemExit(f"the weights have no entry for the fatbin's params {missing[:5]}")

    def bind(self, tokens, pos, k_cache, v_cache):
        B = tokens.shape[0]
        self.m.set_syms(B=B)
        self.logits = torch.empty(self.m.tensor_shape("logits"), dtype=torch.bfloat16, device="cuda")
        self.next_token = torch.empty(B, dtype=torch.int32, device="cuda")
        t = dict(tokens=tokens, pos=pos, logits=self.logits, next_token=self.next_token)
        for layer in range(len(k_cache)):
            t[f"k_cache_{layer}"], t[f"v_cache_{layer}"] = k_cache[layer], v_cache[layer]
        t.update({k: v for k, v in self.params.items() if k in self.names})
        self.m.bind(**t)

    def launch(self, mode="mega"):
        self.m.launch(mode=mode)

    def unbind(self):
        """Drops the module's references to what bind() gave it, so that the caches can be freed
        before the next ones are drawn (the module keeps every bound tensor alive)."""
        self.m.unbind()
        self.logits = self.next_token = None


# ---- timing ----------------------------------------------------------------------------------------
def time_us(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    ts.sort()
    return ts[len(ts) // 2], ts[0], ts[-1]


def graph_of(fn, args):
    """fn(*args) captured as a CUDA graph, after a warm-up call on a side stream: the graph and
    the capture's milliseconds."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(*args)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    t = time.perf_counter()
    with torch.cuda.graph(graph):
        fn(*args)
    torch.cuda.synchronize()
    return graph, (time.perf_counter() - t) * 1e3


def time_compiled(step, args, iters):
    """The step under torch.compile (Inductor's fused kernels, compiled for these shapes),
    replayed as a CUDA graph: its median us and the compile time (first call) in seconds."""
    torch._dynamo.reset()
    fn = torch.compile(step, dynamic=False)
    t = time.perf_counter()
    fn(*args)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - t
    graph, _ = graph_of(fn, args)
    us = time_us(graph.replay, iters)[0]
    del graph
    return us, compile_s


def copy_bandwidth():
    """Bytes per second of a 1 GiB device-to-device copy, read + write: the best of three
    medians of 20 copies. The floor divides by it, so a slow reading flatters every ratio (one
    call's single median was 3.75 TB/s where another's was 4.09)."""
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    best = min(time_us(lambda: y.copy_(x), 20, 10)[0] for _ in range(3))
    return 2 * x.numel() / (best * 1e-6)


def floor_bytes(cfg, weights, batch, pos):
    """Weights read once (the embedding as the LM head; its lookup rows are in the noise), the
    KV cache read up to each request's length, the new K and V written."""
    w = sum(t.numel() * t.element_size() for t in weights.values())
    kw = cfg["hk"] * cfg["d"]
    kv_read = 2 * cfg["layers"] * int((pos.long() + 1).sum()) * kw * 2
    kv_write = 2 * cfg["layers"] * batch * kw * 2
    return w + kv_read + kv_write


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--fatbin", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--kv", default="1,511,4096", help="KV lengths checked for correctness")
    ap.add_argument("--bench-kv", type=int, default=512, help="KV length of the timed runs (0: no timing)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--compile-batches", default="",
                    help="time the bf16 model under torch.compile, replayed as a CUDA graph, at these batches "
                         "(each compiles for about half a minute)")
    ap.add_argument("--json", help="write every number here too")
    a = ap.parse_args()
    cfg = MODELS[a.model]
    batches = [int(x) for x in a.batches.split(",")]
    kvs = [int(x) for x in a.kv.split(",") if x]
    compile_batches = {int(x) for x in a.compile_batches.split(",") if x}

    # Warm-up as a user sees it: the weights file to the GPU, the fatbin loaded, one step.
    t0 = time.perf_counter()
    host = load_safetensors(a.weights)
    weights = {k: v.cuda() for k, v in host.items()}
    torch.cuda.synchronize()
    t_weights = time.perf_counter() - t0
    t1 = time.perf_counter()
    mine = EtcDecode(a.fatbin, weights)
    t_load = time.perf_counter() - t1
    tok = torch.zeros(1, dtype=torch.int32, device="cuda")
    kc, vc = caches(cfg, 1, 1)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    mine.bind(tok, positions(1, 1), kc, vc)
    t_bind = time.perf_counter() - t2
    t3 = time.perf_counter()
    mine.launch()
    mine.m.check_error()
    t_step = time.perf_counter() - t3
    t_first = t_load + t_bind + t_step
    print(f"warm-up: process start to first etc token {(time.perf_counter() - T_START) * 1e3:.0f} ms "
          f"(weights to the GPU {t_weights * 1e3:.0f} ms, fatbin load + bind + first step {t_first * 1e3:.0f} ms: "
          f"load {t_load * 1e3:.1f}, bind {t_bind * 1e3:.1f}, first step {t_step * 1e3:.1f} ms)")

    # The copy is timed before the checks as well as before the timings: the faster reading
    # defines the floor (one call's two models read 4.19 and 3.76 TB/s at the timings alone).
    bw_first = copy_bandwidth() if a.bench_kv > 0 else 0.0
    ref = TorchDecode(cfg, host, torch.float32)
    failures, results = 0, {"model": a.model, "gpu": torch.cuda.get_device_name(), "checks": [], "bench": []}
    kc = vc = None
    for kv in kvs:
        for B in batches:
            g = torch.Generator(device="cuda").manual_seed(B * 31 + kv)
            tokens = torch.randint(0, cfg["vocab"], (B,), device="cuda", generator=g, dtype=torch.int32)
            pos = positions(B, kv)
            mine.unbind()  # Qwen3's caches at B = 128 take 60 GB: never two sets at once
            kc = vc = None
            torch.cuda.empty_cache()
            kc, vc = caches(cfg, B, B + kv)
            mine.bind(tokens, pos, kc, vc)
            mine.launch()
            mine.m.check_error()
            # The reference then runs on the same caches: the past is the same random values, and
            # it overwrites the new rows with its own, so keep etc's new rows to compare.
            rows = torch.arange(B, device="cuda")
            mine_k = [kc[i][rows, pos.long()].clone() for i in range(cfg["layers"])]
            want_logits, want_tok = ref.step(tokens, pos, kc, vc, int(pos.max()) + 1)
            err = rel_l2(mine.logits, want_logits)
            agree = (mine.next_token == want_tok).float().mean().item()
            nan = bool(torch.isnan(mine.logits.float()).any())
            cache_err = max(rel_l2(mine_k[i], kc[i][rows, pos.long()]) for i in range(cfg["layers"]))
            ok = err < 2e-2 and agree >= 0.99 and not nan and cache_err < 2e-2
            failures += not ok
            results["checks"].append(dict(B=B, kv=kv, logits_rel_l2=err, argmax_agree=agree, cache_rel_l2=cache_err, ok=ok))
            print(f"check B={B:<3} kv={kv:<4} logits rel L2 {err:.2e}  argmax equal {agree * 100:.1f}%  "
                  f"k cache rel L2 {cache_err:.1e}  {'ok' if ok else 'FAIL'}", flush=True)
    del ref
    mine.unbind()
    kc = vc = None
    torch.cuda.empty_cache()

    if a.bench_kv > 0:
        bw_last = copy_bandwidth()
        bw = max(bw_first, bw_last)
        results["copy_bytes_per_s"] = dict(before_checks=bw_first, before_timings=bw_last, floor_uses=bw)
        eager = TorchDecode(cfg, host, torch.bfloat16)
        print(f"\n{cfg['title']} decode step, KV {a.bench_kv}, {torch.cuda.get_device_name()}, copy {bw / 1e12:.2f} TB/s "
              f"(read {bw_first / 1e12:.2f} before the checks, {bw_last / 1e12:.2f} after); median us over {a.iters} runs")
        print(f"{'B':>4} {'floor':>8} {'eager':>8} {'graph':>8} {'capture':>8} {'compiled':>8} {'compile':>8} "
              f"{'unfused':>8} {'unf+graph':>9} {'mega':>8} {'mega/floor':>10}")
        for B in batches:
            tokens = torch.randint(0, cfg["vocab"], (B,), device="cuda", dtype=torch.int32)
            pos = positions(B, a.bench_kv)
            kv_max = int(pos.max()) + 1
            mine.unbind()
            kc = vc = None
            torch.cuda.empty_cache()
            kc, vc = caches(cfg, B, 5)
            row = dict(B=B, floor=floor_bytes(cfg, weights, B, pos) / bw * 1e6)
            row["eager"] = time_us(lambda: eager.step(tokens, pos, kc, vc, kv_max), max(5, a.iters // 5))[0]
            graph, row["capture_ms"] = graph_of(eager.step, (tokens, pos, kc, vc, kv_max))
            row["graph"] = time_us(graph.replay, a.iters)[0]
            del graph
            if B in compile_batches:
                row["compiled"], row["compile_s"] = time_compiled(eager.step, (tokens, pos, kc, vc, kv_max), a.iters)
            mine.bind(tokens, pos, kc, vc)
            for mode, key in (("unfused", "unfused"), ("unfused-graph", "unfused_graph"), ("mega", "mega")):
                row[key] = time_us(lambda: mine.launch(mode), a.iters)[0]
            mine.m.check_error()
            results["bench"].append(row)
            compiled = f"{row['compiled']:>8.1f} {row['compile_s']:>7.1f}s" if "compiled" in row else f"{'-':>8} {'-':>8}"
            print(f"{B:>4} {row['floor']:>8.1f} {row['eager']:>8.1f} {row['graph']:>8.1f} {row['capture_ms']:>6.1f}ms "
                  f"{compiled} {row['unfused']:>8.1f} {row['unfused_graph']:>9.1f} {row['mega']:>8.1f} "
                  f"{row['mega'] / row['floor']:>9.2f}x", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    print("ALL CHECKS PASS" if failures == 0 else f"{failures} CHECKS FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
