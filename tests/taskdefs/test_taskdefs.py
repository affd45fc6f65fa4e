"""Renders every ECS task definition template with taskdefs/render.py and validates the
result offline: against the RegisterTaskDefinition input shape of botocore's service
model (the check the AWS CLI makes before sending), then what that validator skips
(enum values, name patterns, references) and what cnnbench needs (GPU counts that
agree with the command, NCCL's shared memory, limits, logs)."""
from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import tempfile
import unittest

import support

botocore_session = support.require_module("botocore.session")
botocore_validate = support.require_module("botocore.validate")

RENDER = support.REPO / "taskdefs" / "render.py"
ACCOUNT, REGION, LOG_GROUP = "123456789012", "eu-west-1", "/ecs/cnnbench-test"
EXPECTED = {"gpu-1", "gpu-4", "gpu-8", "cpu", "mpi-4", "devices"}
# AWS Batch job definitions, rendered too; test_batch_mnp.py checks them.
BATCH = {"batch-mnp"}
# ECS: up to 255 letters, digits, hyphens and underscores.
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
POSITIVE_INT_RE = re.compile(r"^[1-9][0-9]*$")
GPU_DEVICE_RE = re.compile(r"^/dev/nvidia[0-9]+$")


def render(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RENDER), *args], text=True,
                          capture_output=True, timeout=60)


def enum_errors(value, shape, where: str) -> list[str]:
    """Every string of value whose shape has an enum and is not one of it."""
    errors = []
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in value.items():
            if name in shape.members:
                errors += enum_errors(member, shape.members[name], f"{where}.{name}")
    elif shape.type_name == "list" and isinstance(value, list):
        for i, member in enumerate(value):
            errors += enum_errors(member, shape.member, f"{where}[{i}]")
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, member in value.items():
            errors += enum_errors(key, shape.key, f"{where} key")
            errors += enum_errors(member, shape.value, f"{where}[{key}]")
    elif shape.type_name == "string" and getattr(shape, "enum", None):
        if value not in shape.enum:
            errors.append(f"{where}: '{value}' is not one of {shape.enum}")
    return errors


def command_gpus(command: list[str]) -> tuple[int | None, int | None]:
    """(mpirun ranks, --num_gpus) of a container command; None where not given."""
    ranks = None
    args = command
    if command and command[0] == "mpirun":
        for i, arg in enumerate(command):
            if arg in ("-np", "-n", "--np") and i + 1 < len(command):
                ranks = int(command[i + 1])
        args = command[command.index("cnnbench") + 1:] if "cnnbench" in command else []
    num_gpus = None
    for i, arg in enumerate(args):
        if arg.startswith("--num_gpus="):
            num_gpus = int(arg.split("=", 1)[1])
        elif arg == "--num_gpus" and i + 1 < len(args):
            num_gpus = int(args[i + 1])
    return ranks, num_gpus


