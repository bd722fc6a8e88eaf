#!/usr/bin/env python3
"""Where a megakernel launch's time goes, stage by stage, from an `etc-run --trace` file.

    python3 tools/trace_stages.py trace.json [--top N]

One line per task grid, in order of its first start: how many runs, when the first run started
and the last one ended (us from the launch's first task), the median time a run spent waiting
on events and working (its time minus the wait), and the span from the previous grid's last end
to this grid's last end: on a chain of dependent grids (a decode layer) these spans add up to
the launch, so the largest ones are the critical path's cost. The work splits into three medians:
before the ops (weight prefetch, the wait's first check, the start of the task), the ops, and
after them (the notifies and the end of the task). `woke` and `woke max`: a run's start plus
its time waiting, the median and the last, from the previous grid's last end: how long a grid
lags behind its producer (negative where it waited on an earlier grid only). For a run that
spins right after it starts, that is when its waits ended; one that first issues its weight
prefetch woke later by the prefetch's time, which the trace does not record. "Previous" is by
first start: a grid whose tasks start (and spin) before the grid they wait for shows its lag
behind the one before that. `lag`: the median of each run's wake less the last end of any grid
before it (the launch's start where none has ended), whichever grid that was: on a chain, how
long after its producer finished a grid's runs saw it.

`--layer N` lists the grids of decode layer N (a grid's layer number as `--against` reads it:
`add_rmsnorm_h_7`, the input norm, and `matmul_down_7_wide` are layer 7's) in order of their
first op: when each one's first op began and its last run ended, in us from the first op of the
layer's first grid, and the layer's time, to the first op of layer N + 1 where the trace has it.

`--runs GRID` lists when the runs of one grid started, woke (their waits ended), began and ended
their ops, and ended: the least, median and largest of each over the runs, in us from the launch's
first task, or with `--after OTHER` from the last end of grid OTHER (say the norm that a q/k/v
grid waits for: whether its runs start their ops right after it and how long the ops then take).

`--against OTHER.json` compares the launch with another (say the same model compiled two ways),
by grid family: a grid's name without its layer number (`matmul_q_5` and `matmul_q_12` are
`matmul_q`; `attention_decode_o_5_whole` is `attention_decode_o_whole`). Per family: the sum of
its grids' spans and the median of its runs' ops in each trace, largest change of the spans first:
where the time that one launch takes more than the other goes.
"""
import argparse
import bisect
import json
import re
import statistics
import sys


def work(e):
    """A run's time minus its time waiting on events."""
    return e["dur"] - e["args"].get("wait_us", 0.0)


def ops_window(e):
    """A run's ops as (begin, length) in us from its start; without op marks in the trace, from the
    end of its wait to its end."""
    a = e["args"]
    begin = a.get("ops_begin_us", a.get("wait_us", 0.0))
    return begin, a.get("ops_us", e["dur"] - begin)


def phases(e):
    """(before the ops less the wait, the ops, after the ops) of a run, in us."""
    dur, wait = e["dur"], e["args"].get("wait_us", 0.0)
    begin, ops = ops_window(e)
    return max(0.0, begin - wait), ops, max(0.0, dur - begin - ops)


def stages(events):
    by = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        s = by.setdefault(e["name"], {"n": 0, "first": float("inf"), "end": 0.0, "wait": [], "woke": [], "work": [], "pre": [],
                                        "ops": [], "post": [], "op": e["args"]["op"]})
        s["n"] += 1
        s["first"] = min(s["first"], e["ts"])
        s["end"] = max(s["end"], e["ts"] + e["dur"])
        s["wait"].append(e["args"].get("wait_us", 0.0))
        s["woke"].append(e["ts"] + e["args"].get("wait_us", 0.0))
        s["work"].append(work(e))
        for k, v in zip(("pre", "ops", "post"), phases(e)):
            s[k].append(v)
    return sorted(by.items(), key=lambda kv: kv[1]["first"])


def spans_of(rows):
    """Each grid's span: its last end less the latest end of the grids that started before it."""
    prev_end = rows[0][1]["first"]
    out = []
    for name, s in rows:
        out.append(max(0.0, s["end"] - prev_end))
        prev_end = max(prev_end, s["end"])
    return out


