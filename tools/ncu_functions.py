#!/usr/bin/env python3
"""Where a kernel's warps stall, function by function, from ncu's per-instruction source page.

    ncu --clock-control none --section WarpStateStats --section SourceCounters -c 1 -o rep etc-run model.fatbin ...
    ncu --import rep.ncu-rep --page source --csv --print-source sass > sass.csv
    python3 tools/ncu_functions.py sass.csv [--top N] [--function TEXT [--instructions M]]

The CSV holds one block per function of the kernel: a ("Kernel Name", name) line, a header
line, then a line per SASS instruction with its warp stall samples, in all and per reason
(the stall_* columns). A megakernel's time is spread over the task functions (task_*) and the
op functions they call (etc_opN: `etcc --emit=cuda` shows which tile op each one calls), so
this prints each function's share of the samples and its largest stall reasons; with
--function, also the instructions with the most samples in the functions whose short name
contains TEXT.
"""
import argparse
import collections
import csv
import re
import sys

ALL = "Warp Stall Sampling (All Samples)"


def short_name(name):
    """etc's task and op functions by their own names (task_matmul_q_0, etc_op8); others as given."""
    # Demangled (ncu's usual form) or mangled: task_x<...> or task_xILi..., ...8etc_op12ERK...
    m = re.search(r"(task_[A-Za-z0-9_]+?)(?:<|ILi)|(etc_op\d+)(?!\d)|(etc_[A-Za-z0-9_]+_mega)(?![A-Za-z0-9_])", name)
    if not m:
        return name
    return next(g for g in m.groups() if g)


def count(text):
    """A sample count as ncu prints it: '' or '-' for none, thousands separated by ','."""
    text = text.strip().replace(",", "")
    if text in ("", "-"):
        return 0
    if not text.isdigit():
        raise ValueError(f"not a count: {text!r}")
    return int(text)


def read(path):
    """{function: [(address, sass, samples, {reason: samples})]} in the file's order."""
    funcs = collections.OrderedDict()
    fn, col = None, None
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row:
                continue
            if row[0] == "Kernel Name":
                fn = short_name(row[1])
                funcs.setdefault(fn, [])
                continue
            if row[0] == "Address":
                col = {h: i for i, h in enumerate(row)}
                continue
            if fn is None or col is None or ALL not in col:
                continue
            reasons = {}
            for h, i in col.items():
                if h.startswith("stall_") and "(Not Issued)" not in h and i < len(row) and count(row[i]):
                    reasons[h[len("stall_"):]] = count(row[i])
            funcs[fn].append((row[0], row[col["Source"]].strip(), count(row[col[ALL]]), reasons))
    return funcs


def summary(funcs, top):
    total = sum(s for ins in funcs.values() for _, _, s, _ in ins)
    if total == 0:
        return "no stall samples (was the SourceCounters section collected?)"
    per = sorted(((sum(s for _, _, s, _ in ins), fn) for fn, ins in funcs.items()), reverse=True)
    lines = [f"{total} samples in {len(funcs)} functions", f"{'samples':>8} {'share':>6}  function: largest stall reasons"]
    for s, fn in per[:top]:
        reasons = collections.Counter()
        for _, _, _, r in funcs[fn]:
            reasons.update(r)
        rs = sum(reasons.values()) or 1
        why = ", ".join(f"{k} {100 * v / rs:.0f}%" for k, v in reasons.most_common(4))
        lines.append(f"{s:8d} {100 * s / total:5.1f}%  {fn}: {why}")
    return "\n".join(lines)


def instructions(funcs, text, count):
    rows = [(s, fn, a, sass, r) for fn, ins in funcs.items() if text in fn for a, sass, s, r in ins]
    if not rows:
        return f"no function's name contains {text!r}"
    lines = []
    for s, fn, a, sass, r in sorted(rows, key=lambda x: -x[0])[:count]:
        why = " ".join(f"{k}:{v}" for k, v in sorted(r.items(), key=lambda kv: -kv[1])[:3])
        lines.append(f"{s:8d}  {fn} {a}  {sass[:64]:64}  {why}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25, help="functions listed (default 25)")
    ap.add_argument("--function", help="also list the instructions of the functions whose name contains this")
    ap.add_argument("--instructions", type=int, default=15, help="instructions listed with --function (default 15)")
    a = ap.parse_args()
    try:
        funcs = read(a.csv)
    except OSError as e:
        sys.exit(f"{a.csv}: {e.strerror}")
    except ValueError as e:
        sys.exit(f"{a.csv}: {e}")
    if not funcs:
        sys.exit(f"{a.csv}: no functions (expected ncu --page source --csv --print-source sass output)")
    print(summary(funcs, a.top))
    if a.function:
        print(instructions(funcs, a.function, a.instructions))


if __name__ == "__main__":
    main()
