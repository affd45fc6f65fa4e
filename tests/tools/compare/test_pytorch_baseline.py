"""tools/compare/pytorch_baseline.py: its command line (bad values exit 2 naming
the flag), its header and JSON line; and, where this Python has torch, a real
run of the peer on the CPU in eager and torch.compile modes (skipped otherwise:
the CI's test environment holds no torch)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import pathlib
import subprocess
import sys
import unittest

REPO = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = REPO / "tools" / "compare" / "pytorch_baseline.py"
sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, str(SCRIPT.parent))
import pytorch_baseline as pb  # noqa: E402

HAVE_TORCH = importlib.util.find_spec("torch") is not None and \
    importlib.util.find_spec("torchvision") is not None


def run_script(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout)


def json_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


class CommandLine(unittest.TestCase):
    def assert_usage_error(self, args: list[str], *needles: str):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as cm:
            pb.parse_args(args)
        self.assertEqual(cm.exception.code, 2)
        for needle in needles:
            self.assertIn(needle, err.getvalue())

    def test_defaults_follow_cnnbench(self):
        a = pb.parse_args([])
        self.assertEqual((a.model, a.precision, a.mode, a.sgd, a.data_format, a.device),
                         ("resnet50", "fp16", "eager", "fused", "NHWC", "cuda"))
        self.assertEqual((a.learning_rate, a.momentum, a.weight_decay), (0.01, 0.9, 1e-4))
        self.assertEqual((a.image_size, pb.parse_args(["--model=inception3"]).image_size),
                         (224, 299))

    def test_every_mode_is_named_and_described(self):
        self.assertEqual(list(pb.MODES), ["eager", "cuda-graph", "compile",
                                          "compile-reduce-overhead", "compile-max-autotune"])
        self.assertEqual([m.compile_mode for m in pb.MODES.values()],
                         [None, None, "default", "reduce-overhead", "max-autotune"])
        self.assertTrue(pb.MODES["cuda-graph"].cuda_graph)

    def test_bad_values_name_the_flag(self):
        self.assert_usage_error(["--batch_size=0"], "--batch_size", "0 is not >= 1")
        self.assert_usage_error(["--num_batches=x"], "--num_batches", "'x' is not an integer")
        self.assert_usage_error(["--model=resnet18"], "--model", "resnet18")
        self.assert_usage_error(["--mode=jit"], "--mode")
        self.assert_usage_error(["--momentum=1"], "--momentum", "not in [0, 1)")
        self.assert_usage_error(["--learning_rate=-1"], "--learning_rate")

    def test_combinations_that_cannot_run_are_refused(self):
        self.assert_usage_error(["--mode=cuda-graph", "--precision=fp16", "--sgd=foreach"],
                                "--sgd", "needs --sgd=fused")
        self.assert_usage_error(["--device=cpu", "--mode=cuda-graph"], "needs --device=cuda")
        self.assert_usage_error(["--device=cpu", "--precision=tf32"], "needs --device=cuda")
        pb.parse_args(["--mode=cuda-graph", "--precision=bf16", "--sgd=foreach"])  # no sync there

    def test_sgd_implementations(self):
        self.assertEqual(pb.sgd_kwargs("fused"), {"fused": True})
        self.assertEqual(pb.sgd_kwargs("foreach"), {"foreach": True})
        self.assertEqual(pb.sgd_kwargs("for-loop"), {"foreach": False})

    def test_header_reads_like_cnnbench(self):
        args = pb.parse_args(["--mode=compile-max-autotune", "--batch_size=128"])
        lines = pb.header_lines(args, "NVIDIA H100 80GB HBM3", "PyTorch 2.11.0", 25557032)
        self.assertEqual(lines[0], "Model:       resnet50")
        self.assertEqual(lines[3], "Batch size:  128 global")
        self.assertEqual(lines[4], "             128 per device")
        self.assertEqual(lines[2], "Mode:        training; PyTorch peer compile-max-autotune: "
                         'torch.compile(mode="max-autotune"): template autotuning and CUDA graphs')
        self.assertIn("Parameters:  25557032 (25.56 million)", lines)
        self.assertIn("Optimizer:   SGD fused (momentum 0.9, learning rate 0.01, "
                      "weight decay 0.0001)", lines)

    def test_json_is_always_valid(self):
        value = pb.json_safe({"a": float("nan"), "b": [float("inf"), 1.5], "c": pathlib.Path("/x")})
        self.assertEqual(value, {"a": "nan", "b": ["inf", 1.5], "c": "/x"})
        json.dumps(value, allow_nan=False)

    @unittest.skipIf(HAVE_TORCH, "this Python has torch")
    def test_without_torch_one_json_error_line_and_status_1(self):
        p = run_script("--model=trivial", "--num_batches=1")
        self.assertEqual(p.returncode, 1, p.stderr)
        record = json_line(p.stdout)
        self.assertIn("No module named 'torch'", record["error"])
        self.assertEqual((record["model"], record["mode"]), ("trivial", "eager"))


@unittest.skipUnless(HAVE_TORCH, "torch and torchvision are not installed in this Python")
class CpuRun(unittest.TestCase):
    """The peer's real code path on the CPU, small: every figure it reports is there."""

    SMALL = ["--device=cpu", "--batch_size=4", "--image_size=32", "--num_classes=10",
             "--num_batches=4", "--num_warmup_batches=2", "--display_every=2"]

    def check(self, *args: str) -> dict:
        p = run_script(*self.SMALL, *args, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        record = json_line(p.stdout)
        self.assertNotIn("error", record)
        total = pb.timing.DASHES + "\ntotal images/sec: "
        self.assertIn(total, p.stdout)
        reported = float(p.stdout.split(total)[1].split()[0])
        self.assertAlmostEqual(reported, record["images_per_sec"], places=1)
        self.assertEqual(record["timed_steps"], 4)
        self.assertEqual(record["device_kind"], "cpu")
        self.assertGreater(record["images_per_sec"], 0)
        for key in ("p50", "p90", "p99", "mean", "min", "max"):
            self.assertGreater(record["step_ms"][key], 0)
        self.assertIn("\n1\timages/sec: ", p.stdout)
        self.assertIn("\n4\timages/sec: ", p.stdout)
        return record

    def test_resnet50_eager_fp32_channels_last(self):
        record = self.check("--model=resnet50", "--precision=fp32")
        self.assertEqual(record["param_count"], 23528522)  # torchvision's, 10 classes
        self.assertIsNone(record["compile_s"])

    def test_fp16_with_loss_scaling_and_bf16(self):
        self.check("--model=trivial", "--precision=fp16")
        self.check("--model=trivial", "--precision=bf16", "--sgd=foreach")

    def test_compile_reports_its_compile_time_apart(self):
        record = self.check("--model=trivial", "--precision=fp32", "--mode=compile")
        self.assertGreater(record["compile_s"], 0)
        self.assertEqual(record["compile_s"], record["first_step_s"])
        self.assertLess(record["wall_time_s"], record["compile_s"])


if __name__ == "__main__":
    unittest.main()
