#!/usr/bin/env python3
"""tools/trace_stages.py on a synthetic trace in etc-run --trace's format: grids in order of their
first start, median wait and work, spans that add up along a chain, and first runs per SM.

    python3 tests/trace/trace_stages_test.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import trace_stages as ts  # noqa: E402


def x(sm, name, op, start, dur, wait=0.0):
    return {"ph": "X", "pid": 0, "tid": sm, "name": name, "ts": start, "dur": dur,
            "args": {"op": op, "coords": [0, 0, 0, 0], "wait_us": wait, "sm": sm}}


# A chain: rmsnorm (0..10), two matmul runs waiting on it (end 30 and 34), then an add (to 40).
EVENTS = [{"ph": "M", "pid": 0, "name": "process_name", "args": {"name": "etc"}},
          x(0, "rmsnorm_h", "rmsnorm", 0.0, 10.0),
          x(1, "matmul_y", "matmul", 1.0, 29.0, 9.0), x(0, "matmul_y", "matmul", 10.0, 24.0, 0.0),
          x(1, "add_y", "add", 30.0, 10.0, 4.0)]


def run_cli(events, *args):
    """tools/trace_stages.py's output for a trace of these events."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        return subprocess.run([sys.executable, os.path.join(ROOT, "tools", "trace_stages.py"), path, *args],
                              capture_output=True, text=True, check=True).stdout