class RenderedTaskDefinitions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        out = pathlib.Path(cls._tmp.name)
        run = render("--account", ACCOUNT, "--region", REGION, "--log-group", LOG_GROUP,
                     "--execution-role", "cnnbench-exec", "--output-dir", str(out))
        if run.returncode != 0:
            raise AssertionError(f"render.py failed: {run.stderr}")
        cls.printed = run.stdout.split()
        cls.taskdefs = {p.stem.removeprefix("cnnbench-"): json.loads(p.read_text())
                        for p in sorted(out.glob("*.json"))
                        if p.stem.removeprefix("cnnbench-") not in BATCH}
        model = botocore_session.get_session().get_service_model("ecs")
        cls.shape = model.operation_model("RegisterTaskDefinition").input_shape

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def container(self, name: str) -> dict:
        return self.taskdefs[name]["containerDefinitions"][0]

    def gpu_requirement(self, name: str) -> str | None:
        found = [r["value"] for r in self.container(name).get("resourceRequirements", [])
                 if r["type"] == "GPU"]
        return found[0] if found else None

    def test_every_template_is_rendered_and_printed(self):
        self.assertEqual(set(self.taskdefs), EXPECTED)
        self.assertEqual(sorted(pathlib.Path(p).name for p in self.printed),
                         sorted(f"cnnbench-{n}.json" for n in EXPECTED | BATCH))

    def test_register_task_definition_input_shape(self):
        validator = botocore_validate.ParamValidator()
        for name, taskdef in self.taskdefs.items():
            with self.subTest(name):
                report = validator.validate(taskdef, self.shape)
                self.assertFalse(report.has_errors(), report.generate_report())

    def test_enum_values(self):
        for name, taskdef in self.taskdefs.items():
            with self.subTest(name):
                self.assertEqual(enum_errors(taskdef, self.shape, name), [])

    def test_placeholders_filled(self):
        for name, taskdef in self.taskdefs.items():
            with self.subTest(name):
                self.assertNotIn("{{", json.dumps(taskdef))
                self.assertEqual(self.container(name)["image"],
                                 f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/cnnbench:latest")
                self.assertEqual(taskdef["executionRoleArn"],
                                 f"arn:aws:iam::{ACCOUNT}:role/cnnbench-exec")

    def test_family_container_and_placement(self):
        for name, taskdef in self.taskdefs.items():
            with self.subTest(name):
                self.assertEqual(taskdef["family"], f"cnnbench-{name}")
                self.assertRegex(taskdef["family"], NAME_RE)
                self.assertEqual(taskdef["requiresCompatibilities"], ["EC2"])
                # host: NCCL and MPI see the instance's own interfaces, no per-task ENI.
                self.assertEqual(taskdef["networkMode"], "host")
                self.assertEqual(len(taskdef["containerDefinitions"]), 1)
                container = self.container(name)
                self.assertRegex(container["name"], NAME_RE)
                self.assertTrue(container["image"])
                self.assertTrue(container["essential"])
                self.assertGreater(container.get("memoryReservation", 0), 0)
                self.assertTrue(container["linuxParameters"]["initProcessEnabled"])

    def test_gpu_count_agrees_with_the_command(self):
        for name in EXPECTED - {"cpu", "devices"}:
            with self.subTest(name):
                value = self.gpu_requirement(name)
                self.assertIsNotNone(value, "a GPU task needs resourceRequirements GPU")
                self.assertRegex(value, POSITIVE_INT_RE)
                gpus = int(value)
                ranks, num_gpus = command_gpus(self.container(name)["command"])
                if ranks is not None:
                    # One rank per GPU: each takes the GPU of its local rank.
                    self.assertEqual(ranks, gpus, "mpirun -np must equal the GPUs reserved")
                    self.assertIn(num_gpus, (None, 1))
                else:
                    self.assertEqual(num_gpus, gpus, "--num_gpus must equal the GPUs reserved")
                if name.startswith("gpu-"):
                    self.assertEqual(gpus, int(name.split("-")[1]))

    def test_cpu_task_is_placed_on_cpu_instances(self):
        # cluster.yml's CPU launch template sets this attribute; the GPU ones do not.
        self.assertEqual(self.taskdefs["cpu"]["placementConstraints"], [
            {"type": "memberOf", "expression": "attribute:cnnbench.capacity == cpu"}])

    def test_gpu_tasks_reserve_host_cpu_per_gpu(self):
        # 2 vCPU per GPU: fits 1-GPU xlarge instances (4 vCPU) and 8-GPU ones (64+ vCPU).
        for name in ("gpu-1", "gpu-4", "gpu-8", "mpi-4"):
            with self.subTest(name):
                container = self.container(name)
                gpus = int(next(r["value"] for r in container["resourceRequirements"]
                                if r["type"] == "GPU"))
                self.assertEqual(container["cpu"], 2048 * gpus)

    def test_cpu_task(self):
        container = self.container("cpu")
        self.assertIsNone(self.gpu_requirement("cpu"))
        self.assertIn("--device=cpu", container["command"])
        self.assertGreater(container.get("cpu", 0), 0, "reserve the CPUs it benchmarks")
        self.assertNotIn("devices", container["linuxParameters"])

    def test_devices_task_mounts_gpus_and_driver(self):
        taskdef = self.taskdefs["devices"]
        container = self.container("devices")
        self.assertIsNone(self.gpu_requirement("devices"),
                          "devices are mounted by hand, not reserved through the NVIDIA runtime")
        devices = container["linuxParameters"]["devices"]
        paths = [d["hostPath"] for d in devices]
        for required in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"):
            self.assertIn(required, paths)
        gpus = [p for p in paths if GPU_DEVICE_RE.match(p)]
        self.assertGreaterEqual(len(gpus), 1)
        for device in devices:
            self.assertEqual(device["containerPath"], device["hostPath"])
            self.assertTrue({"read", "write"} <= set(device["permissions"]))
        _, num_gpus = command_gpus(container["command"])
        self.assertIn(num_gpus, (None, len(gpus)))

        volumes = {v["name"]: v for v in taskdef["volumes"]}
        mounts = container["mountPoints"]
        self.assertEqual(len(mounts), 1)
        mount = mounts[0]
        self.assertTrue(mount["readOnly"], "the host's driver must not be writable")
        self.assertTrue(volumes[mount["sourceVolume"]]["host"]["sourcePath"].startswith("/"))
        env = {e["name"]: e["value"] for e in container["environment"]}
        self.assertIn(f"{mount['containerPath']}/lib64", env["LD_LIBRARY_PATH"].split(":"))
        # void: an NVIDIA runtime on the host, if any, must not add GPUs of its own.
        self.assertEqual(env["NVIDIA_VISIBLE_DEVICES"], "void")

    def test_volumes_referenced_exist(self):
        for name, taskdef in self.taskdefs.items():
            volumes = {v["name"] for v in taskdef.get("volumes", [])}
            for mount in self.container(name).get("mountPoints", []):
                with self.subTest(name):
                    self.assertIn(mount["sourceVolume"], volumes)

    def test_shared_memory_and_limits_for_nccl(self):
        for name in EXPECTED:
            with self.subTest(name):
                container = self.container(name)
                shm = container["linuxParameters"]["sharedMemorySize"]
                gpus = int(self.gpu_requirement(name) or 1)
                if gpus > 1:
                    # NCCL's shared-memory transport takes ~10 MB per channel, peer and
                    # direction; 1 GiB per GPU leaves room for every channel.
                    self.assertGreaterEqual(shm, 1024 * gpus)
                self.assertGreaterEqual(shm, 256)
                ulimits = {u["name"]: u for u in container["ulimits"]}
                self.assertEqual(len(ulimits), len(container["ulimits"]), "duplicate ulimit")
                self.assertEqual((ulimits["memlock"]["softLimit"], ulimits["memlock"]["hardLimit"]),
                                 (-1, -1))
                self.assertEqual((ulimits["stack"]["softLimit"], ulimits["stack"]["hardLimit"]),
                                 (67108864, 67108864))

    def test_logs_go_to_cloudwatch_with_emf(self):
        for name in EXPECTED:
            with self.subTest(name):
                container = self.container(name)
                logs = container["logConfiguration"]
                self.assertEqual(logs["logDriver"], "awslogs")
                self.assertEqual(logs["options"], {
                    "awslogs-group": LOG_GROUP, "awslogs-region": REGION,
                    "awslogs-stream-prefix": name, "mode": "blocking"})
                # Explicit rather than the program's ECS detection: the dashboard depends on it.
                self.assertIn("--log_format=both", container["command"])


class RenderCommandLine(unittest.TestCase):
    def test_without_execution_role_none_is_set(self):
        with tempfile.TemporaryDirectory() as out:
            run = render("--account", ACCOUNT, "--region", REGION, "--output-dir", out, "gpu-1")
            self.assertEqual(run.returncode, 0, run.stderr)
            taskdef = json.loads((pathlib.Path(out) / "cnnbench-gpu-1.json").read_text())
            self.assertNotIn("executionRoleArn", taskdef)
            self.assertEqual(list(pathlib.Path(out).iterdir()),
                             [pathlib.Path(out) / "cnnbench-gpu-1.json"])

    def test_create_log_group_is_opt_in(self):
        with tempfile.TemporaryDirectory() as out:
            run = render("--account", ACCOUNT, "--region", REGION, "--output-dir", out,
                         "--create-log-group", "gpu-1", "cpu")
            self.assertEqual(run.returncode, 0, run.stderr)
            for family in ("cnnbench-gpu-1", "cnnbench-cpu"):
                taskdef = json.loads((pathlib.Path(out) / f"{family}.json").read_text())
                options = taskdef["containerDefinitions"][0]["logConfiguration"]["options"]
                self.assertEqual(options["awslogs-create-group"], "true")
                self.assertEqual(options["mode"], "blocking")

    def test_china_partition_and_explicit_image(self):
        with tempfile.TemporaryDirectory() as out:
            run = render("--account", ACCOUNT, "--region", "cn-north-1", "--output-dir", out,
                         "--execution-role", "exec", "--image", "registry.example/cnnbench:1", "cpu")
            self.assertEqual(run.returncode, 0, run.stderr)
            taskdef = json.loads((pathlib.Path(out) / "cnnbench-cpu.json").read_text())
            self.assertEqual(taskdef["executionRoleArn"], f"arn:aws-cn:iam::{ACCOUNT}:role/exec")
            self.assertEqual(taskdef["containerDefinitions"][0]["image"],
                             "registry.example/cnnbench:1")

    def test_bad_values_are_errors_that_name_them(self):
        cases = {
            "--account": (["--account", "1234", "--region", REGION], "1234"),
            "--region": (["--account", ACCOUNT, "--region", "useast1"], "useast1"),
            "--log-group": (["--account", ACCOUNT, "--region", REGION, "--log-group", "a b"], "a b"),
            "--image": (["--account", ACCOUNT, "--region", REGION, "--image", "x y"], "x y"),
            "template": (["--account", ACCOUNT, "--region", REGION, "gpu-3"], "gpu-3"),
        }
        for what, (args, value) in cases.items():
            with self.subTest(what), tempfile.TemporaryDirectory() as out:
                run = render(*args, "--output-dir", f"{out}/rendered")
                self.assertEqual(run.returncode, 2)
                self.assertIn(value, run.stderr)
                self.assertEqual(run.stdout, "")
                self.assertFalse(pathlib.Path(f"{out}/rendered").exists(), "nothing written")


if __name__ == "__main__":
    unittest.main()
