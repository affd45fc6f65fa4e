"""taskdefs/batch-mnp.json, the AWS Batch multi-node parallel job definition, rendered
with taskdefs/render.py and validated offline: against the RegisterJobDefinition input
shape of botocore's service model for `batch` (the check the AWS CLI makes before
sending), the enum values that validator skips, and what AWS Batch and cnnbench need:
node ranges that cover every node once, GPUs, vCPUs and memory on every node, NCCL's
shared memory and limits, EFA devices, the ssh key as a secret through an execution
role, a command the entrypoint hands to cnnbench-mnp, logs in CloudWatch."""
from __future__ import annotations

import importlib.util
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
from test_taskdefs import enum_errors  # noqa: E402  (after the skip check of the import above)

RENDER = support.REPO / "taskdefs" / "render.py"
ACCOUNT, REGION, LOG_GROUP = "123456789012", "eu-west-1", "/ecs/cnnbench-test"
# AWS Batch: up to 128 letters, digits, hyphens and underscores.
NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
UVERBS_RE = re.compile(r"^/dev/infiniband/uverbs([0-9]+)$")


def render(out: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RENDER), "--account", ACCOUNT, "--region", REGION,
                           "--log-group", LOG_GROUP, "--output-dir", str(out), *args],
                          text=True, capture_output=True, timeout=60)


def node_numbers(target: str, num_nodes: int) -> range:
    """The nodes a targetNodes range ("0:", "1:3", ":2", "4") covers."""
    if ":" not in target:
        return range(int(target), int(target) + 1)
    start, end = target.split(":")
    return range(int(start or 0), int(end) + 1 if end else num_nodes)


