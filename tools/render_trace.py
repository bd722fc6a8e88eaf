#!/usr/bin/env python3
"""Renders an etc-run --trace file (Chrome trace JSON) to a PNG: one row per track (SM), one
bar per task run coloured by task (the part spent waiting on events darker, at the bar's
start, where a task's waits are), a time axis in microseconds and a legend. Pure Python (zlib
for the PNG), no matplotlib.

    python3 tools/render_trace.py trace.json trace.png [--width 1600]
"""
import argparse
import json
import os
import struct
import sys
import zlib

# A 3x5 pixel font, rows top to bottom: enough for task names, numbers and the title.
_FONT = """
A .#./#.#/###/#.#/#.#  B ##./#.#/##./#.#/##.  C .##/#../#../#../.##  D ##./#.#/#.#/#.#/##.
E ###/#../##./#../###  F ###/#../##./#../#..  G .##/#../#.#/#.#/.##  H #.#/#.#/###/#.#/#.#
I ###/.#./.#./.#./###  J ..#/..#/..#/#.#/.#.  K #.#/#.#/##./#.#/#.#  L #../#../#../#../###
M #.#/###/###/#.#/#.#  N ##./#.#/#.#/#.#/#.#  O .#./#.#/#.#/#.#/.#.  P ##./#.#/##./#../#..
Q .#./#.#/#.#/##./.##  R ##./#.#/##./#.#/#.#  S .##/#../.#./..#/##.  T ###/.#./.#./.#./.#.
U #.#/#.#/#.#/#.#/###  V #.#/#.#/#.#/#.#/.#.  W #.#/#.#/###/###/#.#  X #.#/#.#/.#./#.#/#.#
Y #.#/#.#/.#./.#./.#.  Z ###/..#/.#./#../###  0 ###/#.#/#.#/#.#/###  1 .#./##./.#./.#./###
2 ##./..#/.#./#../###  3 ##./..#/.#./..#/##.  4 #.#/#.#/###/..#/..#  5 ###/#../##./..#/##.
6 .##/#../###/#.#/###  7 ###/..#/.#./.#./.#.  8 ###/#.#/###/#.#/###  9 ###/#.#/###/..#/##.
_ .../.../.../.../###  . .../.../.../.../.#.  / ..#/..#/.#./#../#..  - .../.../###/.../...
= .../###/.../###/...  @ .#./#.#/###/#../.##  % #.#/..#/.#./#../#.#  : .../.#./.../.#./...
, .../.../.../.#./#..  ( .#./#../#../#../.#.  ) .#./..#/..#/..#/.#.  ? ##./..#/.#./.../.#.
"""
_GLYPHS = {" ": "." * 15}
for _ch, _rows in zip(_FONT.split()[0::2], _FONT.split()[1::2]):
    assert len(_rows) == 19 and all(len(r) == 3 for r in _rows.split("/")), _ch
    _GLYPHS[_ch] = _rows.replace("/", "")

PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
           (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207)]
BACKGROUND = (255, 255, 255)
INK = (0, 0, 0)
GRID = (220, 220, 220)
ROW_H, ROW_GAP, LABEL_W, SCALE = 12, 2, 110, 2


def task_colours(names):
    """A colour per task name, in order of first appearance."""
    out = {}
    for n in names:
        if n not in out:
            out[n] = PALETTE[len(out) % len(PALETTE)]
    return out


def darker(c):
    return tuple(int(v * 0.55) for v in c)


