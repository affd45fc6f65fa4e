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
#   --runtime   only the shared libraries the cnnbench binary needs at run time, Open
#               MPI's launcher, and OpenSSH (docker/mnp-launch across the nodes of a job)
#
# Works on Debian 12 (oneDNN 2.x: libdnnl2; libopenmpi3) and Ubuntu 24.04 (oneDNN 3.x:
# libdnnl3; libopenmpi3t64): run-time library package names are looked up rather than
# hard-coded. Debian builds oneDNN with its OpenCL GPU runtime, so its CMake config
# needs the OpenCL headers. Where a CUDA toolkit or runtime is present (NVIDIA's CUDA
# images) NCCL is added from the CUDA apt repository if the image lacks it.
set -euo pipefail

mode=build
case "${1:-}" in
  "") ;;
  --runtime) mode=runtime ;;
  --test) mode="test" ;;
  *) echo "install-deps.sh: unknown argument '$1' (valid: --runtime, --test or nothing)" >&2; exit 2 ;;
esac

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

$SUDO apt-get update -qq

# Prints the newest package named PREFIX... that matches REGEX and can be installed.
# Library packages carry their ABI in the name, and a name a release has dropped may
# survive as a virtual package (no candidate), so each is asked for a candidate.
newest_installable() {
  local name
  { apt-cache pkgnames "$1" | grep -E "$2" || true; } | sort -V -r | while read -r name; do
    if LC_ALL=C apt-cache policy "$name" | grep '^ *Candidate: [^(]' >/dev/null; then
      echo "$name"
      break
    fi
  done
}

# The CUDA release (major.minor) of the toolkit or runtime here, or nothing: NVIDIA's
# images set CUDA_VERSION; elsewhere nvcc says.
cuda_release() {
  local nvcc
  if [ -n "${CUDA_VERSION:-}" ]; then
    echo "$CUDA_VERSION" | cut -d. -f1,2
  elif nvcc=$(command -v nvcc || command -v /usr/local/cuda/bin/nvcc); then
    "$nvcc" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p'
  fi
}

# NCCL for the CUDA backend: NVIDIA's runtime images carry libnccl2 and the devel images
# libnccl-dev, and a toolkit unpacked by hand may carry both. Only where CUDA is present
# and NCCL is not, take the CUDA repository's build for the same CUDA release.
install_nccl() {  # $1: runtime | build
  local cuda lib ldconfig pkg ver specs=() pkgs=(libnccl2)
  cuda=$(cuda_release)
  [ -n "$cuda" ] || return 0
  lib='libnccl\.so\.2 '
  if [ "$1" = build ]; then lib='libnccl\.so '; pkgs+=(libnccl-dev); fi
  ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)
  if "$ldconfig" -p | grep "$lib" >/dev/null; then return 0; fi
  for pkg in "${pkgs[@]}"; do
    ver=$({ apt-cache madison "$pkg" 2>/dev/null || true; } | awk -F'|' '{gsub(/ /, "", $2); print $2}' \
      | { grep -E "\+cuda${cuda//./\\.}\$" || true; } | sort -V | tail -n 1)
    if [ -z "$ver" ]; then
      echo "install-deps.sh: CUDA $cuda is here but NCCL is not, and the apt sources have no $pkg for it" >&2
      return 0
    fi
    specs+=("$pkg=$ver")
  done
  $SUDO apt-get install -y -qq --no-install-recommends "${specs[@]}" >/dev/null
}

dnnl_runtime=$(newest_installable libdnnl '^libdnnl[0-9][0-9.]*$')
mpi_runtime=$(newest_installable libopenmpi '^libopenmpi[0-9]+(t64)?$')
# Google Benchmark's library, for cnnbench_micro: libbenchmark1debian on Debian 12,
# libbenchmark1.8.3 on Ubuntu 24.04.
benchmark_runtime=$(newest_installable libbenchmark '^libbenchmark[0-9][0-9a-z.]*$')
if [ -z "$dnnl_runtime" ] || [ -z "$mpi_runtime" ] || [ -z "$benchmark_runtime" ]; then
  echo "install-deps.sh: the apt sources lack an installable oneDNN runtime (libdnnlN: '$dnnl_runtime')" \
    "or Open MPI runtime (libopenmpiN: '$mpi_runtime') or Google Benchmark runtime" \
    "(libbenchmarkN: '$benchmark_runtime')" >&2
  exit 1
fi

if [ "$mode" = runtime ]; then
  $SUDO apt-get install -y -qq --no-install-recommends \
    "$dnnl_runtime" libgomp1 openmpi-bin "$mpi_runtime" "$benchmark_runtime" ca-certificates \
    openssh-client openssh-server >/dev/null
  install_nccl runtime
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
install_nccl build
echo "install-deps.sh: installed build dependencies (oneDNN runtime: $dnnl_runtime, Open MPI runtime: $mpi_runtime)"

if [ "$mode" = test ]; then
  # clang with compiler-rt: the libFuzzer targets run briefly in CI (tests/fuzz).
  # openssh: the multi-node launcher's test runs sshd on loopback (tests/taskdefs).
  $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv shellcheck \
    clang libclang-rt-dev openssh-client openssh-server >/dev/null
  venv=${CNNBENCH_TEST_VENV:-/opt/cnnbench/test-venv}
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  $SUDO mkdir -p "$(dirname "$venv")"
  $SUDO /usr/bin/python3 -m venv "$venv"
  $SUDO "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/tests/requirements.txt"
  echo "install-deps.sh: test tools installed in $venv"
fi
