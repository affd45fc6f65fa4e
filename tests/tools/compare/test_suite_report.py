"""tools/compare/suite_report.py: the GPU suite's records are parsed from real
output formats (cnnbench's text report, the PyTorch peer's text and JSON line,
ctest's test lines) and its closing table names every runner, its images/sec and
the ratio cnnbench/peer."""
from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

REPO = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "compare" / "suite_report.py"
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, str(SCRIPT.parent))
import suite_report as sr  # noqa: E402

# The end of a cnnbench GPU run, as bench/report/text_report.cpp prints it.
CNNBENCH_LOG = """\
Model:       resnet50
Batch size:  256 global
             256 per device
Backend:     cuda (cuDNN 9.13.0, cuBLASLt 13.0.2)
Memory:      20480.0 MiB per device
Set-up:      plans 1.20 s, autotuning 3.40 s, allocation 0.50 s; 161 cuDNN plans (161 autotuned, 0 from the plan cache)
==========
Step	Img/sec	total_loss
1	images/sec: 2901.3 +/- 0.0 (jitter = 0.0)	7.021
----------------------------------------------------------------
total images/sec: 2904.81
----------------------------------------------------------------
timed steps: 50 (12800 images in 4.407 s of wall time)
step time p50/p90/p99: 88.10 / 88.90 / 90.02 ms
"""

PEER_JSON = {"model": "resnet50", "precision": "fp16", "batch": 256, "mode": "compile",
             "sgd": "fused", "images_per_sec": 2420.5, "compile_s": 81.2, "capture_s": None,
             "step_ms": {"p50": 105.2}, "peak_reserved_gib": 22.5, "torch": "2.11.0"}
PEER_LOG = ("Model:       resnet50\n----\ntotal images/sec: 2420.00\n----\n"
            + json.dumps(PEER_JSON) + "\n")

CTEST_LOG = """\
Test project /x/build
1/4 Test #1: cuda_conv_test ...................   Passed   12.31 sec
2/4 Test #2: kernels_cuda_fc_test .............***Failed    3.02 sec
3/4 Test #3: bench_telemetry_gpu_test .........***Skipped   0.20 sec
4/4 Test #4: mpi_nccl_local_group_test ........***Exception: SegFault  0.11 sec

25% tests passed, 2 tests failed out of 4
Errors while running CTest
"""


def args(**kw):
    base = dict(stage="bench", status=None, status_code=0, seconds=12.0, runner=None, mode=None,
                model=None, precision=None, batch=None, note=None, earlier=False)
    base.update(kw)
    return type("Args", (), base)()


