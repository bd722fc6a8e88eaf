#!/usr/bin/env python3
"""Runs etc fatbins from PyTorch and checks them against PyTorch references.

    PYTHONPATH=python python3 python/examples/run_from_torch.py DIR

DIR holds two_stage_sum.fatbin and mlp.fatbin (etcc samples/X.etir -o DIR/X.fatbin), and
optionally two_stage_sum_profile.fatbin (etcc --profile), whose task records are checked. The
runtime library is found as the binding says (ETC_RUNTIME_LIB, or the installed layout).
Prints one line per case; exits 1 if any case is off, 77 if PyTorch or a GPU is missing.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: PyTorch sees no GPU")
    sys.exit(77)

import etc


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-30)).item()


def two_stage_sum(path, n):
    m = etc.Module(path)
    m.set_syms(N=n)
    a = torch.randn(n, device="cuda")
    out = torch.empty(m.tensor_shape("out"), device="cuda")
    m.bind(a=a, out=out)
    m.launch()      # on torch's current stream
    m.check_error()
    return rel_l2(out, a.double().sum().reshape(1)), 1e-5


def profiled_sum(path, n):
    """etcc --profile: one record per task run, every tile once, the final task ending after every
    partial one (it waits for them all). Returns (problems, 1) with problems = 0 when all hold."""
    m = etc.Module(path)
    m.set_syms(N=n)
    a = torch.randn(n, device="cuda")
    out = torch.empty(1, device="cuda")
    m.bind(a=a, out=out)
    m.launch()
    recs = m.read_profile()
    tiles = (n + 1023) // 1024
    partial = sorted(r["coords"][0] for r in recs if r["task"] == 0)
    final = [r for r in recs if r["task"] == 1]
    problems = 0
    problems += partial != list(range(tiles))
    problems += len(final) != 1
    problems += any(r["end_ns"] < r["start_ns"] for r in recs)
    if final and partial:
        # A partial task reads its end time just after its notify, which the final task may see
        # first: allow the timer's granularity (about 1 us on some GPUs) and the reading's delay.
        problems += final[0]["end_ns"] + 2000 < max(r["end_ns"] for r in recs if r["task"] == 0)
    problems += rel_l2(out, a.double().sum().reshape(1)) >= 1e-5
    return problems, 1


def mlp_weights(m):
    bf16 = dict(dtype=torch.bfloat16, device="cuda")
    H, I = m.tensor_shape("ln")[0], m.tensor_shape("w_down")[1]
    ln = (1 + 0.1 * torch.randn(H, device="cuda")).to(torch.bfloat16)
    w_gate_up = (0.02 * torch.randn(2 * I, H, device="cuda")).to(torch.bfloat16)
    w_down = (0.02 * torch.randn(H, I, device="cuda")).to(torch.bfloat16)
    return dict(ln=ln, w_gate_up=w_gate_up, w_down=w_down)


def mlp_ref(x, ln, w_gate_up, w_down):
    """rmsnorm -> gate/up projection -> SiLU-gated product -> down projection -> residual add,
    each intermediate rounded to bf16 as the module's bf16 temps are."""
    I = w_down.shape[1]
    xf = x.float()
    h = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5) * ln.float()).to(torch.bfloat16)
    gate_up = (h.float() @ w_gate_up.float().T).to(torch.bfloat16).float()
    act = (torch.nn.functional.silu(gate_up[:, :I]) * gate_up[:, I:]).to(torch.bfloat16)
    down = (act.float() @ w_down.float().T).to(torch.bfloat16)
    return (xf + down.float()).to(torch.bfloat16)


def mlp(path, b):
    m = etc.Module(path)
    m.set_syms(B=b)
    w = mlp_weights(m)
    x = torch.randn(b, w["ln"].shape[0], dtype=torch.bfloat16, device="cuda")
    y = torch.empty(m.tensor_shape("y"), dtype=torch.bfloat16, device="cuda")
    m.bind(x=x, y=y, **w)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())  # the inputs were made on the default stream
    with torch.cuda.stream(stream):  # the launch follows torch's current stream
        m.launch()
    m.check_error(stream)
    return rel_l2(y, mlp_ref(x, **w)), 2e-2


def mlp_relaunch(path, b):
    """One module launched again and again, as a decode loop does: the launch reuses what it
    derived from the syms and bindings while they stay the same, so each step checks that new
    contents of a bound buffer, another buffer bound and another B all reach the kernel."""
    m = etc.Module(path)
    m.set_syms(B=b)
    w = mlp_weights(m)
    H = w["ln"].shape[0]
    bf16 = dict(dtype=torch.bfloat16, device="cuda")
    x, y = torch.randn(b, H, **bf16), torch.empty(b, H, **bf16)
    m.bind(x=x, y=y, **w)
    worst = 0.0
    for step in range(3):  # the same bindings: new contents of x each step
        x.copy_(torch.randn(b, H, **bf16))
        m.launch()
        m.check_error()
        worst = max(worst, rel_l2(y, mlp_ref(x, **w)))
    x2, y2 = torch.randn(b, H, **bf16), torch.empty(b, H, **bf16)
    m.bind(x=x2, y=y2)  # other buffers of the same shape
    m.launch()
    m.check_error()
    worst = max(worst, rel_l2(y2, mlp_ref(x2, **w)))
    b3 = b + 3
    x3, y3 = torch.randn(b3, H, **bf16), torch.empty(b3, H, **bf16)
    m.set_syms(B=b3)
    m.bind(x=x3, y=y3)
    m.launch()
    m.check_error()
    worst = max(worst, rel_l2(y3, mlp_ref(x3, **w)))
    return worst, 2e-2


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    torch.manual_seed(0)
    cases = [("two_stage_sum", two_stage_sum, n) for n in (1, 1000, 1025, 3_000_000)]
    cases += [("mlp", mlp, b) for b in (1, 5, 64)]
    cases += [("mlp", mlp_relaunch, b) for b in (2, 61)]
    if os.path.exists(os.path.join(d, "two_stage_sum_profile.fatbin")):
        cases += [("two_stage_sum_profile", profiled_sum, n) for n in (1000, 1_000_000)]
    failed = 0
    for name, fn, size in cases:
        path = os.path.join(d, name + ".fatbin")
        try:
            err, tol = fn(path, size)
            ok = err < tol
            what = "problems" if fn is profiled_sum else "rel L2"
            print(f"{'PASS' if ok else 'FAIL'} {fn.__name__} {'B' if name == 'mlp' else 'N'}={size}: "
                  f"{what} {err:.3g} (below {tol:g})")
        except Exception as e:  # report every case, then fail
            ok = False
            print(f"FAIL {fn.__name__} size {size}: {type(e).__name__}: {e}")
        failed += not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
