#!/usr/bin/env python3
"""tools/ab_summary.py on the lines a tools/gpu_ab.sh script prints: medians per round in the
order of first appearance, changes of the mean against the first variant, failed timings, and
the errors.

    python3 tests/tools/ab_summary_test.py
"""
import os
import subprocess
import sys
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "ab_summary.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import ab_summary as ab  # noqa: E402
from tool_run import run_on_text  # noqa: E402

LOG = """NVIDIA H200, 580.159.04
base: /tmp/fb/base.fatbin (compiled before)
base B=128 bench mega: median 4400.00 us, min 4390.00 us, max 4500.00 us over 20 launches
new B=128 bench mega: median 4180.00 us, min 4170.00 us, max 4300.00 us over 20 launches
base B=1 bench mega: median 1650.00 us, min 1640.00 us, max 1700.00 us over 20 launches
new B=1 FAILED (exit 124): timeout
base B=128 bench mega: median 4420.00 us, min 4400.00 us, max 4600.00 us over 20 launches
new B=128 bench mega: median 4200.00 us, min 4190.00 us, max 4300.00 us over 20 launches
"""


class AbSummary(unittest.TestCase):
    def test_order_and_runs(self):
        sym, labels, batches, runs = ab.read(LOG.splitlines())
        self.assertEqual((sym, labels, batches), ("B", ["base", "new"], [128, 1]))
        self.assertEqual(runs[("base", 128)], [4400.0, 4420.0])
        self.assertEqual(runs[("new", 1)], [None])

    def test_table(self):
        out = ab.table(*ab.read(LOG.splitlines())).splitlines()
        self.assertEqual(out[0], "median us per round; (change of the mean against base)")
        self.assertEqual(out[1].split(), ["B", "base", "new"])
        self.assertEqual(out[2], "B=128  4400.0 / 4420.0  4180.0 / 4200.0 (-5.0%)")
        self.assertEqual(out[3], "B=1    1650.0           failed")

    def test_errors(self):
        r = run_on_text(TOOL, "nothing timed here\n")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no timings", r.stderr)
        r = subprocess.run([sys.executable, TOOL, os.path.join(ROOT, "no_such_log")], capture_output=True, text=True)
        self.assertIn("No such file", r.stderr)
        r = subprocess.run([sys.executable, TOOL], capture_output=True, text=True)
        self.assertIn("usage", r.stderr)

if __name__ == "__main__":
    unittest.main()