class Parsing(unittest.TestCase):
    def test_cnnbench_figures(self):
        f = sr.parse_cnnbench(CNNBENCH_LOG)
        self.assertEqual(f["images_per_sec"], 2904.81)
        self.assertAlmostEqual(f["memory_gib"], 20.0)
        self.assertEqual(f["step_ms_p50"], 88.10)
        self.assertTrue(f["setup"].startswith("plans 1.20 s, autotuning 3.40 s"))
        self.assertTrue(f["backend"].startswith("cuda (cuDNN 9.13.0"))

    def test_the_result_json_wins_where_both_have_a_figure(self):
        result = {"run": {"gflops_per_image": 4.11, "device_memory_bytes": 3 * 2**30},
                  "summary": {"total_images_per_sec": 2904.9, "setup_time_s": 14.2,
                              "step_time_ms": {"p50": 88.0}},
                  "setup": {"notes": ["FC bias gradient: DEFAULT epilogue and our reduction"]},
                  "verify": {"passed": False, "lines": ["verify (gpu 0, ...): fc: 3e-1 > 3e-2"]}}
        f = sr.parse_cnnbench(CNNBENCH_LOG + "FLOPs:       4.10 GFLOPs/image (forward)\n", result)
        self.assertEqual((f["images_per_sec"], f["start_s"], f["gflops_per_image"],
                          f["memory_gib"], f["step_ms_p50"]), (2904.9, 14.2, 4.11, 3.0, 88.0))
        self.assertEqual(f["verify"], "verify FAILED")
        self.assertEqual(f["notes"], ["FC bias gradient: DEFAULT epilogue and our reduction"])
        text_only = sr.parse_cnnbench(CNNBENCH_LOG + "FLOPs:       4.10 GFLOPs/image (forward)\n"
                                      "Verify:      verify (gpu 0, one step): all within\n"
                                      "Note:        plans from the cache\n")
        self.assertEqual((text_only["gflops_per_image"], text_only["verify"], text_only["notes"]),
                         (4.10, "all within", ["plans from the cache"]))
        self.assertNotIn("start_s", text_only)

    def test_tflops_count_three_passes(self):
        self.assertAlmostEqual(sr.tflops({"status": "ok", "images_per_sec": 3000.0}, 4.1),
                               3000 * 3 * 4.1 / 1000)
        self.assertIsNone(sr.tflops({"status": "timeout", "images_per_sec": 3000.0}, 4.1))
        self.assertIsNone(sr.tflops({"status": "ok", "images_per_sec": 3000.0}, None))

    def test_the_last_total_line_counts(self):
        self.assertEqual(sr.parse_total("total images/sec: 1.5\ntotal images/sec: 2.5\n"), 2.5)
        self.assertIsNone(sr.parse_total("images/sec: 3.0\n"))

    def test_peer_figures_come_from_its_total_line_and_json(self):
        f = sr.parse_peer(PEER_LOG)
        self.assertEqual(f["images_per_sec"], 2420.00)
        self.assertEqual((f["memory_gib"], f["compile_s"], f["step_ms_p50"], f["sgd"]),
                         (22.5, 81.2, 105.2, "fused"))
        self.assertNotIn("capture_s", f)

    def test_a_failed_peer_keeps_its_error(self):
        line = json.dumps({"mode": "cuda-graph", "error": "RuntimeError: capture failed"})
        f = sr.parse_peer("Model: resnet50\n" + line + "\n")
        self.assertEqual(f, {"error": "RuntimeError: capture failed"})

    def test_ctest_lines(self):
        r = sr.parse_ctest(CTEST_LOG)
        self.assertEqual([(t["name"], t["status"]) for t in r["tests"]], [
            ("cuda_conv_test", "passed"), ("kernels_cuda_fc_test", "failed"),
            ("bench_telemetry_gpu_test", "skipped"),
            ("mpi_nccl_local_group_test", "crashed (SegFault)")])
        self.assertEqual(r["counts"], {"passed": 1, "failed": 1, "skipped": 1,
                                       "crashed (SegFault)": 1})

    def test_status_from_exit_codes(self):
        self.assertEqual([sr.status_text(c) for c in (0, 124, 137, 125, 2)],
                         ["ok", "timeout", "timeout", "skipped (time)", "failed (exit 2)"])

    def test_error_lines_name_the_cause(self):
        cmake = "-- Performing Test X - Failed\nCMake Error at CMakeLists.txt:27 (message):\n" \
                "  CNNBENCH_CUDA=ON but no working CUDA compiler was found\n"
        self.assertEqual(sr.error_line(cmake), "CMake Error at CMakeLists.txt:27 (message): "
                         "CNNBENCH_CUDA=ON but no working CUDA compiler was found")
        build = "[1/9] nvcc a.cu\nFAILED: kernels/a.cu.o\na.cu(3): error: x\nninja: build stopped\n"
        self.assertEqual(sr.error_line(build), "FAILED: kernels/a.cu.o")
        self.assertEqual(sr.error_line("No tests were found!!!\nErrors while running CTest\n"),
                         "No tests were found!!!")
        self.assertIsNone(sr.error_line("-- Looking for x - not found\n=== exit 1\n"))


class Records(unittest.TestCase):
    def test_an_ok_run_without_a_total_is_no_success(self):
        r = sr.make_record(args(runner="cnnbench", model="resnet50"), "Model: resnet50\n")
        self.assertEqual(r["status"], "no total")
        self.assertFalse(sr.is_fine(r))

    def test_a_timeout_carries_no_guessed_error(self):
        r = sr.make_record(args(runner="cnnbench", status_code=124), "-- check Failed\n")
        self.assertEqual(r["status"], "timeout")
        self.assertNotIn("error", r)

    def test_done_keys_leave_out_skipped_runs(self):
        records = [
            {"stage": "bench", "runner": "cnnbench", "mode": "-", "model": "resnet50",
             "precision": "fp16", "batch": 256, "status": "ok"},
            {"stage": "compare", "runner": "pytorch", "mode": "compile", "model": "resnet50",
             "precision": "fp16", "batch": 256, "status": "skipped (time)"},
            {"stage": "compare", "runner": "pytorch", "mode": "eager", "model": "resnet50",
             "precision": "fp16", "batch": 256, "status": "timeout"},
        ]
        self.assertEqual(sr.done_keys(records), ["cnnbench - resnet50 fp16 256",
                                                 "pytorch eager resnet50 fp16 256"])


