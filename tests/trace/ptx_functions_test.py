#!/usr/bin/env python3
"""tools/ptx_functions.py on synthetic PTX in NVRTC's layout: definitions counted, declarations
skipped, task names demangled, the unfused kernels' copies folded, and the change between two files.

    python3 tests/trace/ptx_functions_test.py
"""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import ptx_functions as pf  # noqa: E402

NS = "_ZN45_INTERNAL_00000000_14_llama3_2_1b_cu_7929e50a47_GLOBAL__N__00000000_14_llama3_2_1b_cu_7929e50a"
TASK = NS + "24task_kv_append_k_cache_0ILi{}ELi{}EEEbRK9EtcParamsRKN3etc3dev3CtxEx"


def func(name, body, ret=True):
    head = f".func  (.param .b32 func_retval0) {name}(\n\t.param .b64 {name}_param_0\n)\n" if ret else \
        f".func {name}(\n\t.param .b64 {name}_param_0\n)\n"
    return head + "{\n" + body + "}\n"


BODY = """\t.reg .b64 \t%rd<9>;
\t// a comment
\tld.param.u64 \t%rd1, [x_param_0];
$L__BB0_1:
\tdiv.s64 \t%rd2, %rd1, %rd1;
\t@%p1 bra \t$L__BB0_2;
\t@!%p1 red.relaxed.gpu.global.add.u32 \t[%rd1], 1;
\tbar.sync \t0;
\t{ // callseq 0, 0
\tcall.uni \tetc_op1, (param0);
\t} // callseq 0
$L__BB0_2:
\tret;
"""
# The static schedule's copy (<1, 0>), two unfused kernels' copies (<0, 6>, <0, 19>), a
# declaration of one of them, an op function and an entry.
PTX = ("//\n.version 8.8\n.target sm_90a\n"
       + f".func  (.param .b32 func_retval0) {TASK.format(0, 19)}(\n\t.param .b64 p\n)\n;\n"
       + func(TASK.format(1, 0), BODY)
       + func(TASK.format(0, 6), "\tret;\n")
       + func(TASK.format(0, 19), "\tret;\n")
       + func("etc_op1", "\tmov.u32 \t%r1, 0;\n\tret;\n", ret=False)
       + ".visible .entry etc_main_mega(\n\t.param .align 8 .b8 p[64]\n)\n.maxntid 256, 1, 1\n{\n\tbar.sync \t0;\n\tret;\n}\n")


class PtxFunctions(unittest.TestCase):
    def test_definitions_counted_declarations_skipped(self):
        rows = pf.functions(PTX)
        self.assertEqual([n for n, _ in rows], ["task_kv_append_k_cache_0<1, 0>", "task_kv_append_k_cache_0<0, 6>",
                                                "task_kv_append_k_cache_0<0, 19>", "etc_op1", "etc_main_mega"])
        c = rows[0][1]
        # ld, div, bra, red (guarded), bar, call, ret: labels, comments, directives and braces are not.
        self.assertEqual(c, {"instrs": 7, "div": 1, "red": 1, "bar": 1, "call": 1})
        self.assertEqual(rows[-1][1]["bar"], 1)

    def test_unfused_copies_fold_into_one_row(self):
        rows = pf.fold(pf.functions(PTX))
        self.assertEqual([n for n, _ in rows], ["task_kv_append_k_cache_0<1, 0>", "task_kv_append_k_cache_0<0, *>",
                                                "etc_op1", "etc_main_mega"])

    def test_change_between_two_files(self):
        grown = PTX.replace("\tld.param.u64", "\tadd.s64 \t%rd3, %rd1, 1;\n\tld.param.u64", 1)
        diff = pf.compare(pf.fold(pf.functions(grown)), pf.fold(pf.functions(PTX)))
        self.assertEqual(diff, [("task_kv_append_k_cache_0<1, 0>", {"instrs": 1, "div": 0, "red": 0, "bar": 0, "call": 0})])

    def test_cli(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.ptx"), os.path.join(d, "b.ptx")
            with open(a, "w") as f:
                f.write(PTX)
            with open(b, "w") as f:
                f.write(PTX.replace("\tmov.u32 \t%r1, 0;\n", ""))
            tool = os.path.join(ROOT, "tools", "ptx_functions.py")
            out = subprocess.run([sys.executable, tool, a, "--match", "^task_", "--top", "1"], capture_output=True,
                                 text=True, check=True).stdout.splitlines()
            self.assertEqual(out[1].split(), ["7", "1", "1", "1", "1", "task_kv_append_k_cache_0<1,", "0>"])
            self.assertEqual(len(out), 2)
            out = subprocess.run([sys.executable, tool, a, "--against", b], capture_output=True, text=True,
                                 check=True).stdout.splitlines()
            self.assertEqual(out[1].split(), ["1", "0", "0", "0", "0", "etc_op1"])
            bad = subprocess.run([sys.executable, tool, os.path.join(d, "missing.ptx")], capture_output=True, text=True)
            self.assertEqual(bad.returncode, 1)
            self.assertIn("missing.ptx", bad.stderr)
            with open(b, "w") as f:
                f.write("not ptx\n")
            bad = subprocess.run([sys.executable, tool, b], capture_output=True, text=True)
            self.assertIn("no function definitions", bad.stderr)


if __name__ == "__main__":
    unittest.main()
