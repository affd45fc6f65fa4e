"""Shared by the tests in tests/taskdefs: where the repository is, how to skip, and a
PATH of fake programs for scripts run under test."""
from __future__ import annotations

import importlib
import os
import pathlib
import shutil
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

# ctest reports this exit status as "skipped" (SKIP_RETURN_CODE in CMakeLists.txt).
SKIP_RETURN_CODE = 77


def skip(reason: str) -> None:
    print(f"SKIPPED: {reason}; `bash docker/install-deps.sh --test` installs the test tools")
    sys.exit(SKIP_RETURN_CODE)


def require_module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:
        skip(f"Python module {name} is missing from {sys.executable}")


def require_program(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        skip(f"{name} is not on PATH")
    return path


def tool_dir(root: pathlib.Path, programs: list[str]) -> pathlib.Path:
    """A folder of links to the named system programs, to build a PATH that holds
    exactly what a script under test may find (no ssh, no real cnnbench)."""
    tools = root / "tools"
    tools.mkdir()
    for program in programs:
        found = shutil.which(program, path="/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        if found is None:
            raise RuntimeError(f"{program} not found on this machine")
        os.symlink(found, tools / program)
    return tools


def write_program(folder: pathlib.Path, name: str, text: str) -> pathlib.Path:
    """Writes an executable script into folder."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(text)
    path.chmod(0o755)
    return path
