"""taskdefs/driver-libs.sh, which gathers the driver libraries the "devices" task
definition mounts: run against a fake ldconfig that lists files in a temporary folder."""
from __future__ import annotations

import pathlib
import subprocess
import tempfile
import unittest

import support

SCRIPT = support.REPO / "taskdefs" / "driver-libs.sh"
DRIVER = "580.65.06"


class DriverLibsTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self._tmp.name)
        self.tools = support.tool_dir(self.root, ["sh", "bash", "cat", "awk", "cp", "rm", "mkdir", "mv"])
        self.fakes = self.root / "fakes"
        self.host = self.root / "host"
        self.host.mkdir()
        self.dest = self.root / "nvidia-driver"
        # ldconfig lists both ABIs on a multilib host; only this machine's may be taken.
        self.libraries = {"libcuda.so.1": "x86-64", "libnvidia-ml.so.1": "x86-64",
                          "libnvidia-ptxjitcompiler.so.1": "x86-64",
                          f"libnvidia-gpucomp.so.{DRIVER}": "x86-64"}

    def tearDown(self):
        self._tmp.cleanup()

    def install_fake_driver(self):
        lines = []
        for soname, abi in self.libraries.items():
            real = self.host / f"{soname.split('.so')[0]}.so.{DRIVER}"
            real.write_text(f"{soname} {abi}\n")
            link = self.host / soname
            if not link.exists():
                link.symlink_to(real.name)
            lines.append(f"\t{soname} (libc6,{abi}) => {link}")
        lib32 = self.host / "lib32-libcuda.so.1"
        lib32.write_text("32-bit\n")
        lines.insert(0, f"\tlibcuda.so.1 (libc6) => {lib32}")
        listing = "\n".join([f"{len(lines)} libs found in cache `/etc/ld.so.cache'", *lines])
        support.write_program(self.fakes, "ldconfig", f"#!/bin/sh\ncat <<'EOF'\n{listing}\nEOF\n")
        support.write_program(self.fakes, "nvidia-smi", "#!/bin/sh\necho fake nvidia-smi\n")

    def run_script(self) -> subprocess.CompletedProcess:
        return subprocess.run([str(SCRIPT), str(self.dest)], text=True, capture_output=True,
                              env={"PATH": f"{self.fakes}:{self.tools}"}, timeout=30)

    def test_gathers_the_driver_libraries_under_their_sonames(self):
        self.install_fake_driver()
        run = self.run_script()
        self.assertEqual((run.returncode, run.stdout, run.stderr), (0, "", ""))
        lib64 = self.dest / "lib64"
        self.assertEqual(sorted(p.name for p in lib64.iterdir()), sorted(self.libraries))
        for soname in self.libraries:
            copied = lib64 / soname
            self.assertFalse(copied.is_symlink(), "a link would dangle inside the container")
            self.assertEqual(copied.read_text(), f"{soname} x86-64\n")
        self.assertEqual((self.dest / "bin" / "nvidia-smi").read_text().splitlines()[-1],
                         "echo fake nvidia-smi")
        self.assertFalse(pathlib.Path(f"{self.dest}.new").exists())

    def test_replaces_an_older_gathering(self):
        self.install_fake_driver()
        stale = self.dest / "lib64" / "libnvidia-gpucomp.so.470.00"
        stale.parent.mkdir(parents=True)
        stale.write_text("old driver\n")
        self.assertEqual(self.run_script().returncode, 0)
        self.assertFalse(stale.exists())

    def test_without_a_driver_it_fails_and_writes_nothing(self):
        del self.libraries["libcuda.so.1"]
        self.install_fake_driver()
        run = self.run_script()
        self.assertEqual(run.returncode, 1)
        self.assertIn("libcuda.so.1 not found", run.stderr)
        self.assertFalse(self.dest.exists())


if __name__ == "__main__":
    unittest.main()
