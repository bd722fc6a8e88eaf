#!/usr/bin/env python3
"""tools/render_trace.py on a synthetic trace in etc-run --trace's format: the PNG decodes, has
one row per track, each bar where its task ran in its task's colour, the waiting part darker,
and background where nothing ran.

    python3 tests/trace/render_trace_test.py
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import render_trace as rt  # noqa: E402


def synthetic_trace():
    ev = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "etc mlp @main B=2"}}]
    for tid, (name, order) in enumerate([("SM 0", 0), ("SM 1", 65536), ("SM 2", 131072)]):
        ev.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_name", "args": {"name": name}})
        ev.append({"ph": "M", "pid": 0, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": order}})

    def x(tid, name, op, ts, dur, wait=0.0):
        return {"ph": "X", "pid": 0, "tid": tid, "name": name, "cat": op, "ts": ts, "dur": dur,
                "args": {"op": op, "coords": [0, 0, 0, 0], "wait_us": wait, "sm": tid}}

    ev += [x(0, "rmsnorm_h", "rmsnorm", 0.0, 10.0), x(0, "matmul_y", "matmul", 10.0, 40.0, 20.0),
           x(1, "matmul_y", "matmul", 0.0, 50.0), x(2, "add_y", "add", 60.0, 40.0)]
    return {"traceEvents": ev, "otherData": {"title": "mlp @main B=2"}}


def decode_png(data):
    """(width, height, rows of RGB tuples) of an 8-bit RGB PNG with filter 0 rows (what rt writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h = 8, b"", None, None
    while pos < len(data):
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 2)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    rows = []
    for y in range(h):
        line = raw[y * (1 + 3 * w):(y + 1) * (1 + 3 * w)]
        assert line[0] == 0
        rows.append([tuple(line[1 + 3 * i:4 + 3 * i]) for i in range(w)])
    return w, h, rows


class RenderTraceTest(unittest.TestCase):
    def test_bars_where_tasks_ran(self):
        with tempfile.TemporaryDirectory() as d:
            src, png = os.path.join(d, "t.json"), os.path.join(d, "t.png")
            with open(src, "w") as f:
                json.dump(synthetic_trace(), f)
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "render_trace.py"), src, png, "--width", "810"],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(os.listdir(d)), ["t.json", "t.png"])  # no temporary left
            with open(png, "rb") as f:
                w, h, rows = decode_png(f.read())
        self.assertEqual(w, 810)
        colours = rt.task_colours(["rmsnorm_h", "matmul_y", "add_y"])
        plot_w = w - rt.LABEL_W - 20
        x_of = lambda t: int(rt.LABEL_W + t / 100.0 * plot_w)  # the trace spans 100 us  # noqa: E731
        row_y = lambda k: rt.SCALE * 16 + k * (rt.ROW_H + rt.ROW_GAP) + rt.ROW_H // 2  # noqa: E731
        self.assertEqual(rows[row_y(0)][x_of(5)], colours["rmsnorm_h"])
        self.assertEqual(rows[row_y(0)][x_of(20)], rt.darker(colours["matmul_y"]))  # waiting: 10..30 us
        self.assertEqual(rows[row_y(0)][x_of(40)], colours["matmul_y"])
        self.assertEqual(rows[row_y(1)][x_of(25)], colours["matmul_y"])
        self.assertEqual(rows[row_y(2)][x_of(80)], colours["add_y"])
        self.assertEqual(rows[row_y(2)][x_of(30)], rt.BACKGROUND)  # SM 2 idle until 60 us
        self.assertIn(rt.INK, rows[row_y(0)][:rt.LABEL_W])  # the track's label

    def test_bad_input_is_an_error_not_a_picture(self):
        with tempfile.TemporaryDirectory() as d:
            src, png = os.path.join(d, "t.json"), os.path.join(d, "t.png")
            with open(src, "w") as f:
                f.write("{ not json")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "render_trace.py"), src, png],
                               capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertFalse(os.path.exists(png))


if __name__ == "__main__":
    unittest.main()
