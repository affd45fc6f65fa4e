#!/usr/bin/env bash
# Installs the packages cnnbench builds and tests against, from the distribution's
# repositories only (no vendored code). Used by .ci/run and by docker/Dockerfile.
#
# Usage: docker/install-deps.sh [--runtime | --test]
#   (default)   build dependencies: compiler, CMake, oneDNN, CLI11, nlohmann/json,
#               GoogleTest, Google Benchmark, Open MPI
#   --test      the build dependencies, shellcheck, and a Python environment with
#               tests/requirements.txt (PyPI) at $CNNBENCH_TEST_VENV
#               (default /opt/cnnbench/test-venv), which the test suite uses
#   --runtime   only the shared libraries the cnnbench binary needs at run time
#
# Works on Debian 12 (oneDNN 2.x: libdnnl2) and Ubuntu 24.04 (oneDNN 3.x: libdnnl3):
# the oneDNN runtime package name is looked up rather than hard-coded. Debian builds
# oneDNN with its OpenCL GPU runtime, so its CMake config needs the OpenCL headers.
set -euo pipefail

mode=build
case "${1:-}" in
  "") ;;
  --runtime) mode=runtime ;;
  --test) mode=test ;;
  *) echo "install-deps.sh: unknown argument '$1' (valid: --runtime, --test or nothing)" >&2; exit 2 ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

$SUDO apt-get update -qq

# The oneDNN runtime library: libdnnl2 on Debian 12, libdnnl3 on Ubuntu 24.04.
dnnl_runtime=$(apt-cache pkgnames libdnnl | grep -E '^libdnnl[0-9]+$' | sort -V | tail -n 1 || true)
if [ -z "$dnnl_runtime" ]; then
  echo "install-deps.sh: no oneDNN runtime package (libdnnlN) in the apt sources" >&2
  exit 1
fi

if [ "$mode" = runtime ]; then
  $SUDO apt-get install -y -qq --no-install-recommends \
    "$dnnl_runtime" libgomp1 openmpi-bin libopenmpi3 ca-certificates >/dev/null
  exit 0
fi

$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build pkg-config git \
  libdnnl-dev "$dnnl_runtime" ocl-icd-opencl-dev opencl-c-headers \
  libcli11-dev nlohmann-json3-dev \
  googletest libgtest-dev libgmock-dev \
  libbenchmark-dev \
  libopenmpi-dev openmpi-bin \
  >/dev/null
echo "install-deps.sh: installed build dependencies (oneDNN runtime: $dnnl_runtime)"

if [ "$mode" = test ]; then
  $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv shellcheck >/dev/null
  venv=${CNNBENCH_TEST_VENV:-/opt/cnnbench/test-venv}
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  $SUDO mkdir -p "$(dirname "$venv")"
  $SUDO /usr/bin/python3 -m venv "$venv"
  $SUDO "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/tests/requirements.txt"
  echo "install-deps.sh: test tools installed in $venv"
fi