class Table(unittest.TestCase):
    def records(self):
        return [
            {"stage": "build", "status": "ok", "seconds": 201.0, "note": "cnnbench cuda_conv_test"},
            {"stage": "tests", "status": "failed (exit 8)", "seconds": 40.0,
             **sr.parse_ctest(CTEST_LOG)},
            dict(stage="bench", runner="cnnbench", mode="-", model="resnet50", precision="fp16",
                 batch=256, status="ok", seconds=50.0, **sr.parse_cnnbench(CNNBENCH_LOG)),
            dict(stage="compare", runner="pytorch", mode="compile", model="resnet50",
                 precision="fp16", batch=256, status="ok", seconds=120.0,
                 **sr.parse_peer(PEER_LOG)),
            dict(stage="compare", runner="pytorch", mode="eager", model="resnet50",
                 precision="fp16", batch=256, status="ok", seconds=30.0, images_per_sec=2904.81,
                 sgd="foreach"),
            dict(stage="compare", runner="pytorch", mode="cuda-graph", model="resnet50",
                 precision="fp16", batch=256, status="failed (exit 1)", seconds=20.0,
                 error="RuntimeError: capture failed"),
            dict(stage="compare", runner="pytorch", mode="compile-max-autotune", model="resnet50",
                 precision="fp16", batch=256, status="skipped (time)", seconds=0),
        ]

    def test_every_runner_has_a_row_with_its_ratio(self):
        text = sr.render_table(self.records())
        compile_row = next(l for l in text.splitlines() if "pytorch compile " in l)
        self.assertIn("2420.0", compile_row)
        self.assertIn(f"{2904.81 / 2420.0:.2f}", compile_row)
        self.assertIn("compile 81 s", compile_row)
        eager_row = next(l for l in text.splitlines() if "pytorch eager (SGD foreach)" in l)
        self.assertIn("1.00", eager_row)
        graph_row = next(l for l in text.splitlines() if "pytorch cuda-graph" in l)
        self.assertIn("failed (exit 1): RuntimeError: capture failed", graph_row)
        ours = next(l for l in text.splitlines() if l.startswith("resnet50"))
        self.assertIn("cnnbench", ours)
        self.assertIn("2904.8", ours)
        self.assertIn("20.0", ours)
        self.assertIn("resnet50 fp16 batch 256: cnnbench 2904.8 images/sec = 1.00 x the best peer "
                      "(pytorch eager (SGD foreach), 2904.8)", text)
        self.assertIn("skipped for time: pytorch compile-max-autotune resnet50 fp16 256", text)

    def test_stage_lines(self):
        lines = sr.render_table(self.records()).splitlines()
        self.assertTrue(lines[0].startswith("build"))
        self.assertIn("ok", lines[0])
        self.assertIn("1 passed, 1 failed, 1 skipped, 1 crashed (SegFault) of 4", lines[1])
        self.assertIn("not passed: kernels_cuda_fc_test (failed), mpi_nccl_local_group_test "
                      "(crashed (SegFault))", lines[1])
        self.assertIn("1 run, 0 not ok, 0 skipped for time", lines[2])
        self.assertTrue(lines[3].startswith("compare") and "failed" in lines[3])
        self.assertIn("3 run, 1 not ok, 1 skipped for time", lines[3])


class CommandLine(unittest.TestCase):
    def test_record_import_done_table_verdict(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            log = tmp / "run.log"
            log.write_text(CNNBENCH_LOG)
            earlier = tmp / "earlier.jsonl"

            def call(*a, ok=True):
                p = subprocess.run([sys.executable, str(SCRIPT), *a], capture_output=True,
                                   text=True, timeout=60)
                if ok:
                    self.assertEqual(p.returncode, 0, p.stderr)
                return p

            out = call("record", "--results", str(earlier), "--stage", "bench", "--runner",
                       "cnnbench", "--mode", "-", "--model", "resnet50", "--precision", "fp16",
                       "--batch", "256", "--status-code", "0", "--seconds", "40", "--log",
                       str(log)).stdout
            self.assertEqual(out.strip(), "2904.8 images/sec")
            call("record", "--results", str(earlier), "--stage", "compare", "--runner",
                 "pytorch", "--mode", "eager", "--model", "resnet50", "--precision", "fp16",
                 "--batch", "256", "--status-code", "125")
            self.assertEqual(call("verdict", "--results", str(earlier)).returncode, 0)

            results = tmp / "results.jsonl"
            self.assertIn("1 records", call("import", "--results", str(results), "--from",
                                            str(earlier)).stdout)
            self.assertEqual(call("done", "--results", str(results)).stdout,
                             "cnnbench - resnet50 fp16 256\n")
            self.assertIn("earlier call", call("table", "--results", str(results)).stdout)
            call("record", "--results", str(results), "--stage", "tests", "--status-code", "8")
            self.assertEqual(call("verdict", "--results", str(results), ok=False).returncode, 1)

    def test_bad_arguments_exit_2(self):
        p = subprocess.run([sys.executable, str(SCRIPT), "record", "--results", "x",
                            "--stage", "nope"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--stage", p.stderr)


if __name__ == "__main__":
    unittest.main()
