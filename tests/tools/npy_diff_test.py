#!/usr/bin/env python3
"""tools/npy_diff.py on .npy files written here (the layout etc-run writes): equal bytes, floats
(bf16 too) that differ with how far, integers that differ, and the files it refuses.

    python3 tests/tools/npy_diff_test.py
"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "npy_diff.py")


def npy(descr, shape, fmt, vals, version=1):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join(f"{d}," for d in shape))
    size = 2 if version == 1 else 4
    header += " " * ((64 - (8 + size + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + struct.pack(f"<{len(vals)}{fmt}", *vals)


def bf16(x):  # the upper half of the f32 (the values here are exact in bf16)
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16


class NpyDiff(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def file(self, name, data):
        path = os.path.join(self.dir.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def run_tool(self, a, b):
        r = subprocess.run([sys.executable, TOOL, a, b], capture_output=True, text=True)
        return r.returncode, r.stdout.strip()

    def test_equal(self):
        a = self.file("a.npy", npy("<V2", (2, 3), "H", [bf16(v) for v in (1, 2, 3, -4, 0.5, 8)]))
        b = self.file("b.npy", npy("<V2", (2, 3), "H", [bf16(v) for v in (1, 2, 3, -4, 0.5, 8)], version=2))
        self.assertEqual(self.run_tool(a, b), (0, "bit-equal (6 elements)"))

    def test_bf16_differs(self):
        a = self.file("a.npy", npy("<V2", (4,), "H", [bf16(v) for v in (1, 2, -16, 0.5)]))
        b = self.file("b.npy", npy("<V2", (4,), "H", [bf16(v) for v in (1, 2.5, -16, 0.25)]))
        self.assertEqual(self.run_tool(a, b), (1, "differ in 2 of 4 elements, max |a - b| 0.5 where |a| is at most 16"))

    def test_f32_nan_in_one(self):
        a = self.file("a.npy", npy("<f4", (3,), "f", [1.0, float("nan"), 3.0]))
        b = self.file("b.npy", npy("<f4", (3,), "f", [1.0, 2.0, 3.0]))
        self.assertEqual(
            self.run_tool(a, b),
            (1, "differ in 1 of 3 elements, max |a - b| 0 where |a| is at most 3; 1 finite in one and not the other"))

    def test_ints(self):
        a = self.file("a.npy", npy("<i4", (3,), "i", [7, 8, 9]))
        b = self.file("b.npy", npy("<i4", (3,), "i", [7, 5, 9]))
        self.assertEqual(self.run_tool(a, b), (1, "differ in 1 of 3 elements"))

    def test_refusals(self):
        a = self.file("a.npy", npy("<i4", (3,), "i", [7, 8, 9]))
        shape = self.file("s.npy", npy("<i4", (1, 3), "i", [7, 8, 9]))
        self.assertEqual(self.run_tool(a, shape),
                         (2, f"{shape}: dtype <i4 and shape [1, 3] where {a} has <i4 and [3]"))
        short = self.file("t.npy", npy("<i4", (3,), "i", [7, 8, 9])[:-4])
        self.assertEqual(self.run_tool(a, short), (2, f"{short}: 8 bytes of data where its shape needs 12"))
        odd = self.file("o.npy", npy("<u2", (1,), "H", [1]))
        self.assertEqual(self.run_tool(a, odd)[0], 2)
        self.assertIn("dtype '<u2' is not supported", self.run_tool(a, odd)[1])
        text = self.file("x.npy", b"not an array")
        self.assertEqual(self.run_tool(text, a), (2, f"{text}: not a .npy file"))
        missing = os.path.join(self.dir.name, "none.npy")
        self.assertEqual(self.run_tool(missing, a), (2, f"{missing}: No such file or directory"))
        r = subprocess.run([sys.executable, TOOL, a], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("python3 tools/npy_diff.py A.npy B.npy", r.stderr)


if __name__ == "__main__":
    unittest.main()
