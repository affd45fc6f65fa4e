"""docker/entrypoint: flags go to cnnbench, commands run as given, Open MPI gets its
container settings without overriding the caller's, NCCL_* pass through untouched, and
the script prints nothing itself. Run with fake cnnbench, mpirun and id on PATH."""
from __future__ import annotations

import pathlib
import subprocess
import tempfile
import unittest

import support

ENTRYPOINT = support.REPO / "docker" / "entrypoint"

# Reports how it was started: its name, pid, arguments and the MPI/NCCL environment.
FAKE = """#!/bin/sh
echo "prog=${0##*/}"
echo "pid=$$"
for a in "$@"; do echo "arg=$a"; done
env | grep -E '^(OMPI_|NCCL_)' | sort | sed 's/^/env=/'
case "${1:-}" in --exit=*) exit "${1#--exit=}" ;; esac
exit 0
"""


class Run:
    """What a fake program printed, parsed."""

    def __init__(self, proc: subprocess.CompletedProcess, pid: int):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.pid = pid
        lines = proc.stdout.splitlines()
        self.prog = next((line[5:] for line in lines if line.startswith("prog=")), None)
        self.fake_pid = next((int(line[4:]) for line in lines if line.startswith("pid=")), None)
        self.args = [line[4:] for line in lines if line.startswith("arg=")]
        self.env = dict(line[4:].split("=", 1) for line in lines if line.startswith("env="))


class EntrypointTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self._tmp.name)
        self.tools = support.tool_dir(self.root, ["sh", "bash", "env", "grep", "sort", "sed"])
        self.fakes = self.root / "fakes"
        support.write_program(self.fakes, "cnnbench", FAKE)
        support.write_program(self.fakes, "mpirun", FAKE)
        self.uid(1000)

    def tearDown(self):
        self._tmp.cleanup()

    def uid(self, uid: int) -> None:
        support.write_program(self.fakes, "id", f"#!/bin/sh\necho {uid}\n")

    def run_entrypoint(self, *args: str, env: dict[str, str] | None = None) -> Run:
        full_env = {"PATH": f"{self.fakes}:{self.tools}"}
        full_env.update(env or {})
        proc = subprocess.Popen([str(ENTRYPOINT), *args], env=full_env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stdout, stderr = proc.communicate(timeout=30)
        return Run(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), proc.pid)

    # --- what runs

    def test_flags_go_to_cnnbench(self):
        run = self.run_entrypoint("--model=vgg16", "--batch_size=64")
        self.assertEqual((run.returncode, run.stderr), (0, ""))
        self.assertEqual(run.prog, "cnnbench")
        self.assertEqual(run.args, ["--model=vgg16", "--batch_size=64"])

    def test_single_dash_flag_goes_to_cnnbench(self):
        run = self.run_entrypoint("-h")
        self.assertEqual((run.prog, run.args), ("cnnbench", ["-h"]))

    def test_no_arguments_run_cnnbench_with_none(self):
        run = self.run_entrypoint()
        self.assertEqual((run.returncode, run.prog, run.args), (0, "cnnbench", []))

    def test_explicit_cnnbench_command(self):
        run = self.run_entrypoint("cnnbench", "--model=resnet50")
        self.assertEqual((run.prog, run.args), ("cnnbench", ["--model=resnet50"]))

    def test_mpirun_runs_as_given(self):
        command = ["-np", "4", "--bind-to", "none", "cnnbench", "--model=resnet50"]
        run = self.run_entrypoint("mpirun", *command)
        self.assertEqual((run.returncode, run.prog, run.args), (0, "mpirun", command))

    def test_other_command_runs_and_entrypoint_prints_nothing(self):
        run = self.run_entrypoint("bash", "-c", "echo hello")
        self.assertEqual((run.returncode, run.stdout, run.stderr), (0, "hello\n", ""))

    def test_arguments_keep_spaces_and_globs(self):
        args = ["--model=a b", "*", "$HOME", ""]
        run = self.run_entrypoint(*args)
        self.assertEqual(run.args, args)

    def test_unknown_command_is_an_error_naming_it(self):
        run = self.run_entrypoint("resnet50")
        self.assertEqual(run.returncode, 127)
        self.assertEqual(run.stdout, "")
        self.assertIn("'resnet50'", run.stderr)
        self.assertIn("--model=vgg16", run.stderr)

    def test_replaces_itself_so_signals_reach_the_program(self):
        run = self.run_entrypoint("--model=resnet50")
        self.assertEqual(run.fake_pid, run.pid)

    def test_exit_status_is_the_programs(self):
        self.assertEqual(self.run_entrypoint("--exit=3").returncode, 3)

    # --- environment

    def test_open_mpi_container_defaults(self):
        env = self.run_entrypoint("mpirun", "-np", "2", "cnnbench").env
        self.assertEqual(env.get("OMPI_MCA_btl_vader_single_copy_mechanism"), "none")
        self.assertEqual(env.get("OMPI_MCA_hwloc_base_binding_policy"), "none")
        self.assertEqual(env.get("OMPI_MCA_odls_base_sigkill_timeout"), "20")
        self.assertEqual(env.get("OMPI_MCA_plm_rsh_agent"), "false")
        self.assertNotIn("OMPI_ALLOW_RUN_AS_ROOT", env)

    def test_callers_open_mpi_settings_win(self):
        mine = {"OMPI_MCA_btl_vader_single_copy_mechanism": "cma",
                "OMPI_MCA_hwloc_base_binding_policy": "core",
                "OMPI_MCA_plm_rsh_agent": "ssh"}
        env = self.run_entrypoint("mpirun", env=mine).env
        for name, value in mine.items():
            self.assertEqual(env.get(name), value, name)

    def test_rsh_agent_left_alone_where_ssh_exists(self):
        support.write_program(self.fakes, "ssh", "#!/bin/sh\nexit 0\n")
        self.assertNotIn("OMPI_MCA_plm_rsh_agent", self.run_entrypoint("mpirun").env)

    def test_root_may_run_mpirun(self):
        self.uid(0)
        env = self.run_entrypoint("mpirun").env
        self.assertEqual(env.get("OMPI_ALLOW_RUN_AS_ROOT"), "1")
        self.assertEqual(env.get("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), "1")

    def test_nccl_variables_pass_untouched(self):
        nccl = {"NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "^docker,lo",
                "NCCL_P2P_DISABLE": "1"}
        env = self.run_entrypoint("--model=resnet50", env=nccl).env
        self.assertEqual({k: v for k, v in env.items() if k.startswith("NCCL_")}, nccl)


if __name__ == "__main__":
    unittest.main()
