#!/usr/bin/env python3
"""Tests of bench/micro/compare.py on two canned Google Benchmark JSON files
(tests/bench/micro/data/before.json and after.json).

Usage: compare_test.py PATH/TO/compare.py
"""

import importlib.util
import io
import os
import subprocess
import sys
import unittest
from contextlib import redirect_stdout

COMPARE = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "bench", "micro", "compare.py")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
BEFORE = os.path.join(DATA, "before.json")
AFTER = os.path.join(DATA, "after.json")


def load_module():
    spec = importlib.util.spec_from_file_location("compare", COMPARE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


compare = load_module()


class CompareTest(unittest.TestCase):
    def rows(self, **kwargs):
        rows = compare.compare(compare.load(BEFORE), compare.load(AFTER), **kwargs)
        return {r[0]: r for r in rows}, rows

    def test_names_lose_google_benchmark_suffixes(self):
        self.assertEqual(compare.clean_name("allreduce/nccl/in_place/1MiB/iterations:20/manual_time"),
                         "allreduce/nccl/in_place/1MiB")
        self.assertEqual(compare.clean_name("conv/cpu/m/l/fprop/fp32/NHWC/manual_time"),
                         "conv/cpu/m/l/fprop/fp32/NHWC")

    def test_repeated_iterations_are_averaged(self):
        # after.json has the conv twice (4 ms and 6 ms): 5 ms against 10 ms.
        by_name, _ = self.rows()
        row = by_name["conv/cuda/resnet50/layer1.0.conv2/fprop/fp16/NHWC"]
        self.assertEqual(row[1:7], ("10 ms", "5 ms", "-50.0%", "100", "150", "TFLOP/s"))

    def test_times_are_converted_to_the_first_files_unit(self):
        # 100 us before, 0.2 ms after: 200 us, twice as slow.
        by_name, _ = self.rows()
        row = by_name["kernel/cuda/bn_relu_fwd/fp16/NHWC/resnet50/layer1.0.bn1"]
        self.assertEqual(row[1:7], ("100 us", "200 us", "+100.0%", "2000", "1000", "GB/s"))

    def test_median_aggregate_wins(self):
        by_name, _ = self.rows()
        row = by_name["allreduce/nccl/in_place/1MiB"]
        self.assertEqual(row[1:7], ("50 us", "25 us", "-50.0%", "35", "70", "busbw_GB/s"))

    def test_one_rank_all_reduce_shows_algbw(self):
        by_name, _ = self.rows()
        row = by_name["allreduce/nccl/out_of_place/1MiB"]
        self.assertEqual(row[4:7], ("100", "100", "algbw_GB/s"))

    def test_errors_and_missing_benchmarks(self):
        by_name, _ = self.rows()
        error = by_name["conv/cpu/resnet50/conv1/fprop/fp32/NHWC"]
        self.assertEqual(error[1:4], ("error", "20 ms", "error"))
        self.assertEqual(by_name["kernel/cuda/cast/f32_to_f16/resnet50"][3], "only in before")
        self.assertEqual(by_name["kernel/cuda/cast/f32_to_bf16/resnet50"][3], "only in after")

    def test_filter_and_sort(self):
        _, rows = self.rows(pattern="^conv/cuda|^kernel/cuda/bn")
        self.assertEqual(len(rows), 2)
        _, rows = self.rows(sort="change")
        self.assertEqual(rows[0][0], "kernel/cuda/bn_relu_fwd/fp16/NHWC/resnet50/layer1.0.bn1")

    def test_geometric_mean(self):
        # Ratios 0.5, 2, 0.5, 1: product 0.5, geometric mean 0.5^(1/4) = 0.8409.
        _, rows = self.rows()
        self.assertAlmostEqual(compare.geometric_mean([r[7] for r in rows]), 0.5 ** 0.25)

    def test_main_prints_the_table(self):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(compare.main([BEFORE, AFTER]), 0)
        text = out.getvalue()
        self.assertIn("time before", text)
        self.assertIn("before: error in 1 benchmark(s)", text)
        self.assertIn("no oneDNN implementation", text)
        self.assertIn("geometric mean of time after/before over 4 benchmarks: 0.841", text)

    def test_markdown(self):
        out = io.StringIO()
        with redirect_stdout(out):
            compare.main([BEFORE, AFTER, "--markdown"])
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[0], "| name | time before | time after | change | rate before | "
                                   "rate after | unit |")
        self.assertTrue(all(line.startswith("|") for line in lines[:9]))

    def test_command_line_and_bad_input(self):
        proc = subprocess.run([sys.executable, COMPARE, BEFORE, AFTER], capture_output=True,
                              text=True, check=False)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("-50.0%", proc.stdout)
        proc = subprocess.run([sys.executable, COMPARE, BEFORE, COMPARE], capture_output=True,
                              text=True, check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("cannot read", proc.stderr)


if __name__ == "__main__":
    unittest.main()