class Canvas:
    def __init__(self, w, h):
        self.w, self.h = w, h
        self.px = bytearray(BACKGROUND * (w * h))

    def rect(self, x0, y0, x1, y1, c):
        x0, x1 = max(0, int(x0)), min(self.w, int(x1))
        y0, y1 = max(0, int(y0)), min(self.h, int(y1))
        row = bytes(c) * max(0, x1 - x0)
        for y in range(y0, y1):
            i = (y * self.w + x0) * 3
            self.px[i:i + len(row)] = row

    def get(self, x, y):
        i = (y * self.w + x) * 3
        return tuple(self.px[i:i + 3])

    def text(self, x, y, s, c=INK):
        for ch in s.upper():
            g = _GLYPHS.get(ch, _GLYPHS["?"])
            for k, bit in enumerate(g):
                if bit == "#":
                    self.rect(x + (k % 3) * SCALE, y + (k // 3) * SCALE, x + (k % 3 + 1) * SCALE,
                              y + (k // 3 + 1) * SCALE, c)
            x += 4 * SCALE

    def png(self):
        raw = b"".join(b"\x00" + bytes(self.px[y * self.w * 3:(y + 1) * self.w * 3]) for y in range(self.h))

        def chunk(kind, data):
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def nice_step(span, target=8):
    raw = span / target
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 10 ** -len(str(int(1 / raw)))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def layout(trace):
    """Tracks (tid, name) in sort order and the complete events, from a Chrome trace dict."""
    names, order, slices = {}, {}, []
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[e["tid"]] = e["args"]["sort_index"]
        elif e.get("ph") == "X":
            slices.append(e)
    tids = sorted({s["tid"] for s in slices} | set(names), key=lambda t: (order.get(t, t), t))
    return [(t, names.get(t, f"track {t}")) for t in tids], slices


def render(trace, width=1600):
    tracks, slices = layout(trace)
    title = trace.get("otherData", {}).get("title", "")
    span = max([s["ts"] + s["dur"] for s in slices] + [1e-3])
    colours = task_colours(s["name"] for s in slices)
    ops = {s["name"]: s.get("args", {}).get("op", "") for s in slices}
    top = 16 * SCALE
    plot_w = width - LABEL_W - 20
    legend_rows = (len(colours) + 2) // 3
    height = top + len(tracks) * (ROW_H + ROW_GAP) + 14 * SCALE + legend_rows * 8 * SCALE + 10
    cv = Canvas(width, height)
    x_of = lambda t: LABEL_W + t / span * plot_w  # noqa: E731
    step = nice_step(span)
    t = 0.0
    axis_y = top + len(tracks) * (ROW_H + ROW_GAP)
    while t <= span + 1e-9:
        x = x_of(t)
        cv.rect(x, top - 2, x + 1, axis_y, GRID)
        cv.text(int(x) - 4, axis_y + 3, f"{t:g}")
        t += step
    cv.text(4, 4, f"{title}  {len(slices)} tasks  {span:.1f} us  (time axis in us)")
    index = {tid: k for k, (tid, _) in enumerate(tracks)}
    for k, (tid, name) in enumerate(tracks):
        y = top + k * (ROW_H + ROW_GAP)
        cv.text(4, y + 1, name[:26])
    for s in slices:
        y = top + index[s["tid"]] * (ROW_H + ROW_GAP)
        x0, x1 = x_of(s["ts"]), x_of(s["ts"] + s["dur"])
        x1 = max(x1, x0 + 1)
        c = colours[s["name"]]
        cv.rect(x0, y, x1, y + ROW_H, c)
        wait = min(s.get("args", {}).get("wait_us", 0.0), s["dur"])
        if wait > 0:
            cv.rect(x0, y, max(x0 + 1, x_of(s["ts"] + wait)), y + ROW_H, darker(c))
    y = axis_y + 14 * SCALE
    for k, (name, c) in enumerate(colours.items()):
        x = 4 + (k % 3) * (width // 3)
        yy = y + (k // 3) * 8 * SCALE
        cv.rect(x, yy, x + 10 * SCALE, yy + 5 * SCALE, c)
        cv.rect(x, yy, x + 3 * SCALE, yy + 5 * SCALE, darker(c))
        cv.text(x + 12 * SCALE, yy, f"{name} ({ops[name]})" if ops[name] else name)
    return cv


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace", help="a Chrome trace written by etc-run --trace")
    ap.add_argument("png", help="the picture to write")
    ap.add_argument("--width", type=int, default=1600)
    a = ap.parse_args(argv)
    with open(a.trace) as f:
        trace = json.load(f)
    data = render(trace, a.width).png()
    tmp = a.png + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, a.png)  # never a truncated picture
    print(f"wrote {a.png}")


if __name__ == "__main__":
    sys.exit(main())
