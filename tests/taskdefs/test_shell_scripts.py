"""shellcheck passes on every shell script of the repository: the files git tracks or
would track (untracked but not ignored), outside build/, that end in .sh or .bash or
start with a shell's #! line."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import unittest

import support

SHELLCHECK = support.require_program("shellcheck")
SHEBANG_RE = re.compile(rb"^#!\s*\S*/(env\s+)?(sh|bash|dash|ksh)\b")
# Scripts that must be found: if the search misses them, it misses others too.
KNOWN = {"docker/install-deps.sh", "docker/entrypoint", ".ci/run", "taskdefs/driver-libs.sh"}


def candidate_files() -> list[str]:
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=support.REPO, capture_output=True, check=True, timeout=60).stdout
        return sorted({p for p in listed.decode().split("\0") if p})
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (an exported tarball): walk the tree instead.
        found = []
        for folder, dirs, files in os.walk(support.REPO):
            dirs[:] = [d for d in dirs if d not in (".git", "build")]
            found += [os.path.relpath(os.path.join(folder, f), support.REPO) for f in files]
        return sorted(found)


def is_shell_script(path: pathlib.Path) -> bool:
    if path.suffix in (".sh", ".bash"):
        return True
    with path.open("rb") as f:
        return bool(SHEBANG_RE.match(f.readline()))


def shell_scripts() -> list[str]:
    scripts = []
    for name in candidate_files():
        path = support.REPO / name
        if name.startswith("build/") or not path.is_file() or path.is_symlink():
            continue
        if is_shell_script(path):
            scripts.append(name)
    return scripts


class ShellScripts(unittest.TestCase):
    def test_shellcheck(self):
        scripts = shell_scripts()
        self.assertTrue(KNOWN <= set(scripts), f"not found: {KNOWN - set(scripts)}")
        run = subprocess.run([SHELLCHECK, "--external-sources", *scripts], cwd=support.REPO,
                             text=True, capture_output=True, timeout=300)
        self.assertEqual(run.returncode, 0, f"{' '.join(scripts)}\n{run.stdout}{run.stderr}")


if __name__ == "__main__":
    unittest.main()
