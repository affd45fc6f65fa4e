"""tools/gpu_suite.sh and tools/fetch_gpu_deps.sh without a GPU: the suite runs
against fakes of nvcc, nvidia-smi, cmake, ctest, ninja, cnnbench and the PyTorch
peer, and a fake site-packages holding the nvidia wheels' folders. It finds nvcc
(PATH before the wheel; none: the build fails and never configures), configures
with -DCNNBENCH_CUDA=ON and that nvcc, prints nvcc's and the libraries' versions
first, builds cnnbench and the gpu test programs ctest lists, runs stages
independently under time budgets, skips what does not fit, prints a table last
(also when stopped by SIGTERM), resumes from an earlier call's results, and
refuses bad arguments with status 2."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

REPO = pathlib.Path(__file__).resolve().parents[2]
SUITE = REPO / "tools" / "gpu_suite.sh"
FETCH = REPO / "tools" / "fetch_gpu_deps.sh"
PY = sys.executable
SYSTEM_TOOLS = ["bash", "env", "timeout", "date", "sed", "grep", "cut", "tail", "head", "tee",
                "mkdir", "rm", "dirname", "readlink", "sort", "sha1sum", "touch", "ln", "nproc",
                "cat", "sleep"]

# Each fake appends its argv as one JSON line to $FAKE_LOG/<name>.jsonl.
PRELUDE = f"""#!{PY}
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.path.join(os.environ["FAKE_LOG"], name + ".jsonl"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
"""

FAKE_NVCC = PRELUDE + """
print("nvcc: NVIDIA (R) Cuda compiler driver")
print("Cuda compilation tools, release 13.0, V13.0.88")
"""

FAKE_NVIDIA_SMI = PRELUDE + """
if any(a.startswith("--query-gpu") for a in args):
    print("NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB")
else:
    print("fake nvidia-smi")
"""

# cnnbench's text output; images/sec from the model's name, so rows differ.
FAKE_CNNBENCH = PRELUDE + """
opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
if "--help" in args:
    print("--plan_cache PATH\\n--result_json PATH\\n--verify")
    sys.exit(0)
if os.environ.get("FAKE_CNNBENCH_SLEEP"):
    open(os.path.join(os.environ["FAKE_LOG"], "cnnbench.started"), "w").close()
    import time
    time.sleep(float(os.environ["FAKE_CNNBENCH_SLEEP"]))
print("Model:       " + opts["model"])
print("Backend:     cuda (cuDNN 9.13.0)")
print("Memory:      10240.0 MiB per device")
print("==========")
print("-" * 64)
ips = 1000.0 + len(opts["model"])
print("total images/sec: %.2f" % ips)
print("-" * 64)
if "result_json" in opts:
    verify = {"passed": True, "lines": ["verify (gpu 0): ok"]} if "--verify" in args else \\
        {"passed": None, "lines": []}
    json.dump({"run": {"gflops_per_image": 4.0, "device_memory_bytes": 10 * 2**30},
               "summary": {"total_images_per_sec": ips, "setup_time_s": 12.5},
               "setup": {"notes": ["FC bias gradient by the DEFAULT epilogue"]},
               "verify": verify}, open(opts["result_json"], "w"))
"""

FAKE_CMAKE = PRELUDE + """
if args and args[0] == "--version":
    print("cmake version 3.31.0")
    sys.exit(0)
if args and args[0] == "--build":
    build = args[1]
    os.makedirs(os.path.join(build, "bench"), exist_ok=True)
    target = os.path.join(build, "bench", "cnnbench")
    with open(target, "w") as f:
        f.write(open(os.environ["FAKE_CNNBENCH_SRC"]).read())
    os.chmod(target, 0o755)
    print("[1/1] Linking CXX executable bench/cnnbench")
    sys.exit(int(os.environ.get("FAKE_BUILD_RC", "0")))
build = args[args.index("-B") + 1]
os.makedirs(build, exist_ok=True)
cuda = os.environ.get("FAKE_CUDA_RESULT", "ON")
onednn = "ON" if "-DCNNBENCH_ONEDNN=ON" in args else "OFF"
with open(os.path.join(build, "CMakeCache.txt"), "w") as f:
    f.write(f"CNNBENCH_CUDA:BOOL={cuda}\\nCNNBENCH_ONEDNN:BOOL={onednn}\\n")
open(os.path.join(build, "CTestTestfile.cmake"), "w").close()
print("-- Configuring done")
"""

FAKE_CTEST = PRELUDE + """
if "--show-only=json-v1" in args:
    def test(name, label):
        return {"name": name, "command": ["/b/" + name],
                "properties": [{"name": "LABELS", "value": [label]}]}
    print(json.dumps({"kind": "ctestInfo", "tests": [
        test("cuda_conv_test", "gpu"), test("kernels_cuda_fc_test", "gpu"),
        test("bench_stats_test", "cpu")]}))
    sys.exit(0)
print("1/2 Test #1: cuda_conv_test ...........   Passed    3.10 sec")
print("2/2 Test #2: kernels_cuda_fc_test .....***Skipped   0.50 sec")
print("100% tests passed, 0 tests failed out of 2")
"""

FAKE_NINJA = PRELUDE + """
if "-t" in args:
    print("cnnbench: phony\\ncuda_conv_test: phony\\nkernels_cuda_fc_test: phony\\n"
          "bench_stats_test: phony")
elif "-n" in args:
    print("[1/1] Linking CXX executable bench/cnnbench" if os.environ.get("FAKE_STALE")
          else "ninja: no work to do.")
else:
    print("1.11.1")
"""

# The peer's Python: the suite's version probe (-c) or pytorch_baseline.py.
FAKE_TORCH_PY = PRELUDE + """
if args[0] == "-c":
    print("PyTorch 2.11.0+fake (CUDA 13.0, cuDNN 91300), torchvision 0.26.0, GPU visible: True")
    sys.exit(0)
opts = dict(a[2:].split("=", 1) for a in args[1:] if a.startswith("--") and "=" in a)
mode = opts["mode"]
record = {"model": opts["model"], "precision": opts["precision"], "mode": mode, "sgd": "fused"}
if mode in os.environ.get("FAKE_PEER_FAIL", "").split():
    record["error"] = "RuntimeError: capture failed"
    print(json.dumps(record))
    sys.exit(1)
ips = 800.0 + len(mode)
record.update(images_per_sec=ips, peak_reserved_gib=12.5,
              compile_s=60.0 if mode.startswith("compile") else None)
print("total images/sec: %.2f" % ips)
print(json.dumps(record))
"""


def write(path: pathlib.Path, text: str, mode: int = 0o644) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


class Suite(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self._tmp.name)
        self.tools = self.root / "tools"
        self.tools.mkdir()
        for program in SYSTEM_TOOLS:
            found = shutil.which(program, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
            if found is None:
                self.skipTest(f"{program} is not on this machine")
            os.symlink(found, self.tools / program)
        self.fakes = self.root / "fakes"
        for name, text in (("nvidia-smi", FAKE_NVIDIA_SMI), ("cmake", FAKE_CMAKE),
                           ("ctest", FAKE_CTEST), ("ninja", FAKE_NINJA)):
            write(self.fakes / name, text, 0o755)
        self.cnnbench_src = write(self.root / "cnnbench_src", FAKE_CNNBENCH)
        self.torch_py = write(self.root / "torchpy" / "torch-python", FAKE_TORCH_PY, 0o755)
        self.log = self.root / "calls"
        self.log.mkdir()
        self.work = self.root / "work"
        self.out = self.root / "out"
        # The nvidia wheels as pip lays them out (CUDA 13: nvidia/cu13 for the toolkit parts).
        self.site = self.root / "site"
        wheels = self.site / "nvidia"
        write(wheels / "cudnn" / "lib" / "libcudnn.so.9", "")
        write(wheels / "cudnn" / "include" / "cudnn.h", "")
        write(wheels / "cudnn" / "include" / "cudnn_version.h",
              "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 13\n#define CUDNN_PATCHLEVEL 0\n")
        write(wheels / "nccl" / "lib" / "libnccl.so.2", "")
        write(wheels / "nccl" / "include" / "nccl.h",
              "#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 7\n")
        write(wheels / "cu13" / "lib" / "libcublasLt.so.13", "")
        write(wheels / "cu13" / "lib" / "libcublas.so.13", "")
        write(wheels / "cu13" / "include" / "cublasLt.h", "")
        write(wheels / "cu13" / "include" / "cublas_api.h",
              "#define CUBLAS_VER_MAJOR 13\n#define CUBLAS_VER_MINOR 0\n#define CUBLAS_VER_PATCH 2\n")
        self.wheel_nvcc = wheels / "cu13" / "bin" / "nvcc"
        write(self.wheel_nvcc, FAKE_NVCC, 0o755)
        for dist, version in (("nvidia_cudnn_cu13", "9.13.0.50"), ("nvidia_nccl_cu13", "2.27.7"),
                              ("nvidia_cublas", "13.0.2.14"), ("nvidia_cuda_nvcc", "13.0.88")):
            write(self.site / f"{dist}-{version}.dist-info" / "METADATA",
                  f"Metadata-Version: 2.1\nName: {dist.replace('_', '-')}\nVersion: {version}\n")

    def tearDown(self):
        self._tmp.cleanup()

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": f"{self.fakes}:{self.tools}",
            "HOME": str(self.root),
            "PYTHONPATH": str(self.site),
            "FAKE_LOG": str(self.log),
            "FAKE_CNNBENCH_SRC": str(self.cnnbench_src),
            "OUT": str(self.out),
            "SUITE_WORK_DIR": str(self.work),
            "SUITE_PYTHON": PY,
            "SUITE_TORCH_PYTHON": str(self.torch_py),
            "SUITE_CUDA_ROOTS": "",
            # A small plan: ResNet-50 fp16 with two peers, one zoo model.
            "SUITE_PRECISIONS": "",
            "SUITE_PEERS": "eager cuda-graph",
            "SUITE_ZOO": "trivial:64",
        }
        env.update(extra)
        return env

    def suite(self, *args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SUITE), *args], env=self.env(**extra), text=True,
                              capture_output=True, timeout=120)

    def calls(self, name: str) -> list[list[str]]:
        path = self.log / f"{name}.jsonl"
        if not path.exists():
            return []
        calls = [json.loads(line) for line in path.read_text().splitlines()]
        return [c for c in calls if c != ["--version"]]  # the suite's environment log

    def results(self) -> list[dict]:
        return [json.loads(line) for line in (self.out / "results.jsonl").read_text().splitlines()]

    def summary(self) -> str:
        return (self.out / "summary.txt").read_text()

    # --- build: never without CUDA

    def test_first_lines_name_nvcc_and_the_library_versions(self):
        p = self.suite("build", "tests")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn(f"nvcc: {self.wheel_nvcc} (Cuda compilation tools, release 13.0, V13.0.88; "
                      "found via the wheel nvidia-cuda-nvcc 13.0.88)", lines[1])
        self.assertIn("cuDNN: 9.13.0 (wheel nvidia-cudnn-cu13 9.13.0.50; lib ", lines[2])
        self.assertIn("cuBLAS: 13.0.2 (wheel nvidia-cublas 13.0.2.14; lib ", lines[3])
        self.assertIn("NCCL: 2.27.7 (wheel nvidia-nccl-cu13 2.27.7; lib ", lines[4])
        self.assertIn("GPU: NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB", lines[5])

    def test_configure_asks_for_cuda_with_the_nvcc_found(self):
        p = self.suite("build", "tests")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        configure = self.calls("cmake")[0]
        self.assertIn("-DCNNBENCH_CUDA=ON", configure)
        self.assertIn(f"-DCMAKE_CUDA_COMPILER={self.wheel_nvcc}", configure)
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=90", configure)
        self.assertIn("-DCNNBENCH_BUILD_TESTS=ON", configure)
        self.assertIn(f"-DCUDNN_ROOT={self.work}/shim/cudnn", configure)
        self.assertTrue((self.work / "shim" / "cudnn" / "lib" / "libcudnn.so").is_symlink())
        # cnnbench and the programs ctest labels gpu; not the cpu one.
        build = self.calls("cmake")[1]
        self.assertEqual(build[build.index("--target") + 1:build.index("--")],
                         ["cnnbench", "cuda_conv_test", "kernels_cuda_fc_test"])
        ctest = [c for c in self.calls("ctest") if "--show-only=json-v1" not in c][0]
        self.assertEqual(ctest[ctest.index("-L") + 1], "gpu")
        self.assertIn("--no-tests=error", ctest)
        self.assertIn("tests                 ok", self.summary())
        self.assertIn("1 passed, 1 skipped of 2", self.summary())

    def test_a_build_without_tests_needs_no_test_programs(self):
        p = self.suite("build")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        configure, build = self.calls("cmake")
        self.assertIn("-DCNNBENCH_BUILD_TESTS=OFF", configure)
        self.assertEqual(build[build.index("--target") + 1:build.index("--")], ["cnnbench"])

    def test_nvcc_on_path_comes_before_the_wheel(self):
        write(self.fakes / "nvcc", FAKE_NVCC, 0o755)
        p = self.suite("build")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(f"nvcc: {self.fakes}/nvcc (Cuda compilation tools, release 13.0, "
                      "V13.0.88; found via PATH)", p.stdout)
        self.assertIn(f"-DCMAKE_CUDA_COMPILER={self.fakes}/nvcc", self.calls("cmake")[0])

    def test_cudacxx_names_the_compiler(self):
        p = self.suite("build", CUDACXX=str(self.root / "no-such-nvcc"))
        self.assertEqual(p.returncode, 1)
        self.assertIn(f"CUDACXX='{self.root}/no-such-nvcc' is not an executable file", p.stdout)
        self.assertEqual(self.calls("cmake"), [])

    def test_no_nvcc_fails_the_build_and_never_configures(self):
        self.wheel_nvcc.unlink()
        p = self.suite("build", "tests")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("nvcc: NOT FOUND: no nvcc (looked at $CUDACXX, PATH, $CUDA_HOME/bin and "
                      "the nvidia-cuda-nvcc wheel)", p.stdout)
        self.assertEqual(self.calls("cmake"), [])
        self.assertRegex(self.summary(), r"build +failed +0 s  no nvcc \(looked at")
        # The tests stage still runs on its own and says why it cannot.
        self.assertRegex(self.summary(), r"tests +not run +0 s  no configured build in ")
        self.assertEqual([r["status"] for r in self.results()],
                         ["failed: no nvcc", "not run: no build"])

    def test_a_configure_that_drops_cuda_fails_the_build(self):
        p = self.suite("build", FAKE_CUDA_RESULT="OFF")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(len(self.calls("cmake")), 1)  # configure only, no --build
        self.assertIn("configure did not keep CNNBENCH_CUDA=ON", self.summary())
        self.assertEqual(self.results()[0]["status"], "failed: CUDA off")

    # --- bench and compare

    def build_first(self):
        p = self.suite("build")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_benchmarks_end_in_one_table_with_ratios(self):
        self.build_first()
        p = self.suite("bench", "compare")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        summary = self.summary()
        self.assertTrue(p.stdout.rstrip().endswith(summary.rstrip()))
        r50 = next(l for l in summary.splitlines() if l.startswith("resnet50"))
        self.assertIn("cnnbench", r50)
        self.assertIn("1008.0", r50)  # 1000 + len("resnet50")
        self.assertIn("10.0", r50)  # the Memory line, in GiB
        eager = next(l for l in summary.splitlines() if "pytorch eager" in l)
        self.assertIn("805.0", eager)
        self.assertIn(f"{1008.0 / 805.0:.2f}", eager)
        self.assertIn("12.5", eager)
        self.assertIn("pytorch cuda-graph", summary)
        self.assertIn("trivial", summary)
        self.assertIn("resnet50 fp16 batch 256: cnnbench 1008.0 images/sec", summary)
        peer_calls = [c for c in self.calls("torch-python") if c[0] != "-c"]
        self.assertEqual([c[0] for c in peer_calls], [str(REPO / "tools" / "compare" /
                                                          "pytorch_baseline.py")] * 3)
        self.assertIn("--mode=cuda-graph", peer_calls[1])
        cnnbench = self.calls("cnnbench")
        self.assertIn(f"--plan_cache={self.work}/plans.json", cnnbench[-1])
        self.assertIn(f"--result_json={self.work}/run.json", cnnbench[-1])
        self.assertIn("--device=gpu", cnnbench[-1])
        self.assertNotIn("--verify", cnnbench[1])  # built without oneDNN: no CPU reference
        # From the result JSON: TFLOP/s = 1008 x 3 x 4 GFLOPs, the start time, the notes.
        self.assertRegex(r50, r"1008\.0 +— +12 +10\.0 +12  ")
        self.assertIn("cnnbench note: FC bias gradient by the DEFAULT epilogue", summary)
        kinds = [(r.get("runner"), r.get("mode"), r["status"]) for r in self.results()]
        self.assertEqual(kinds, [("cnnbench", "-", "ok"), ("pytorch", "eager", "ok"),
                                 ("pytorch", "cuda-graph", "ok"), ("cnnbench", "-", "ok"),
                                 ("pytorch", "eager", "ok")])
        for name in ("suite.log", "bench.log", "compare.log", "results.jsonl", "summary.txt"):
            self.assertTrue((self.out / name).is_file(), name)
        self.assertLessEqual(len(list(self.out.iterdir())), 8)

    def test_verify_comes_before_resnet50_runs_when_built_with_onednn(self):
        write(self.work / "prefix" / "usr" / "lib" / "x86_64-linux-gnu" / "cmake" / "dnnl" /
              "dnnl-config.cmake", "")
        self.build_first()
        self.assertIn("-DCNNBENCH_ONEDNN=ON", self.calls("cmake")[0])
        p = self.suite("bench")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        runs = [c for c in self.calls("cnnbench") if "--help" not in c]
        self.assertEqual([("--verify" in c, c[1]) for c in runs],
                         [(True, "--model=resnet50"), (False, "--model=trivial")])
        self.assertIn("verify passed", self.summary())
        self.suite("bench", SUITE_VERIFY="0")
        runs = [c for c in self.calls("cnnbench") if "--help" not in c]
        self.assertEqual(len(runs), 4)
        self.assertFalse(any("--verify" in c for c in runs[2:]))

    def test_a_failed_peer_is_reported_and_the_rest_runs(self):
        self.build_first()
        p = self.suite("bench", "compare", FAKE_PEER_FAIL="cuda-graph")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        row = next(l for l in self.summary().splitlines() if "pytorch cuda-graph" in l)
        self.assertIn("failed (exit 1): RuntimeError: capture failed", row)
        self.assertIn("trivial", self.summary())

    def test_what_does_not_fit_is_skipped_and_listed(self):
        self.build_first()
        # 40 s for bench: each cnnbench run needs 45 (30 for the zoo's).
        p = self.suite("bench", "compare", SUITE_BENCH_S="40")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("skipped for time (bench has 40 s left, this needs 45 s)", p.stdout)
        self.assertIn("skipped for time: cnnbench resnet50 fp16 256", self.summary())
        self.assertEqual(len(self.calls("cnnbench")) - 1, 1)  # --help, then the zoo run
        self.assertIn("bench                 ok", self.summary())

    def test_a_failed_build_never_benches_an_older_binary(self):
        self.build_first()
        p = self.suite("build", "bench", FAKE_BUILD_RC="1", FAKE_STALE="1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("not run: cnnbench did not build in this call (see build.log)", p.stdout)
        self.assertEqual([c for c in self.calls("cnnbench") if "--help" not in c], [])
        self.assertIn("cnnbench did not build: the one in", self.summary())

    def test_a_stage_without_a_binary_says_so(self):
        p = self.suite("bench")
        self.assertEqual(p.returncode, 1)
        self.assertIn("not run: no binary", self.summary())

    def test_resume_leaves_out_what_an_earlier_call_measured(self):
        self.build_first()
        self.assertEqual(self.suite("bench", "compare", SUITE_PEERS="eager",
                                    SUITE_ZOO="").returncode, 0)
        earlier = self.root / "earlier.jsonl"
        shutil.copy(self.out / "results.jsonl", earlier)
        cnnbench_before = len(self.calls("cnnbench"))
        p = self.suite("--resume", str(earlier), "bench", "compare", SUITE_ZOO="")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("cnnbench - resnet50 fp16 256: measured in the earlier call", p.stdout)
        self.assertEqual(len(self.calls("cnnbench")), cnnbench_before + 1)  # only --help
        peer_modes = [c[-1] for c in self.calls("torch-python") if c[0] != "-c"]
        self.assertEqual(peer_modes, ["--mode=eager", "--mode=cuda-graph"])
        graph = next(l for l in self.summary().splitlines() if "pytorch cuda-graph" in l)
        self.assertIn(f"{1008.0 / 810.0:.2f}", graph)  # against the earlier cnnbench run

    def test_only_runs_the_matching_runs(self):
        self.build_first()
        p = self.suite("--only", "cuda-graph", "bench", "compare")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual([(r.get("runner"), r.get("mode")) for r in self.results()],
                         [("pytorch", "cuda-graph")])

    def test_dry_run_runs_nothing(self):
        p = self.suite("--dry-run")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("dry run, would run (limit 150 s): cmake -S", p.stdout)
        self.assertIn("-DCNNBENCH_CUDA=ON", p.stdout)
        self.assertEqual(self.calls("cmake"), [])
        self.assertEqual([c for c in self.calls("torch-python") if c[0] != "-c"], [])
        self.assertIn("planned (dry run)", self.summary())

    def test_the_plan_measures_every_precision_before_the_slow_compile_modes(self):
        env = self.env(SUITE_PRECISIONS="bf16 fp32", SUITE_ZOO="vgg16:128")
        del env["SUITE_PEERS"]  # the default: all five modes
        p = subprocess.run(["bash", str(SUITE), "--dry-run", "bench", "compare"], env=env,
                           text=True, capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        order = [" ".join(str(r.get(k)) for k in ("runner", "mode", "model", "precision"))
                 for r in self.results()]
        self.assertEqual(order, [
            "cnnbench - resnet50 fp16", "pytorch eager resnet50 fp16",
            "pytorch cuda-graph resnet50 fp16", "pytorch compile resnet50 fp16",
            "cnnbench - resnet50 bf16", "pytorch eager resnet50 bf16",
            "cnnbench - resnet50 fp32", "pytorch eager resnet50 fp32",
            "pytorch compile-reduce-overhead resnet50 fp16",
            "pytorch compile-max-autotune resnet50 fp16",
            "cnnbench - vgg16 fp16", "pytorch eager vgg16 fp16"])
        self.assertIn("--num_batches=20 --num_warmup_batches=5", p.stdout)  # fp32: fewer steps

    def test_sigterm_ends_the_run_and_still_prints_the_table(self):
        self.build_first()
        proc = subprocess.Popen(["bash", str(SUITE), "bench"], text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env(FAKE_CNNBENCH_SLEEP="60"))
        marker = self.log / "cnnbench.started"
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertTrue(marker.exists(), "the fake cnnbench never started")
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=30)
        self.assertLess(time.monotonic() - start, 20)
        self.assertEqual(proc.returncode, 143)
        self.assertIn("suite stopped early: stopped (SIGTERM)", stdout)
        self.assertIn("suite stopped early: stopped (SIGTERM)", self.summary())

    # --- bad arguments: status 2, the argument named

    def test_bad_arguments(self):
        cases = [
            (["bogus"], "unknown argument 'bogus'"),
            (["--resume"], "--resume needs a value"),
            (["--resume", str(self.root / "none.jsonl")], "no such readable file"),
            (["--only", "("], "not a valid extended regular expression"),
        ]
        for args, message in cases:
            p = self.suite(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)

    def test_bad_variables(self):
        cases = [
            ({"SUITE_BUDGET_S": "ten"}, "SUITE_BUDGET_S='ten' is not a whole number >= 30"),
            ({"SUITE_BUDGET_S": "10"}, "SUITE_BUDGET_S='10' is not a whole number >= 30"),
            ({"SUITE_PEERS": "eager jit"}, "SUITE_PEERS: 'jit' is not one of: eager cuda-graph"),
            ({"SUITE_ZOO": "vgg16"}, "SUITE_ZOO: 'vgg16' is not model:batch"),
            ({"SUITE_ZOO": "lenet:64"}, "SUITE_ZOO: 'lenet' is not one of"),
            ({"SUITE_PRECISIONS": "fp8"}, "SUITE_PRECISIONS: 'fp8' is not one of"),
            ({"SUITE_MICRO": "yes"}, "SUITE_MICRO='yes' is not 0 or 1"),
            ({"SUITE_VERIFY": "no"}, "SUITE_VERIFY='no' is not 0 or 1"),
        ]
        for env, message in cases:
            p = self.suite("--dry-run", **env)
            self.assertEqual(p.returncode, 2, env)
            self.assertIn(message, p.stderr)
        self.assertFalse((self.out / "summary.txt").exists())

    def test_help(self):
        p = self.suite("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: bash tools/gpu_suite.sh [OPTIONS] [STAGE ...]", p.stdout)


class FetchGpuDeps(unittest.TestCase):
    """Only its argument handling: downloading needs the network."""

    def run_fetch(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(FETCH), *args], text=True, capture_output=True,
                              timeout=60)

    def test_bad_arguments_exit_2(self):
        for args, message in ((["--dest"], "--dest needs a folder"),
                              (["--bogus"], "unknown argument '--bogus'")):
            p = self.run_fetch(*args)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(message, p.stderr)

    def test_help(self):
        p = self.run_fetch("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: tools/fetch_gpu_deps.sh [--with-onednn] [--dest DIR]", p.stdout)


if __name__ == "__main__":
    unittest.main()
