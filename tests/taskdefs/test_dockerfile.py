"""docker/Dockerfile, read without a Docker engine: the build stage installs with the
script CI uses and configures with a preset of CMakePresets.json; the runtime stage
installs the run-time libraries with the same script, runs as a non-root user through
the entrypoint, asks the NVIDIA runtime for compute and utility, and carries OCI labels
that agree with the project."""
from __future__ import annotations

import json
import re
import shlex
import unittest

import support

DOCKERFILE = support.REPO / "docker" / "Dockerfile"
DOCKERIGNORE = support.REPO / ".dockerignore"


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) pairs, with continuation lines joined and comments dropped."""
    joined, pending = [], ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending and line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append(pending + line)
        pending = ""
    result = []
    for line in joined:
        keyword, _, args = line.strip().partition(" ")
        result.append((keyword.upper(), args.strip()))
    return result


def arg_default(args: str) -> tuple[str, str]:
    name, _, value = args.partition("=")
    return name, value.strip('"')


def key_values(args: str) -> dict[str, str]:
    """KEY=VALUE pairs of LABEL and ENV (quoted values allowed)."""
    return dict(item.split("=", 1) for item in shlex.split(args))


class Dockerfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = DOCKERFILE.read_text()
        all_instructions = instructions(cls.text)
        cls.globals = {}
        cls.stages = []
        for keyword, args in all_instructions:
            if keyword == "FROM":
                cls.stages.append({"from": args, "steps": []})
            elif not cls.stages:
                assert keyword == "ARG", f"{keyword} before the first FROM"
                name, value = arg_default(args)
                cls.globals[name] = value
            else:
                cls.stages[-1]["steps"].append((keyword, args))
        cls.build, cls.runtime = cls.stages[0], cls.stages[-1]
        presets = json.loads((support.REPO / "CMakePresets.json").read_text())
        cls.configure_presets = {p["name"] for p in presets["configurePresets"]}
        cls.build_presets = {p["name"] for p in presets["buildPresets"]}

    def steps(self, stage: dict, keyword: str) -> list[str]:
        return [args for kw, args in stage["steps"] if kw == keyword]

    def stage_args(self, stage: dict) -> dict[str, str]:
        return dict(arg_default(a) for a in self.steps(stage, "ARG"))

    def test_syntax_directive_for_copy_chmod(self):
        self.assertTrue(self.text.startswith("# syntax=docker/dockerfile:1"))

    def test_cuda_13_images_on_ubuntu_24_04(self):
        self.assertRegex(self.globals["CUDA_VERSION"], r"^13\.[0-9]+\.[0-9]+$")
        self.assertEqual(len(self.stages), 2)
        self.assertEqual(self.build["from"],
                         "nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu24.04 AS build")
        self.assertTrue(self.runtime["from"].startswith(
            "nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu24.04"))

    def test_volta_build_is_documented(self):
        # CUDA 13 dropped sm_70; the header says how to build for p3 instances.
        self.assertRegex(self.text, r"--build-arg CUDA_VERSION=12\.9\.[0-9]+")
        self.assertIn("70-real", self.text)

    def test_build_stage_installs_with_the_ci_script(self):
        runs = self.steps(self.build, "RUN")
        install = [r for r in runs if "docker/install-deps.sh" in r]
        self.assertEqual(len(install), 1)
        self.assertRegex(install[0], r"docker/install-deps\.sh(\s*&&|\s*$)",
                         "build dependencies: the script without arguments")
        copies = self.steps(self.build, "COPY")
        self.assertIn("docker/install-deps.sh docker/install-deps.sh", copies)

    def test_build_stage_uses_a_cmake_preset(self):
        script = " ".join(self.steps(self.build, "RUN"))
        configure = re.search(r"cmake --preset (\S+)", script)
        build = re.search(r"cmake --build --preset (\S+)", script)
        self.assertIsNotNone(configure)
        self.assertIn(configure.group(1), self.configure_presets)
        self.assertIsNotNone(build)
        self.assertIn(build.group(1), self.build_presets)
        self.assertIn('-DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}"', script)
        self.assertIn("-DCNNBENCH_CUDA=ON", script)
        self.assertIn("cmake --install", script)

    def test_default_architectures(self):
        architectures = self.stage_args(self.build)["CUDA_ARCHITECTURES"].split(";")
        real = {int(a.split("-")[0]) for a in architectures if a.endswith("-real")}
        virtual = [int(a.split("-")[0]) for a in architectures if a.endswith("-virtual")]
        # T4, A100, A10G, L4/L40S, H100/H200, and PTX of the newest for later GPUs.
        self.assertTrue({75, 80, 86, 89, 90} <= real)
        self.assertEqual(virtual, [max(real)])

    def test_runtime_stage_installs_run_time_libraries_only(self):
        runs = [r for r in self.steps(self.runtime, "RUN") if "install-deps.sh" in r]
        self.assertEqual(len(runs), 1)
        self.assertIn("install-deps.sh --runtime", runs[0])
        self.assertTrue(any(c.startswith("--from=build ") for c in self.steps(self.runtime, "COPY")))

    def test_runtime_stage_runs_as_a_non_root_user(self):
        users = self.steps(self.runtime, "USER")
        self.assertTrue(users)
        user = users[-1].split(":")[0]
        self.assertNotIn(user, ("root", "0"), "the image's last USER is the one it runs as")
        # Numeric uid:gid, so that runAsNonRoot-style checks can verify it without /etc/passwd.
        self.assertRegex(users[-1], r"^[1-9][0-9]*:[1-9][0-9]*$")

    def test_ldd_check_is_not_hidden_by_a_pipe(self):
        runs = [r for r in self.steps(self.runtime, "RUN") if "ldd " in r]
        self.assertEqual(len(runs), 1)
        self.assertNotRegex(runs[0], r"ldd [^&|]*\|", "a pipe ignores ldd's own exit status")

    def test_nvidia_driver_capabilities(self):
        env = {}
        for args in self.steps(self.runtime, "ENV"):
            env.update(key_values(args))
        self.assertEqual(env.get("NVIDIA_DRIVER_CAPABILITIES"), "compute,utility")

    def test_entrypoint_and_default_command(self):
        entrypoint = json.loads(self.steps(self.runtime, "ENTRYPOINT")[-1])
        self.assertEqual(len(entrypoint), 1, "exec form, the script alone")
        copies = [shlex.split(c) for c in self.steps(self.runtime, "COPY")]
        sources = {c[-1]: c[-2] for c in copies}
        self.assertEqual(sources.get(entrypoint[0]), "docker/entrypoint")
        command = json.loads(self.steps(self.runtime, "CMD")[-1])
        self.assertTrue(all(arg.startswith("--") for arg in command), "flags for cnnbench")
        self.assertIn("--model=resnet50", command)

    def test_oci_labels(self):
        labels = {}
        for args in self.steps(self.runtime, "LABEL"):
            labels.update(key_values(args))
        for key in ("title", "description", "version", "source"):
            self.assertIn(f"org.opencontainers.image.{key}", labels)
        self.assertEqual(labels["org.opencontainers.image.title"], "cnnbench")
        self.assertEqual(labels["org.opencontainers.image.version"], "${CNNBENCH_VERSION}")
        project = re.search(r"project\(cnnbench VERSION ([0-9.]+)",
                            (support.REPO / "CMakeLists.txt").read_text()).group(1)
        self.assertEqual(self.stage_args(self.runtime)["CNNBENCH_VERSION"], project)
        has_license = any((support.REPO / n).exists() for n in ("LICENSE", "LICENSE.txt", "COPYING"))
        self.assertEqual("org.opencontainers.image.licenses" in labels, has_license)

    def test_dockerignore_keeps_builds_and_git_out(self):
        patterns = {line.strip().rstrip("/") for line in DOCKERIGNORE.read_text().splitlines()
                    if line.strip() and not line.startswith("#")}
        self.assertTrue({"build", ".git"} <= patterns)


if __name__ == "__main__":
    unittest.main()
