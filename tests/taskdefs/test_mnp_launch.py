"""docker/mnp-launch (the image's cnnbench-mnp) on this machine, as the nodes of an AWS
Batch multi-node parallel job: every node is a separate process with the variables AWS
Batch sets, its own sshd (OpenSSH) on its own loopback address (127.0.0.1 for the main
node, 127.0.0.2, ... for the others) and one port, its own folder. A 2-node CPU training
runs through mpirun's ssh launch to one "total images/sec"; a node that never reports
ends the job with an error naming it within CNNBENCH_MNP_WAIT_S; signals, a vanished
main node, the report channel and every bad setting are checked. Everything is bounded
by timeouts and stays on 127.0.0.0/8.

Environment (set by CMake): CNNBENCH_BINARY, the cnnbench to train with, and
CNNBENCH_MPI_BUILT (ON/OFF).
"""
from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import support

LAUNCH = support.REPO / "docker" / "mnp-launch"
ENTRYPOINT = support.REPO / "docker" / "entrypoint"
SSHD = "/usr/sbin/sshd"
MAIN_ADDRESS = "127.0.0.1"
# A small CPU training: one MPI all-reduce per step over TCP on loopback.
TRAIN_FLAGS = ["--device=cpu", "--model=trivial", "--image_size=32", "--batch_size=4",
               "--num_batches=4", "--num_warmup_batches=1", "--num_threads=1"]

# Records where each rank was started (its rank, and the node index its environment
# carries: the main node's for ranks mpirun starts itself, the other node's for ranks
# its sshd session started), then runs the real cnnbench.
RANK_RECORDER = """#!/bin/sh
echo "rank=${OMPI_COMM_WORLD_RANK:-} node=${AWS_BATCH_JOB_NODE_INDEX:-}" >> "%(log)s.$$"
exec "%(binary)s" "$@"
"""

# Prints its name and arguments (one-node mode, entrypoint routing).
FAKE = """#!/bin/sh
echo "prog=${0##*/}"
for a in "$@"; do echo "arg=$a"; done
"""