# A grid's layer number: its name's first `_<digits>` part (`matmul_q_5`, `matmul_down_5_wide`).
LAYER = re.compile(r"_(\d+)(?=_|$)")


def family(name):
    """A grid's name without its layer number."""
    return LAYER.sub("", name, count=1)


def families(rows):
    """Per family: [sum of spans, every run's ops, the grids' count]."""
    out = {}
    for (name, s), span in zip(rows, spans_of(rows)):
        f = out.setdefault(family(name), [0.0, [], 0])
        f[0] += span
        f[1].extend(s["ops"])
        f[2] += 1
    return out


def compare(rows, other_rows):
    """The table of --against: per family, spans and median ops in both traces."""
    a, b = families(rows), families(other_rows)
    launch = lambda r: max(s["end"] for _, s in r) - r[0][1]["first"]
    lines = [f"{'family':32} {'grids':>5} {'span':>9} {'other':>9} {'change':>8} {'ops med':>8} {'other':>8}"]
    keys = sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, [0.0])[0] - b.get(k, [0.0])[0]))
    med = lambda f: statistics.median(f[1]) if f and f[1] else float("nan")
    for k in keys:
        fa, fb = a.get(k), b.get(k)
        sa, sb = (fa[0] if fa else 0.0), (fb[0] if fb else 0.0)
        lines.append(f"{k[:32]:32} {(fa or fb)[2]:5d} {sa:9.1f} {sb:9.1f} {sb - sa:+8.1f} {med(fa):8.2f} {med(fb):8.2f}")
    lines.append(f"launch: {launch(rows):.1f} us, other {launch(other_rows):.1f} us ({launch(other_rows) - launch(rows):+.1f})")
    return "\n".join(lines)


def layer_number(name):
    """A grid's layer number, or None."""
    m = LAYER.search(name)
    return int(m.group(1)) if m else None


def layer_table(events, n):
    """The lines of --layer N: layer n's grids by their first op, and the layer's time."""
    first_op, end = {}, {}
    for e in events:
        if e.get("ph") != "X" or layer_number(e["name"]) not in (n, n + 1):
            continue
        name = e["name"]
        op = e["ts"] + ops_window(e)[0]
        first_op[name] = min(first_op.get(name, float("inf")), op)
        end[name] = max(end.get(name, 0.0), e["ts"] + e["dur"])
    mine = sorted((g for g in first_op if layer_number(g) == n), key=lambda g: first_op[g])
    if not mine:
        return [f"no grid of layer {n} in the trace"]
    t0 = first_op[mine[0]]
    lines = [f"layer {n}, us from its first grid's first op:", f"{'grid':32} {'first op':>9} {'last end':>9}"]
    lines += [f"{g[:32]:32} {first_op[g] - t0:9.1f} {end[g] - t0:9.1f}" for g in mine]
    following = [first_op[g] for g in first_op if layer_number(g) == n + 1 and first_op[g] > t0]
    if following:
        lines.append(f"layer {n}: {min(following) - t0:.1f} us to layer {n + 1}'s first op")
    else:
        lines.append(f"layer {n}: {max(end[g] for g in mine) - t0:.1f} us to its last grid's end")
    return lines


def runs_table(events, grid, after=None):
    """The lines of --runs GRID [--after OTHER]: each phase's least, median and largest time over the
    grid's runs, from the launch's first task or from OTHER's last end."""
    runs = [e for e in events if e.get("ph") == "X" and e["name"] == grid]
    if not runs:
        return [f"no run of {grid} in the trace"]
    if after is None:
        t0 = min(e["ts"] for e in events if e.get("ph") == "X")
        since = "the launch's first task"
    else:
        ends = [e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and e["name"] == after]
        if not ends:
            return [f"no run of {after} in the trace"]
        t0, since = max(ends), f"{after}'s last end"

    def phases_at(e):
        begin, ops = ops_window(e)
        return e["ts"], e["ts"] + e["args"].get("wait_us", 0.0), e["ts"] + begin, e["ts"] + begin + ops, e["ts"] + e["dur"]

    cols = list(zip(*(phases_at(e) for e in runs)))
    lines = [f"{grid}: {len(runs)} runs, us from {since}:", f"{'':10} {'least':>8} {'median':>8} {'largest':>8}"]
    for label, col in zip(("start", "woke", "ops begin", "ops end", "end"), cols):
        lines.append(f"{label:10} {min(col) - t0:8.2f} {statistics.median(col) - t0:8.2f} {max(col) - t0:8.2f}")
    return lines


