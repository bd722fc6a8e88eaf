#!/usr/bin/env python3
"""tools/ncu_functions.py on a synthetic `ncu --page source --csv --print-source sass` file: per
function shares and stall reasons, etc's short names, the instruction listing and the errors.

    python3 tests/trace/ncu_functions_test.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "ncu_functions.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import ncu_functions as nf  # noqa: E402
from tool_run import run_on_text  # noqa: E402

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)","Warp Stall Sampling (Not-issued Samples)",'
          '"stall_barrier","stall_long_sb","stall_wait","stall_barrier (Not Issued)"')
CSV = "\n".join([
    '"Kernel Name","_ZN45_INTERNAL_x_GLOBAL__N__x8etc_op12ERKN3etc3dev3CtxE",',
    HEADER,
    '"0x10","      HMMA.16816.F32.BF16 R4, R12, R64, R4","30","30","0","0","30","0"',
    '"0x20","      BAR.SYNC.DEFER_BLOCKING 0x0","10","10","10","0","0","10"',
    '"Kernel Name","bool <unnamed>::task_matmul_q_0<(int)1, (int)0>(const EtcParams &)",',
    HEADER,
    '"0x30","      LDG.E R2, [R4.64]","1,050","50","0","1,040","10","0"',
    '"0x40","      NOP","-","-","-","-","-","-"',
    '"Kernel Name","etc_main_mega",',
    HEADER,
    '"0x50","      EXIT","10","10","0","0","10","0"',
    "",
])


class NcuFunctions(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(suffix=".csv")
        with os.fdopen(fd, "w") as f:
            f.write(CSV)

    def tearDown(self):
        os.unlink(self.path)

    def test_short_names_of_ops_tasks_and_kernels(self):
        self.assertEqual(list(nf.read(self.path)), ["etc_op12", "task_matmul_q_0", "etc_main_mega"])
        self.assertEqual(nf.short_name("__cuda_sm20_div_s64"), "__cuda_sm20_div_s64")

    def test_samples_and_reasons_per_instruction(self):
        funcs = nf.read(self.path)
        self.assertEqual([s for _, _, s, _ in funcs["etc_op12"]], [30, 10])
        self.assertEqual(funcs["etc_op12"][1][3], {"barrier": 10})  # not-issued columns are not reasons
        self.assertEqual(funcs["task_matmul_q_0"][0][2], 1050)  # thousands separated by ','
        self.assertEqual(funcs["task_matmul_q_0"][1][2], 0)  # "-" counts as no samples

    def test_summary_orders_functions_by_share(self):
        out = nf.summary(nf.read(self.path), 10).splitlines()
        self.assertEqual(out[0], "1100 samples in 3 functions")
        self.assertEqual(out[2], "    1050  95.5%  task_matmul_q_0: long_sb 99%, wait 1%")
        self.assertEqual(out[3], "      40   3.6%  etc_op12: wait 75%, barrier 25%")
        self.assertEqual(out[4], "      10   0.9%  etc_main_mega: wait 100%")
        self.assertEqual(len(nf.summary(nf.read(self.path), 1).splitlines()), 3)

    def test_instructions_of_the_named_functions(self):
        out = subprocess.run([sys.executable, TOOL, self.path, "--function", "op12", "--instructions", "1"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        self.assertEqual(len(out), 6)
        self.assertIn("etc_op12 0x10  HMMA.16816.F32.BF16", out[-1])
        self.assertTrue(out[-1].endswith("wait:30"))

    def test_errors(self):
        r = subprocess.run([sys.executable, TOOL, self.path + ".missing"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No such file", r.stderr)
        r = run_on_text(TOOL, "")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no functions", r.stderr)
        self.assertIn("no function's name", nf.instructions(nf.read(self.path), "absent", 3))
        r = run_on_text(TOOL, CSV.replace('"30","30"', '"3.5","30"', 1))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not a count: '3.5'", r.stderr)

if __name__ == "__main__":
    unittest.main()
