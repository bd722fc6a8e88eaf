#!/usr/bin/env python3
"""The table of a tools/gpu_ab.sh run: per batch size, each variant's median per round and the
change of its mean over the rounds against the first variant's.

    python3 tools/ab_summary.py LOG

LOG holds the lines the A/B script prints, `LABEL SYM=B bench mega: median X us, ...` or
`LABEL SYM=B FAILED (...)`; other lines are ignored. Variants and batch sizes keep the order in
which they first appear; a failed timing shows as `failed`, and a change needs both means.
"""
import re
import statistics
import sys

LINE = re.compile(r"^(?P<label>[A-Za-z0-9_-]+) (?P<sym>\w+)=(?P<b>\d+) (?:bench mega: median (?P<us>[0-9.]+) us|FAILED)")


def read(lines):
    """(sym, labels in order, batch sizes in order, {(label, b): [median us or None]})."""
    sym, labels, batches, runs = None, [], [], {}
    for line in lines:
        m = LINE.match(line.strip())
        if not m:
            continue
        label, b = m["label"], int(m["b"])
        sym = sym or m["sym"]
        if label not in labels:
            labels.append(label)
        if b not in batches:
            batches.append(b)
        runs.setdefault((label, b), []).append(float(m["us"]) if m["us"] else None)
    return sym, labels, batches, runs


def table(sym, labels, batches, runs):
    def cell(label, b):
        got = runs.get((label, b), [])
        if not got:
            return "-"
        text = " / ".join("failed" if us is None else f"{us:.1f}" for us in got)
        base = [us for us in runs.get((labels[0], b), []) if us is not None]
        mine = [us for us in got if us is not None]
        if label != labels[0] and base and mine:
            text += f" ({100 * (statistics.mean(mine) / statistics.mean(base) - 1):+.1f}%)"
        return text

    rows = [[f"{sym}={b}"] + [cell(label, b) for label in labels] for b in batches]
    head = [sym] + labels
    width = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, width)).rstrip()  # noqa: E731
    return "\n".join([f"median us per round; (change of the mean against {labels[0]})", fmt(head)] + [fmt(r) for r in rows])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: ab_summary.py LOG")
    try:
        with open(sys.argv[1]) as f:
            sym, labels, batches, runs = read(f)
    except OSError as e:
        sys.exit(f"{sys.argv[1]}: {e.strerror}")
    if not labels:
        sys.exit(f"{sys.argv[1]}: no timings")
    print(table(sym, labels, batches, runs))


if __name__ == "__main__":
    main()
