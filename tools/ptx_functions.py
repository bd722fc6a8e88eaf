#!/usr/bin/env python3
"""PTX instructions per function of a megakernel, from `etcc --emit=ptx`: where the code is.

    build/etcc samples/llama3_2_1b.etir --emit=ptx -arch compute_90 -o a.ptx
    python3 tools/ptx_functions.py a.ptx [--top N] [--match REGEX] [--against b.ptx]

One line per function defined in the file (declarations are skipped): its instructions, and of
them divisions and remainders (div, rem), reductions and atomics (red, atom), barriers (bar) and
calls, with the name demangled as far as a task function needs (`task_kv_append_k_cache_0<1, 0>`:
the template's kMode and kKernel; the unfused kernels' copies, `<0, K>`, as one row `<0, *>`).
The emitter numbers its op functions (`etc_op<N>`) in the order it makes them, so across
variants compare task functions (--match '^task_'). --against prints each function's change from another file of
the same module compiled otherwise (two etcc versions, a knob, a sample variant): a task whose code
grew shows up even where the GPU time says only that something got slower. A count is of PTX,
not SASS; it tells where code grew, not how long it runs.
"""
import argparse
import re
import sys

KINDS = (("div", re.compile(r"^(div|rem)\.")), ("red", re.compile(r"^(red|atom)\.")),
         ("bar", re.compile(r"^(bar|barrier)\.")), ("call", re.compile(r"^call(\.uni)?\b")))
FIELDS = ("instrs",) + tuple(kind for kind, _ in KINDS)  # a function's counts, in the table's order


def readable(mangled):
    """The innermost name of an Itanium-mangled function, with its integer template arguments."""
    m = re.match(r"_ZN(.*)", mangled)
    if not m:
        return mangled
    rest, parts, i = m.group(1), [], 0
    while i < len(rest):
        n = re.match(r"(\d+)", rest[i:])
        if not n:
            break
        i += len(n.group(1))
        parts.append(rest[i:i + int(n.group(1))])
        i += int(n.group(1))
        args = re.match(r"I((?:Li-?\d+E)+)E", rest[i:])
        if args:
            parts[-1] += "<" + ", ".join(re.findall(r"Li(-?\d+)E", args.group(1))) + ">"
            i += len(args.group(0))
    names = [p for p in parts if not p.startswith(("_INTERNAL", "_GLOBAL__N"))]
    return names[-1] if names else mangled


def functions(text):
    """[(name, {"instrs": n, "div": n, ...})] for every function the PTX defines, in file order."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        head = re.match(r"^(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:func|entry)\b(?:\s*\([^)]*\))?\s*([A-Za-z_$][\w$]*)",
                        lines[i])
        if not head:
            i += 1
            continue
        name = head.group(1)
        # The parameter list runs to a line that is `{` (a definition) or ends with `;` (a declaration).
        j = i
        while j < len(lines) and lines[j].strip() != "{" and not lines[j].rstrip().endswith(";"):
            j += 1
        if j >= len(lines) or lines[j].strip() != "{":
            i = j + 1
            continue
        counts = dict.fromkeys(FIELDS, 0)
        depth, k = 0, j
        while k < len(lines):
            s = lines[k].strip()
            depth += s.count("{") - s.count("}")
            k += 1
            if s and not s.startswith(("//", ".", "{", "}")) and not s.endswith(":"):
                op = re.sub(r"^@!?%\w+\s+", "", s)  # a guarded instruction counts as its opcode
                counts["instrs"] += 1
                for kind, rx in KINDS:
                    if rx.match(op):
                        counts[kind] += 1
            if depth == 0:
                break
        out.append((readable(name), counts))
        i = k
    return out


def fold(rows):
    """The unfused kernels' instantiations of a task function (`<0, K>`, one a kernel K, the same
    code) as one row `<0, *>` of one instantiation's counts: their kernel numbers differ between
    builds that differ in grids, which would make every one of them a change."""
    out, seen = [], {}
    for name, c in rows:
        m = re.match(r"^(task_\w+)<0, \d+>$", name)
        if not m:
            out.append((name, c))
            continue
        key = m.group(1) + "<0, *>"
        if key not in seen:
            seen[key] = len(out)
            out.append((key, c))
    return out


def table(rows):
    lines = [f"{'instrs':>8} {'div':>5} {'red':>5} {'bar':>5} {'call':>5}  function"]
    for name, c in rows:
        lines.append(f"{c['instrs']:8d} {c['div']:5d} {c['red']:5d} {c['bar']:5d} {c['call']:5d}  {name}")
    return "\n".join(lines)


def compare(rows, base):
    """Per function name: this file's counts less base's (a name defined twice is summed)."""
    def summed(rs):
        acc = {}
        for name, c in rs:
            a = acc.setdefault(name, dict.fromkeys(FIELDS, 0))
            for k, v in c.items():
                a[k] += v
        return acc
    a, b = summed(rows), summed(base)
    zero = dict.fromkeys(FIELDS, 0)
    diff = [(name, {k: a.get(name, zero)[k] - b.get(name, zero)[k] for k in FIELDS}) for name in set(a) | set(b)]
    diff = [(n, c) for n, c in diff if any(c.values())]
    return sorted(diff, key=lambda nc: (-abs(nc[1]["instrs"]), nc[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ptx")
    ap.add_argument("--top", type=int, default=20, help="print the N largest (or most changed) functions (0: all)")
    ap.add_argument("--match", help="only functions whose readable name matches this regular expression")
    ap.add_argument("--against", help="print the change of each function from this PTX file")
    a = ap.parse_args()
    try:
        with open(a.ptx) as f:
            rows = fold(functions(f.read()))
        base = None
        if a.against:
            with open(a.against) as f:
                base = fold(functions(f.read()))
    except OSError as e:
        sys.exit(f"ptx_functions.py: {e}")
    if not rows:
        sys.exit(f"ptx_functions.py: {a.ptx}: no function definitions (is it PTX?)")
    if base is not None:
        rows = compare(rows, base)
    else:
        rows = sorted(rows, key=lambda nc: (-nc[1]["instrs"], nc[0]))
    if a.match:
        rows = [(n, c) for n, c in rows if re.search(a.match, n)]
    print(table(rows[:a.top] if a.top else rows))


if __name__ == "__main__":
    main()