class BatchJobDefinition(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.out = pathlib.Path(cls._tmp.name)
        run = render(cls.out / "default", "--execution-role", "cnnbench-exec", "batch-mnp")
        if run.returncode != 0:
            raise AssertionError(f"render.py failed: {run.stderr}")
        cls.printed = run.stdout.split()
        cls.job = json.loads((cls.out / "default" / "cnnbench-batch-mnp.json").read_text())
        model = botocore_session.get_session().get_service_model("batch")
        cls.shape = model.operation_model("RegisterJobDefinition").input_shape

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def containers(self, job: dict | None = None) -> list[dict]:
        job = job or self.job
        return [r["container"] for r in job["nodeProperties"]["nodeRangeProperties"]]

    @staticmethod
    def requirements(container: dict) -> dict[str, str]:
        found = {}
        for r in container.get("resourceRequirements", []):
            assert r["type"] not in found, f"{r['type']} given twice"
            found[r["type"]] = r["value"]
        return found

    def validate(self, job: dict) -> None:
        report = botocore_validate.ParamValidator().validate(job, self.shape)
        self.assertFalse(report.has_errors(), report.generate_report())
        self.assertEqual(enum_errors(job, self.shape, "job"), [])

    def test_register_job_definition_input_shape(self):
        self.assertEqual(self.printed, [str(self.out / "default" / "cnnbench-batch-mnp.json")])
        self.validate(self.job)

    def test_multinode_on_ec2(self):
        job = self.job
        self.assertRegex(job["jobDefinitionName"], NAME_RE)
        self.assertEqual(job["type"], "multinode")
        self.assertEqual(job["platformCapabilities"], ["EC2"])
        self.assertNotIn("containerProperties", job, "a multi-node job has node ranges instead")
        # A failed benchmark is looked at, not retried; a forgotten one ends.
        self.assertEqual(job["retryStrategy"]["attempts"], 1)
        self.assertGreaterEqual(job["timeout"]["attemptDurationSeconds"], 60)

    def test_node_ranges_cover_every_node_once(self):
        nodes = self.job["nodeProperties"]
        self.assertGreaterEqual(nodes["numNodes"], 2)
        self.assertIn(nodes["mainNode"], range(nodes["numNodes"]))
        # Open-ended ranges, so that --node-overrides numNodes=N at submit time fits.
        covered = []
        for node_range in nodes["nodeRangeProperties"]:
            self.assertRegex(node_range["targetNodes"], r"^[0-9]*:[0-9]*$|^[0-9]+$")
            covered += node_numbers(node_range["targetNodes"], nodes["numNodes"])
        self.assertEqual(sorted(covered), list(range(nodes["numNodes"])))
        self.assertTrue(nodes["nodeRangeProperties"][-1]["targetNodes"].endswith(":"))

    def test_placeholders_filled_and_image(self):
        text = json.dumps(self.job)
        self.assertNotIn("{{", text)
        for container in self.containers():
            self.assertEqual(container["image"], f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/cnnbench:latest")

    def test_command_is_cnnbench_flags_for_the_launcher(self):
        for container in self.containers():
            command = container["command"]
            # The entrypoint hands flags to cnnbench-mnp inside an MNP job.
            self.assertTrue(command and all(a.startswith("--") for a in command), command)
            self.assertIn("--log_format=both", command)
            self.assertFalse(any(a.startswith("--num_gpus") for a in command),
                             "one rank per GPU: each rank trains on one")
            self.assertFalse(any(a.startswith("--scaling_sweep") for a in command))

    def test_gpus_cpus_and_memory_on_every_node(self):
        for container in self.containers():
            req = self.requirements(container)
            self.assertEqual(set(req), {"GPU", "VCPU", "MEMORY"})
            for value in req.values():
                self.assertRegex(value, r"^[1-9][0-9]*$")
            self.assertNotIn("vcpus", container, "resourceRequirements, not the deprecated fields")
            self.assertNotIn("memory", container)

    def test_shared_memory_limits_and_init(self):
        for container in self.containers():
            gpus = int(self.requirements(container)["GPU"])
            linux = container["linuxParameters"]
            self.assertGreaterEqual(linux["sharedMemorySize"], 1024 * gpus)
            self.assertTrue(linux["initProcessEnabled"], "signals reach the launcher; children reaped")
            ulimits = {u["name"]: (u["softLimit"], u["hardLimit"]) for u in container["ulimits"]}
            self.assertEqual(len(ulimits), len(container["ulimits"]))
            self.assertEqual(ulimits["memlock"], (-1, -1), "NCCL and EFA pin memory")
            self.assertEqual(ulimits["stack"], (67108864, 67108864))

    def test_efa_devices(self):
        for container in self.containers():
            devices = container["linuxParameters"]["devices"]
            numbers = []
            for device in devices:
                match = UVERBS_RE.match(device["hostPath"])
                self.assertIsNotNone(match, device)
                numbers.append(int(match.group(1)))
                self.assertEqual(device["containerPath"], device["hostPath"])
                self.assertTrue({"READ", "WRITE"} <= set(device["permissions"]))
            self.assertEqual(numbers, list(range(len(devices))), "uverbs0 .. uverbsN-1, each once")

    def test_ssh_key_is_a_secret_read_by_the_execution_role(self):
        for container in self.containers():
            secrets = {s["name"]: s["valueFrom"] for s in container["secrets"]}
            self.assertEqual(secrets, {"CNNBENCH_MNP_SSH_KEY":
                                       f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/cnnbench/mnp-ssh-key"})
            self.assertEqual(container["executionRoleArn"], f"arn:aws:iam::{ACCOUNT}:role/cnnbench-exec")
            names = [e["name"] for e in container.get("environment", [])]
            self.assertNotIn("CNNBENCH_MNP_SSH_KEY", names, "never as plain environment")
            # AWS Batch reserves the AWS_BATCH prefix (it sets the MNP variables itself).
            self.assertFalse([n for n in names if n.startswith("AWS_BATCH")])
            self.assertEqual(len(names), len(set(names)))

    def test_nccl_avoids_the_task_bridge(self):
        # MNP containers use awsvpc: besides the ENI, ecs-eth0 (169.254.172.0/22) reaches
        # only the ECS agent, and lo reaches no other node.
        for container in self.containers():
            env = {e["name"]: e["value"] for e in container["environment"]}
            ifname = env["NCCL_SOCKET_IFNAME"]
            self.assertTrue(ifname.startswith("^"))
            self.assertTrue({"lo", "docker", "ecs"} <= set(ifname[1:].split(",")))
            self.assertRegex(env["CNNBENCH_MNP_WAIT_S"], r"^[1-9][0-9]*$")

    def test_logs_go_to_cloudwatch(self):
        for container in self.containers():
            logs = container["logConfiguration"]
            self.assertEqual(logs["logDriver"], "awslogs")
            self.assertEqual(logs["options"], {
                "awslogs-group": LOG_GROUP, "awslogs-region": REGION,
                "awslogs-stream-prefix": "batch-mnp", "awslogs-create-group": "true"})


class ReadmeAgreesWithTheFiles(unittest.TestCase):
    """taskdefs/README.md section 7 names stack resources, the job definition and the
    key's parameter: they must exist as named."""

    @classmethod
    def setUpClass(cls):
        text = (support.REPO / "taskdefs" / "README.md").read_text()
        start = text.index("## 7. Across nodes")
        cls.section = text[start:text.index("\n## ", start + 1)]

    def test_stack_resources_exist(self):
        cluster = (support.REPO / "taskdefs" / "cluster.yml").read_text()
        resources = set(re.findall(r"^  ([A-Za-z0-9]+):\n    Type: ", cluster, re.MULTILINE))
        used = set(re.findall(r"\$\(res ([A-Za-z0-9]+)\)", self.section))
        self.assertTrue(used, "the section looks stack resources up with res NAME")
        self.assertLessEqual(used, resources, "stack resources the README looks up")

    def test_names_match_the_template_and_render_defaults(self):
        template = json.loads((support.REPO / "taskdefs" / "batch-mnp.json").read_text())
        spec = importlib.util.spec_from_file_location("render", RENDER)
        render_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(render_module)
        default = render_module.parse_args(["--account", ACCOUNT, "--region", REGION]).ssh_key_parameter
        for needle in (f"--job-definition {template['jobDefinitionName']}",
                       f"--job-definition-name {template['jobDefinitionName']}",
                       f"put-parameter --name {default} ", f"delete-parameter --name {default}",
                       f":parameter{default}"):
            self.assertTrue(needle in self.section, f"taskdefs/README.md section 7 lacks '{needle}'")


class RenderBatchOptions(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.out = pathlib.Path(self._tmp.name)
        model = botocore_session.get_session().get_service_model("batch")
        self.shape = model.operation_model("RegisterJobDefinition").input_shape

    def tearDown(self):
        self._tmp.cleanup()

    def container(self, *args: str) -> dict:
        run = render(self.out, "--execution-role", "arn:aws:iam::123456789012:role/x", *args, "batch-mnp")
        self.assertEqual(run.returncode, 0, run.stderr)
        job = json.loads((self.out / "cnnbench-batch-mnp.json").read_text())
        report = botocore_validate.ParamValidator().validate(job, self.shape)
        self.assertFalse(report.has_errors(), report.generate_report())
        return job["nodeProperties"]["nodeRangeProperties"][0]["container"]

    def test_node_size_for_another_instance_type(self):
        # g5.48xlarge: 8 GPUs, 192 vCPUs, 768 GiB, 1 EFA.
        c = self.container("--node-gpus", "8", "--node-vcpus", "192", "--node-memory-mib", "700000",
                           "--efa-devices", "1")
        self.assertEqual(BatchJobDefinition.requirements(c), {"GPU": "8", "VCPU": "192", "MEMORY": "700000"})
        self.assertEqual([d["hostPath"] for d in c["linuxParameters"]["devices"]],
                         ["/dev/infiniband/uverbs0"])
        # p5.48xlarge: 32 EFA interfaces.
        c = self.container("--efa-devices", "32")
        self.assertEqual(len(c["linuxParameters"]["devices"]), 32)
        self.assertEqual(c["linuxParameters"]["devices"][31]["hostPath"], "/dev/infiniband/uverbs31")

    def test_without_efa_no_devices_and_shm_follows_gpus(self):
        c = self.container("--efa-devices", "0", "--node-gpus", "16")
        self.assertNotIn("devices", c["linuxParameters"])
        self.assertEqual(c["linuxParameters"]["sharedMemorySize"], 16 * 1024)
        c = self.container("--node-gpus", "4")
        self.assertEqual(c["linuxParameters"]["sharedMemorySize"], 8192, "never below the template's")

    def test_key_parameter_name_or_arn(self):
        c = self.container("--ssh-key-parameter", "team-a.mnp_key")
        self.assertEqual(c["secrets"][0]["valueFrom"],
                         f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/team-a.mnp_key")
        arn = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:cnnbench-mnp-AbCdEf"
        c = self.container("--ssh-key-parameter", arn)
        self.assertEqual(c["secrets"][0]["valueFrom"], arn)

    def test_china_partition(self):
        run = subprocess.run([sys.executable, str(RENDER), "--account", ACCOUNT, "--region", "cn-north-1",
                              "--execution-role", "exec", "--output-dir", str(self.out), "batch-mnp"],
                             text=True, capture_output=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        c = json.loads((self.out / "cnnbench-batch-mnp.json").read_text())[
            "nodeProperties"]["nodeRangeProperties"][0]["container"]
        self.assertEqual(c["secrets"][0]["valueFrom"],
                         f"arn:aws-cn:ssm:cn-north-1:{ACCOUNT}:parameter/cnnbench/mnp-ssh-key")
        self.assertEqual(c["executionRoleArn"], f"arn:aws-cn:iam::{ACCOUNT}:role/exec")
        self.assertTrue(c["image"].endswith(".amazonaws.com.cn/cnnbench:latest"))

    def test_bad_values_are_errors_that_name_them(self):
        cases = {
            "--node-gpus": (["--execution-role", "x", "--node-gpus", "0"], "'0'"),
            "--node-vcpus": (["--execution-role", "x", "--node-vcpus", "many"], "'many'"),
            "--node-memory-mib": (["--execution-role", "x", "--node-memory-mib", "-5"], "'-5'"),
            "--efa-devices": (["--execution-role", "x", "--efa-devices", "65"], "'65'"),
            "--ssh-key-parameter": (["--execution-role", "x", "--ssh-key-parameter", "a b"], "'a b'"),
            "--execution-role": ([], "Parameter Store through an execution role"),
        }
        for flag, (args, needle) in cases.items():
            with self.subTest(flag):
                run = render(self.out / "rendered", *args, "batch-mnp")
                self.assertEqual(run.returncode, 2)
                self.assertIn(flag, run.stderr)
                self.assertIn(needle, run.stderr)
                self.assertEqual(run.stdout, "")
                self.assertFalse((self.out / "rendered").exists(), "nothing written")


if __name__ == "__main__":
    unittest.main()