def load_rows(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    rows = stages(events)
    if not rows:
        sys.exit(f"{path}: no task runs")
    return events, rows


def cold_vs_warm(events):
    runs = sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])
    seen, cold, warm = set(), {}, {}
    for e in runs:
        op, sm = e["args"]["op"], e["args"].get("sm", e.get("tid"))
        (warm if (op, sm) in seen else cold).setdefault(op, []).append(work(e))
        seen.add((op, sm))
    lines = [f"{'op':18} {'first runs':>10} {'work med':>9} {'later runs':>10} {'work med':>9}"]
    for op in sorted(cold):
        w = warm.get(op, [])
        lines.append(f"{op[:18]:18} {len(cold[op]):10d} {statistics.median(cold[op]):9.2f} {len(w):10d} "
                     f"{(statistics.median(w) if w else float('nan')):9.2f}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=0, help="also list the N grids with the largest spans")
    ap.add_argument("--cold", action="store_true",
                    help="per op: median work of each SM's first run of that op against its later runs "
                         "(a cold instruction cache shows as a slower first run)")
    ap.add_argument("--layer", type=int, metavar="N",
                    help="list decode layer N's grids by their first op, and the layer's time")
    ap.add_argument("--against", metavar="OTHER",
                    help="compare with another trace by grid family (layer numbers dropped): spans and ops")
    ap.add_argument("--runs", metavar="GRID",
                    help="when GRID's runs started, woke, began and ended their ops, and ended (least, median, largest)")
    ap.add_argument("--after", metavar="OTHER", help="with --runs: times from grid OTHER's last end")
    a = ap.parse_args()
    if a.after and not a.runs:
        ap.error("--after goes with --runs")
    events, rows = load_rows(a.trace)
    if a.runs:
        print("\n".join(runs_table(events, a.runs, a.after)))
        return
    if a.layer is not None:
        print("\n".join(layer_table(events, a.layer)))
        return
    if a.against:
        print(compare(rows, load_rows(a.against)[1]))
        return
    t0 = rows[0][1]["first"]
    prev_end = t0
    print(f"{'task':28} {'op':18} {'runs':>5} {'first':>9} {'last end':>9} {'wait med':>9} {'work med':>9} "
          f"{'pre':>6} {'ops':>6} {'post':>6} {'span':>8} {'woke':>6} {'woke max':>8} {'lag':>6}")
    ends = sorted(s["end"] for _, s in rows)

    def lag(w):
        i = bisect.bisect_right(ends, w)
        return w - (ends[i - 1] if i else t0)

    spans = []
    for (name, s), span in zip(rows, spans_of(rows)):
        spans.append((span, name))
        print(f"{name:28} {s['op'][:18]:18} {s['n']:5d} {s['first'] - t0:9.1f} {s['end'] - t0:9.1f} "
              f"{statistics.median(s['wait']):9.2f} {statistics.median(s['work']):9.2f} "
              f"{statistics.median(s['pre']):6.2f} {statistics.median(s['ops']):6.2f} {statistics.median(s['post']):6.2f} "
              f"{span:8.1f} {statistics.median(w - prev_end for w in s['woke']):6.1f} "
              f"{max(s['woke']) - prev_end:8.1f} {statistics.median(lag(w) for w in s['woke']):6.1f}")
        prev_end = max(prev_end, s["end"])
    print(f"launch: {prev_end - t0:.1f} us")
    if a.cold:
        print(cold_vs_warm(events))
    if a.top:
        print(f"largest spans:")
        for span, name in sorted(spans, reverse=True)[:a.top]:
            print(f"  {span:8.1f} us  {name}")


if __name__ == "__main__":
    main()