class TraceStages(unittest.TestCase):
    def test_grids_in_start_order_with_medians(self):
        rows = ts.stages(EVENTS)
        self.assertEqual([name for name, _ in rows], ["rmsnorm_h", "matmul_y", "add_y"])
        mm = dict(rows)["matmul_y"]
        self.assertEqual((mm["n"], mm["first"], mm["end"]), (2, 1.0, 34.0))
        self.assertEqual(sorted(mm["work"]), [20.0, 24.0])

    def test_work_splits_into_before_during_and_after_the_ops(self):
        e = x(1, "matmul_y", "matmul", 1.0, 29.0, 9.0)
        e["args"].update({"ops_begin_us": 11.0, "ops_us": 15.0})
        self.assertEqual(ts.phases(e), (2.0, 15.0, 3.0))
        # A trace without the op marks: everything after the wait counts as the ops.
        self.assertEqual(ts.phases(x(1, "add_y", "add", 30.0, 10.0, 4.0)), (0.0, 6.0, 0.0))

    def test_cold_runs_are_each_sms_first_run_of_an_op(self):
        text = ts.cold_vs_warm(EVENTS)
        line = next(l for l in text.splitlines() if l.startswith("matmul"))
        self.assertEqual(line.split()[1:], ["2", "22.00", "0", "nan"])

    def test_cli_spans_add_up_to_the_launch(self):
        out = run_cli(EVENTS, "--top", "1")
        spans = [float(l.split()[-4]) for l in out.splitlines()[1:4]]
        self.assertEqual(spans, [10.0, 24.0, 6.0])
        # When the waits ended, from the previous grid's last end: the matmul runs at 1 + 9 and
        # 10 + 0 (rmsnorm ended at 10), the add at 30 + 4 (the matmuls' last end, 34).
        woke = [l.split()[-3:-1] for l in out.splitlines()[1:4]]
        self.assertEqual(woke, [["0.0", "0.0"], ["0.0", "0.0"], ["0.0", "0.0"]])
        # lag: the rmsnorm's run from the launch's start, the matmuls' from the rmsnorm's end
        # (10), the add's from the matmuls' (34).
        self.assertEqual([l.split()[-1] for l in out.splitlines()[1:4]], ["0.0", "0.0", "0.0"])
        self.assertIn("launch: 40.0 us", out)
        self.assertIn("24.0 us  matmul_y", out)

    def test_families_drop_the_layer_number(self):
        self.assertEqual(ts.family("matmul_q_12"), "matmul_q")
        self.assertEqual(ts.family("attention_decode_o_5_whole_heads2"), "attention_decode_o_whole_heads2")
        self.assertEqual(ts.family("matmul_logits"), "matmul_logits")
        self.assertEqual(ts.family("reduce_sum_x_3_7"), "reduce_sum_x_7")  # the first number only

    def test_against_compares_families_largest_change_first(self):
        # Two layers of the chain; in the other launch layer 1's matmul runs 6 us longer.
        def layers(extra):
            return [x(0, "rmsnorm_h_0", "rmsnorm", 0.0, 10.0), x(1, "matmul_y_0", "matmul", 10.0, 20.0),
                    x(0, "rmsnorm_h_1", "rmsnorm", 30.0, 10.0), x(1, "matmul_y_1", "matmul", 40.0, 20.0 + extra)]
        with tempfile.TemporaryDirectory() as d:
            other = os.path.join(d, "other.json")
            with open(other, "w") as f:
                json.dump({"traceEvents": layers(6.0)}, f)
            out = run_cli(layers(0.0), "--against", other)
        lines = out.splitlines()
        self.assertEqual(lines[1].split(), ["matmul_y", "2", "40.0", "46.0", "+6.0", "20.00", "23.00"])
        self.assertEqual(lines[2].split(), ["rmsnorm_h", "2", "20.0", "20.0", "+0.0", "10.00", "10.00"])
        self.assertEqual(lines[-1], "launch: 60.0 us, other 66.0 us (+6.0)")

    def test_cli_woke_is_the_lag_behind_the_producer(self):
        late = [EVENTS[1], x(1, "matmul_y", "matmul", 1.0, 29.0, 12.0), x(0, "matmul_y", "matmul", 10.0, 24.0, 1.0)]
        out = run_cli(late)
        line = next(l for l in out.splitlines() if l.startswith("matmul_y"))
        self.assertEqual(line.split()[-3:-1], ["2.0", "3.0"])  # woke at 13 and 11: median 2, last 3

    def test_cli_lag_is_behind_the_last_grid_to_end_before_the_wake(self):
        # A consumer whose runs start (and spin) before its producer: listed first, so woke is
        # measured from the grid before it (prep, ended at 5); lag from the producer's end (20).
        chain = [x(0, "prep", "fill", 0.0, 5.0), x(1, "consumer", "matmul", 6.0, 30.0, 16.0),
                 x(2, "consumer", "matmul", 6.0, 30.0, 17.0), x(3, "producer", "rmsnorm", 7.0, 13.0)]
        out = run_cli(chain)
        line = next(l for l in out.splitlines() if l.startswith("consumer"))
        self.assertEqual(line.split()[-3:], ["17.5", "18.0", "2.5"])  # woke at 22 and 23

    def test_layer_lists_its_grids_by_first_op(self):
        def op_at(e, begin):
            e["args"]["ops_begin_us"] = begin
            return e
        # Layer 1: its norm (first op at 20 + 0.5), q (two runs, the first op at 22 + 1), then
        # layer 2's norm (first op at 40 + 2); layer 0 and the unnumbered head are not listed.
        trace = [x(0, "rmsnorm_h_0", "rmsnorm", 0.0, 10.0), op_at(x(0, "add_rmsnorm_h_1", "add_rmsnorm", 20.0, 4.0), 0.5),
                 op_at(x(1, "matmul_q_1", "matmul", 22.0, 10.0, 1.0), 1.0),
                 op_at(x(2, "matmul_q_1", "matmul", 23.0, 12.0, 3.0), 3.0),
                 op_at(x(0, "add_rmsnorm_h_2", "add_rmsnorm", 40.0, 5.0, 2.0), 2.0), x(3, "matmul_logits", "matmul", 50.0, 9.0)]
        self.assertEqual(ts.layer_table(trace, 1), [
            "layer 1, us from its first grid's first op:",
            f"{'grid':32} {'first op':>9} {'last end':>9}",
            f"{'add_rmsnorm_h_1':32} {0.0:9.1f} {3.5:9.1f}",
            f"{'matmul_q_1':32} {2.5:9.1f} {14.5:9.1f}",
            "layer 1: 21.5 us to layer 2's first op"])
        # The last layer: to its last grid's end; a layer that is not there says so.
        self.assertEqual(ts.layer_table(trace, 2)[-1], "layer 2: 3.0 us to its last grid's end")
        self.assertEqual(ts.layer_table(trace, 9), ["no grid of layer 9 in the trace"])
        self.assertEqual(run_cli(trace, "--layer", "1").splitlines()[-1], "layer 1: 21.5 us to layer 2's first op")

    def test_runs_gives_each_phase_from_the_producers_end(self):
        # matmul_y's runs after rmsnorm_h (ended at 10): started at 1 and 10, woke at 1 + 9 and
        # 10 + 0, the first with op marks (ops 11 .. 26), the second without (its ops from its
        # wake to its end, 34).
        first = x(1, "matmul_y", "matmul", 1.0, 29.0, 9.0)
        first["args"].update({"ops_begin_us": 10.0, "ops_us": 15.0})
        trace = [EVENTS[1], first, EVENTS[3]]
        self.assertEqual(ts.runs_table(trace, "matmul_y", "rmsnorm_h"), [
            "matmul_y: 2 runs, us from rmsnorm_h's last end:",
            f"{'':10} {'least':>8} {'median':>8} {'largest':>8}",
            f"{'start':10} {-9.0:8.2f} {-4.5:8.2f} {0.0:8.2f}",
            f"{'woke':10} {0.0:8.2f} {0.0:8.2f} {0.0:8.2f}",
            f"{'ops begin':10} {0.0:8.2f} {0.5:8.2f} {1.0:8.2f}",
            f"{'ops end':10} {16.0:8.2f} {20.0:8.2f} {24.0:8.2f}",
            f"{'end':10} {20.0:8.2f} {22.0:8.2f} {24.0:8.2f}"])
        # Without --after, from the launch's first task (the rmsnorm's start, 0).
        self.assertEqual(ts.runs_table(trace, "matmul_y")[0], "matmul_y: 2 runs, us from the launch's first task:")
        self.assertEqual(ts.runs_table(trace, "nope"), ["no run of nope in the trace"])
        self.assertEqual(ts.runs_table(trace, "matmul_y", "nope"), ["no run of nope in the trace"])
        self.assertIn("ops end       16.00    20.00    24.00", run_cli(trace, "--runs", "matmul_y", "--after", "rmsnorm_h"))


if __name__ == "__main__":
    unittest.main()