def free_port(addresses: list[str]) -> int:
    """A TCP port free on every address (checked by binding it on each)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind((addresses[0], 0))
            port = probe.getsockname()[1]
        sockets = []
        try:
            for address in addresses:
                s = socket.socket()
                sockets.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((address, port))
            return port
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no free port on " + ", ".join(addresses))


class Node:
    """One simulated node: a launcher process and what it printed."""

    def __init__(self, proc: subprocess.Popen, folder: pathlib.Path, index: int):
        self.proc = proc
        self.folder = folder
        self.index = index
        self.stdout = ""
        self.stderr = ""
        self.seconds = 0.0
        self._start = time.monotonic()

    def finish(self, timeout: float) -> int:
        """Waits at most `timeout` s (then kills its process group and fails)."""
        try:
            self.stdout, self.stderr = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.stdout, self.stderr = self.proc.communicate()
            raise AssertionError(f"node {self.index} still ran after {timeout} s:\n"
                                 f"{self.stdout}\n{self.stderr}") from None
        self.seconds = time.monotonic() - self._start
        return self.proc.returncode


class MnpTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="cnnbench-mnp-test.")
        self.root = pathlib.Path(self._tmp.name)
        self.nodes: list[Node] = []

    def tearDown(self):
        for node in self.nodes:
            if node.proc.poll() is None:
                os.killpg(node.proc.pid, signal.SIGKILL)
                node.proc.communicate()
        self._tmp.cleanup()

    def base_env(self, path: str) -> dict[str, str]:
        return {"PATH": path, "HOME": os.environ.get("HOME", "/root"),
                "LANG": "C.UTF-8", "TMPDIR": str(self.root)}


class Cluster(MnpTestCase):
    """Nodes with sshd on loopback."""

    @classmethod
    def setUpClass(cls):
        for program in ("ssh", "ssh-keygen", "mpirun", "timeout"):
            support.require_program(program)
        if not os.access(SSHD, os.X_OK):
            support.skip(f"{SSHD} (openssh-server) is missing")
        cls.binary = os.environ.get("CNNBENCH_BINARY", "")
        cls.mpi_built = os.environ.get("CNNBENCH_MPI_BUILT", "OFF").upper() in ("ON", "1", "TRUE")

    def setUp(self):
        super().setUp()
        key = self.root / "shared_key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test job",
                        "-f", str(key)], check=True, timeout=30)
        self.key = key.read_text()
        self.key_file = key
        self.bin = self.root / "bin"
        self.bin.mkdir()
        self.rank_log = self.root / "ranks"
        if self.binary:
            support.write_program(self.bin, "cnnbench", RANK_RECORDER % {
                "log": self.rank_log, "binary": self.binary})
        self.path = f"{self.bin}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

    def address(self, index: int) -> str:
        return f"127.0.0.{index + 1}"

    def start(self, index: int, nodes: int, port: int, args: list[str], wait_s: int = 60,
              extra: dict[str, str] | None = None) -> Node:
        folder = self.root / f"node{index}"
        env = self.base_env(self.path)
        env.update({
            "AWS_BATCH_JOB_NUM_NODES": str(nodes),
            "AWS_BATCH_JOB_NODE_INDEX": str(index),
            "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
            "CNNBENCH_MNP_SSH_KEY": self.key,
            "CNNBENCH_MNP_SSH_PORT": str(port),
            "CNNBENCH_MNP_LISTEN_ADDRESS": self.address(index),
            "CNNBENCH_MNP_DIR": str(folder),
            "CNNBENCH_MNP_WAIT_S": str(wait_s),
            # Open MPI's own traffic between these "nodes" goes over loopback.
            "OMPI_MCA_btl_tcp_if_include": "lo",
            "OMPI_MCA_oob_tcp_if_include": "lo",
            "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
        })
        if index != 0:
            env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = MAIN_ADDRESS
        env.update(extra or {})
        proc = subprocess.Popen([str(LAUNCH), *args], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        node = Node(proc, folder, index)
        self.nodes.append(node)
        return node

    def wait_for(self, predicate, seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not happen within {seconds} s")
            time.sleep(0.1)

    def ranks_started(self) -> list[str]:
        return sorted(p.read_text().strip() for p in self.root.glob("ranks.*"))

    # --- the job runs

    def test_two_nodes_train_to_one_total(self):
        if not self.binary or not pathlib.Path(self.binary).exists():
            support.skip("CNNBENCH_BINARY (the cnnbench build) is not given")
        if not self.mpi_built:
            self.skipTest("cnnbench was built without MPI (CNNBENCH_MPI=OFF)")
        port = free_port([self.address(0), self.address(1)])
        main = self.start(0, 2, port, TRAIN_FLAGS)
        other = self.start(1, 2, port, TRAIN_FLAGS)
        status = main.finish(timeout=180)
        self.assertEqual(status, 0, f"{main.stdout}\n{main.stderr}")
        self.assertEqual(other.finish(timeout=30), 0, other.stderr)

        self.assertEqual(main.stdout.count("total images/sec:"), 1, main.stdout)
        self.assertEqual(other.stdout, "", "the other node prints only its launcher's lines (stderr)")
        self.assertIn("Launch:      Open MPI, 2 ranks", main.stdout)
        self.assertEqual((main.folder / "hostfile").read_text(),
                         f"{self.address(0)} slots=1\n{self.address(1)} slots=1\n")
        # Rank 0 was started by mpirun on the main node; rank 1 by the sshd of node 1,
        # whose sessions carry node 1's environment.
        self.assertEqual(self.ranks_started(), ["rank=0 node=0", "rank=1 node=1"])
        self.assertIn("node 1 reported from 127.0.0.2 with 1 slot(s)", main.stderr)
        self.assertIn("mpirun ended with status 0", main.stderr)
        self.assertIn("the main node ended the job (its status: 0)", other.stderr)
        # Nothing secret stays behind.
        for node in (main, other):
            self.assertFalse((node.folder / "id").exists())

    def test_a_node_that_never_reports_ends_the_job(self):
        port = free_port([self.address(i) for i in range(3)])
        wait_s = 4
        main = self.start(0, 3, port, ["--model=trivial"], wait_s=wait_s)
        # Node 1 reports (with two GPUs given by the container runtime); node 2 never starts.
        other = self.start(1, 3, port, ["--model=trivial"], wait_s=wait_s,
                           extra={"NVIDIA_VISIBLE_DEVICES": "GPU-5d5b1c2e-aaaa,GPU-77e0f1d3-bbbb"})
        self.assertEqual(main.finish(timeout=wait_s + 20), 1, main.stderr)
        self.assertLess(main.seconds, wait_s + 10)
        self.assertIn("error: node(s) 2 of the job's 3 never reported to the main node", main.stderr)
        self.assertIn(f"within {wait_s} s (CNNBENCH_MNP_WAIT_S)", main.stderr)
        self.assertIn("reported: 1 (127.0.0.2)", main.stderr)
        self.assertIn("node 1 reported from 127.0.0.2 with 2 slot(s)", main.stderr)
        self.assertFalse((main.folder / "hostfile").exists(), "no mpirun without every node")
        # The node that did report is told to end, and does so at once.
        self.assertEqual(other.finish(timeout=20), 0, other.stderr)
        self.assertIn("the main node ended the job (its status: 1)", other.stderr)

    def test_the_shared_key_can_only_report_to_the_main_node(self):
        port = free_port([self.address(i) for i in range(3)])
        main = self.start(0, 3, port, ["--model=trivial"], wait_s=30)
        self.wait_for(lambda: (main.folder / "sshd.log").exists() and
                      (main.folder / "reports").is_dir(), 15, "the main node's sshd")
        ssh = ["ssh", "-F", "/dev/null", "-i", str(self.key_file), "-p", str(port),
               "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
               "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=5",
               "-o", "LogLevel=ERROR", MAIN_ADDRESS]

        def attempt(*command):
            for _ in range(50):  # sshd may still be starting
                run = subprocess.run([*ssh, *command], text=True, capture_output=True, timeout=30)
                if "Connection refused" not in run.stderr:
                    return run
                time.sleep(0.1)
            return run

        run = attempt("id")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("expected 'report INDEX SLOTS DIR ssh-ed25519 KEY', got 'id'", run.stderr)
        run = attempt("report", "0", "1", "/tmp", "ssh-ed25519", "AAAA")
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("other than the main node 0", run.stderr)
        run = attempt("report", "1", "1", "/tmp/x;reboot", "ssh-ed25519", "AAAA")
        self.assertIn("is not an absolute path of", run.stderr)
        self.assertEqual(list((main.folder / "reports").iterdir()), [])
        os.killpg(main.proc.pid, signal.SIGTERM)
        self.assertEqual(main.finish(timeout=20), 143)

    def test_sigterm_on_the_main_node_ends_every_node(self):
        port = free_port([self.address(i) for i in range(3)])
        main = self.start(0, 3, port, ["--model=trivial"], wait_s=60)
        other = self.start(1, 3, port, ["--model=trivial"], wait_s=60)
        self.wait_for(lambda: (main.folder / "reports" / "1").exists(), 30, "node 1's report")
        main.proc.send_signal(signal.SIGTERM)
        self.assertEqual(main.finish(timeout=20), 143, main.stderr)
        self.assertIn("stopped by a signal; ending the other nodes", main.stderr)
        self.assertEqual(other.finish(timeout=20), 0, other.stderr)
        self.assertIn("its status: 143", other.stderr)

    def test_a_node_ends_when_the_main_node_vanishes(self):
        port = free_port([self.address(i) for i in range(3)])
        main = self.start(0, 3, port, ["--model=trivial"], wait_s=60)
        other = self.start(1, 3, port, ["--model=trivial"], wait_s=60,
                           extra={"CNNBENCH_MNP_PROBE_S": "1"})
        self.wait_for(lambda: (main.folder / "reports" / "1").exists(), 30, "node 1's report")
        # The container of the main node is gone at once: its launcher and its sshd.
        os.killpg(main.proc.pid, signal.SIGKILL)
        main.finish(timeout=10)
        self.assertEqual(other.finish(timeout=30), 1, other.stderr)
        self.assertIn("the main node at 127.0.0.1:", other.stderr)
        self.assertIn("has not answered for 3 s", other.stderr)

    def test_a_node_whose_main_node_never_answers(self):
        port = free_port([self.address(0), self.address(1)])
        other = self.start(1, 2, port, ["--model=trivial"], wait_s=3)
        self.assertEqual(other.finish(timeout=30), 1, other.stderr)
        self.assertLess(other.seconds, 20)
        self.assertIn(f"node 1 could not report to the main node 0 at 127.0.0.1:{port} within 3 s",
                      other.stderr)


class Settings(MnpTestCase):
    """Bad settings and the one-node mode; no sshd needed (a fake mpirun on PATH)."""

    @classmethod
    def setUpClass(cls):
        for program in ("ssh", "ssh-keygen", "timeout"):
            support.require_program(program)

    def setUp(self):
        super().setUp()
        self.tools = support.tool_dir(self.root, [
            "bash", "sh", "cat", "cut", "grep", "id", "mkdir", "mktemp", "mv", "readlink",
            "rm", "sed", "sleep", "tr", "wc", "chmod", "timeout", "ssh", "ssh-keygen"])
        self.fakes = self.root / "fakes"
        support.write_program(self.fakes, "mpirun", FAKE)
        support.write_program(self.fakes, "cnnbench", FAKE)

    def run_launch(self, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
        full = self.base_env(f"{self.fakes}:{self.tools}")
        full.update(env)
        return subprocess.run([str(LAUNCH), *args], env=full, text=True, capture_output=True,
                              timeout=60)

    def one_node(self, **extra: str) -> list[str]:
        env = {"AWS_BATCH_JOB_NUM_NODES": "1", "AWS_BATCH_JOB_NODE_INDEX": "0",
               "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0"}
        env.update(extra)
        run = self.run_launch(env, "--model=vgg16")
        self.assertEqual(run.returncode, 0, run.stderr)
        return [line[4:] for line in run.stdout.splitlines() if line.startswith("arg=")]

    def test_one_node_runs_a_rank_per_gpu_without_ssh(self):
        args = self.one_node(NVIDIA_VISIBLE_DEVICES="GPU-a1,GPU-b2,GPU-c3")
        self.assertEqual(args[:4], ["-np", "3", "--bind-to", "none"])
        self.assertTrue(args[4].endswith("/cnnbench"))
        self.assertEqual(args[5:], ["--model=vgg16"])

    def test_slots_follow_the_gpus_given(self):
        def np_of(**extra):
            args = self.one_node(**extra)
            return args[args.index("-np") + 1]
        self.assertEqual(np_of(), "1")  # no GPU: one CPU rank
        self.assertEqual(np_of(NVIDIA_VISIBLE_DEVICES="none"), "1")
        self.assertEqual(np_of(NVIDIA_VISIBLE_DEVICES="0,1"), "2")
        self.assertEqual(np_of(NVIDIA_VISIBLE_DEVICES="all", CUDA_VISIBLE_DEVICES="0,1,2,3"), "4")
        self.assertEqual(np_of(NVIDIA_VISIBLE_DEVICES="GPU-a,GPU-b", CNNBENCH_MNP_SLOTS="5"), "5")

    def expect_error(self, env: dict[str, str], status: int, *needles: str) -> None:
        base = {"AWS_BATCH_JOB_NUM_NODES": "2", "AWS_BATCH_JOB_NODE_INDEX": "0",
                "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0"}
        base.update(env)
        base = {k: v for k, v in base.items() if v is not None}
        run = self.run_launch(base, "--model=trivial")
        self.assertEqual(run.returncode, status, run.stderr)
        self.assertEqual(run.stdout, "")
        self.assertTrue(run.stderr.startswith("cnnbench-mnp: error: "), run.stderr)
        for needle in needles:
            self.assertIn(needle, run.stderr)

    def test_bad_settings_are_errors_that_name_them(self):
        sshd = os.access(SSHD, os.X_OK)
        key = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----"
        cases = [
            ({"AWS_BATCH_JOB_NUM_NODES": None}, 2, ["AWS_BATCH_JOB_NUM_NODES is not set",
                                                    "run cnnbench or mpirun directly"]),
            ({"AWS_BATCH_JOB_NUM_NODES": "two"}, 2, ["AWS_BATCH_JOB_NUM_NODES='two'", "from 1 to"]),
            ({"AWS_BATCH_JOB_NUM_NODES": "0"}, 2, ["AWS_BATCH_JOB_NUM_NODES='0'"]),
            ({"AWS_BATCH_JOB_NODE_INDEX": "2"}, 2, ["AWS_BATCH_JOB_NODE_INDEX='2'", "from 0 to 1"]),
            ({"AWS_BATCH_JOB_NODE_INDEX": None}, 2, ["AWS_BATCH_JOB_NODE_INDEX is not set"]),
            ({"AWS_BATCH_JOB_MAIN_NODE_INDEX": "-1"}, 2, ["AWS_BATCH_JOB_MAIN_NODE_INDEX='-1'"]),
            ({"AWS_BATCH_JOB_NODE_INDEX": "1"}, 2,
             ["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS=''", "this is node 1"]),
            ({"AWS_BATCH_JOB_NODE_INDEX": "1", "AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS": "10.0.1.300"},
             2, ["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS='10.0.1.300'"]),
            ({"CNNBENCH_MNP_SSH_PORT": "70000"}, 2, ["CNNBENCH_MNP_SSH_PORT='70000'", "1 to 65535"]),
            ({"CNNBENCH_MNP_WAIT_S": "10m"}, 2, ["CNNBENCH_MNP_WAIT_S='10m'"]),
            ({"CNNBENCH_MNP_SLOTS": "0"}, 2, ["CNNBENCH_MNP_SLOTS='0'", "from 1 to 1024"]),
            ({"CNNBENCH_MNP_LISTEN_ADDRESS": "localhost"}, 2, ["CNNBENCH_MNP_LISTEN_ADDRESS='localhost'"]),
        ]
        if sshd:
            cases += [
                ({}, 2, ["CNNBENCH_MNP_SSH_KEY is not set", "secrets"]),
                ({"CNNBENCH_MNP_SSH_KEY": key}, 2,
                 ["CNNBENCH_MNP_SSH_KEY does not hold an OpenSSH private key"]),
            ]
        for env, status, needles in cases:
            with self.subTest(env=env):
                self.expect_error(env, status, *needles)

    def test_report_command_checks_what_a_node_sends(self):
        folder = self.root / "main"
        (folder / "reports").mkdir(parents=True)
        key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5sV3l7mLq0"

        def report(command: str, client: str = "10.0.1.7") -> subprocess.CompletedProcess:
            env = self.base_env(f"{self.tools}")
            env.update({"SSH_ORIGINAL_COMMAND": command,
                        "SSH_CONNECTION": f"{client} 40000 10.0.1.5 2222"})
            return subprocess.run([str(LAUNCH), "report", str(folder), "4", "0"], env=env,
                                  text=True, capture_output=True, timeout=30)

        run = report(f"report 2 8 /tmp/cnnbench-mnp.Ab3 {key}")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual((folder / "reports" / "2").read_text(),
                         f"10.0.1.7 8 /tmp/cnnbench-mnp.Ab3 {key} 10.0.1.5\n")
        # The same node again from the same address (a retry) is fine; from another, not.
        self.assertEqual(report(f"report 2 8 /tmp/cnnbench-mnp.Ab3 {key}").returncode, 0)
        run = report(f"report 2 8 /tmp/x {key}", client="10.0.1.9")
        self.assertEqual(run.returncode, 1)
        self.assertIn("node 2 already reported from 10.0.1.7", run.stderr)
        bad = {
            f"report 4 8 /tmp/x {key}": "'4' is not one of the job's 4 nodes",
            f"report 0 8 /tmp/x {key}": "other than the main node 0",
            f"report 1 0 /tmp/x {key}": "slots '0' is not from 1 to 1024",
            f"report 1 8 relative {key}": "folder 'relative'",
            "report 1 8 /tmp/x ssh-rsa AAAAB3": "is not an ssh-ed25519 public key",
            "report 1 8 /tmp/x": "expected 'report INDEX SLOTS DIR ssh-ed25519 KEY'",
            "reboot": "got 'reboot'",
        }
        for command, needle in bad.items():
            with self.subTest(command=command):
                run = report(command)
                self.assertEqual(run.returncode, 2, run.stderr)
                self.assertIn(needle, run.stderr)
        self.assertEqual(sorted(p.name for p in (folder / "reports").iterdir()), ["2"])


class Image(unittest.TestCase):
    """The image carries the launcher under the name the entrypoint runs, and OpenSSH."""

    def test_dockerfile_installs_the_launcher_and_openssh(self):
        from test_dockerfile import instructions
        steps = instructions((support.REPO / "docker" / "Dockerfile").read_text())
        runtime = steps[max(i for i, (k, _) in enumerate(steps) if k == "FROM"):]
        copies = [args.split() for keyword, args in runtime if keyword == "COPY"]
        self.assertIn(["--chmod=0755", "docker/mnp-launch", "/usr/local/bin/cnnbench-mnp"], copies)
        runs = " ".join(args for keyword, args in runtime if keyword == "RUN")
        self.assertIn("install-deps.sh --runtime", runs)
        self.assertIn("rm -f /etc/ssh/ssh_host_*", runs, "no sshd host key baked into the image")
        script = (support.REPO / "docker" / "install-deps.sh").read_text()
        runtime_install = script[script.index('if [ "$mode" = runtime ]'):]
        runtime_install = runtime_install[:runtime_install.index("exit 0")]
        for package in ("openssh-client", "openssh-server", "openmpi-bin"):
            self.assertIn(package, runtime_install)
        self.assertIn("exec cnnbench-mnp", ENTRYPOINT.read_text())


class EntrypointMode(MnpTestCase):
    """docker/entrypoint runs cnnbench-mnp for flags inside an AWS Batch MNP job only."""

    def setUp(self):
        super().setUp()
        self.tools = support.tool_dir(self.root, ["sh", "id"])
        self.fakes = self.root / "fakes"
        for name in ("cnnbench", "cnnbench-mnp", "mpirun"):
            support.write_program(self.fakes, name, FAKE)

    def run_entrypoint(self, env: dict[str, str], *args: str) -> tuple[str, list[str]]:
        full = self.base_env(f"{self.fakes}:{self.tools}")
        full.update(env)
        run = subprocess.run([str(ENTRYPOINT), *args], env=full, text=True, capture_output=True,
                             timeout=30)
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.splitlines()
        return lines[0][5:], [line[4:] for line in lines[1:]]

    def test_flags_in_a_batch_mnp_job_go_to_the_launcher(self):
        batch = {"AWS_BATCH_JOB_NUM_NODES": "4", "AWS_BATCH_JOB_NODE_INDEX": "2"}
        self.assertEqual(self.run_entrypoint(batch, "--model=resnet50", "--num_batches=100"),
                         ("cnnbench-mnp", ["--model=resnet50", "--num_batches=100"]))
        self.assertEqual(self.run_entrypoint(batch), ("cnnbench-mnp", []))
        # A command runs as given, as outside Batch.
        self.assertEqual(self.run_entrypoint(batch, "mpirun", "-np", "2", "cnnbench"),
                         ("mpirun", ["-np", "2", "cnnbench"]))

    def test_flags_outside_batch_go_to_cnnbench(self):
        self.assertEqual(self.run_entrypoint({}, "--model=resnet50"), ("cnnbench", ["--model=resnet50"]))
        # A single-node Batch job has AWS_BATCH_JOB_ID but not the MNP variables.
        self.assertEqual(self.run_entrypoint({"AWS_BATCH_JOB_ID": "a1b2"}, "--model=vgg16"),
                         ("cnnbench", ["--model=vgg16"]))


if __name__ == "__main__":
    unittest.main()
