#!/usr/bin/env bash
# Downloads, on a build machine with network access, the Debian packages that a
# cnnbench build needs and the lab GPU host lacks (see tools/gpu_suite.sh):
# nlohmann/json, CLI11, GoogleTest/GoogleMock and Google
# Benchmark, and with --with-onednn oneDNN for the CPU backend (the GPU-vs-CPU
# tests compare against it) with the OpenCL ICD loader and headers its CMake
# package and library need (libdnnl2 links libOpenCL.so.1; libgomp and
# libstdc++ are on the host already). Nothing is installed: the .deb files go
# to a git-ignored folder that the GPU run takes along, and gpu_suite.sh
# unpacks them with dpkg -x under .gpu/prefix there.
#
# Usage: tools/fetch_gpu_deps.sh [--with-onednn] [--dest DIR]
#   --with-onednn  also fetch oneDNN (about 7 MB of .debs, 40 MB unpacked)
#   --dest DIR     where the .debs go (default: .gpu/debs in the repository;
#                  gpu_suite.sh reads them from SUITE_WORK_DIR/debs)
# The total is checked against 50 MB, what a GPU run may take along.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.gpu/debs"
with_onednn=0
while (($#)); do
  case "$1" in
    --with-onednn) with_onednn=1 ;;
    --dest)
      if (($# < 2)) || [[ -z "$2" ]]; then
        echo "fetch_gpu_deps.sh: --dest needs a folder" >&2
        exit 2
      fi
      dest="$2"
      shift ;;
    --dest=*) dest="${1#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "fetch_gpu_deps.sh: unknown argument '$1' (valid: --with-onednn, --dest DIR)" >&2; exit 2 ;;
  esac
  shift
done

packages=(nlohmann-json3-dev libcli11-dev googletest libgtest-dev libgmock-dev
          libbenchmark-dev libbenchmark1debian)
if ((with_onednn)); then
  packages+=(libdnnl2 libdnnl-dev ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers
             opencl-clhpp-headers)
fi

for tool in apt-get dpkg; do
  if ! command -v "$tool" > /dev/null; then
    echo "fetch_gpu_deps.sh: $tool not found: run this on a Debian or Ubuntu build machine" >&2
    exit 1
  fi
done

# The GPU host is x86-64: fetch amd64 packages whatever this machine is.
apt_opts=()
if [[ "$(dpkg --print-architecture)" != amd64 ]]; then
  lists=/tmp/cnnbench-amd64-lists
  mkdir -p "$lists/partial"
  apt_opts=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
  apt-get "${apt_opts[@]}" update
fi
# Downloading as root into a folder the _apt user cannot write is fine here.
apt_opts+=(-oAPT::Sandbox::User=root)

mkdir -p "$dest"
rm -f "$dest"/*.deb
(cd "$dest" && apt-get "${apt_opts[@]}" download "${packages[@]}") || {
  echo "fetch_gpu_deps.sh: apt-get download failed; run 'apt-get update' and try again" >&2
  exit 1
}

total=$(du -cb "$dest"/*.deb | tail -1 | cut -f1)
echo "fetch_gpu_deps.sh: ${#packages[@]} packages, $((total / 1024)) KiB in $dest"
ls -1 "$dest"
if ((total > 50 * 1000 * 1000)); then
  echo "fetch_gpu_deps.sh: $((total / 1000000)) MB is more than the 50 MB a GPU run may take along" >&2
  exit 1
fi
