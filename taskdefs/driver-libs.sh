#!/usr/bin/env bash
# Gathers this host's NVIDIA driver user-space libraries and nvidia-smi into one folder
# (default /opt/nvidia-driver: lib64/ and bin/) for the "devices" task definition, which
# runs on hosts without the NVIDIA container runtime: the task mounts the folder
# read-only at /usr/local/nvidia and puts its lib64 on LD_LIBRARY_PATH.
#
# Only the driver's own libraries go there. Mounting the host's whole /usr/lib64 instead
# would put the host's libc and libstdc++ ahead of the image's on LD_LIBRARY_PATH.
# The libraries must match the loaded kernel module: run again after a driver update.
#
# Usage (as root, on the container instance): driver-libs.sh [FOLDER]
set -euo pipefail

dest=${1:-/opt/nvidia-driver}
ldconfig=$(command -v ldconfig || echo /sbin/ldconfig)

# What NVIDIA's container toolkit mounts for the compute and utility capabilities:
# the CUDA driver API, its debugger and PTX/NVVM JIT compilers, and NVML.
required=(libcuda.so.1 libnvidia-ml.so.1)
optional=(libcudadebugger.so.1 libnvidia-ptxjitcompiler.so.1 libnvidia-nvvm.so.4)

# The library paths ldconfig knows, as "name path" lines, for this machine's ABI only.
known=$("$ldconfig" -p | awk '/=>/ && /x86-64|AArch64/ {print $1, $NF}')

staging="$dest.new"
rm -rf "$staging"
mkdir -p "$staging/lib64" "$staging/bin"

for lib in "${required[@]}" "${optional[@]}"; do
  path=$(awk -v name="$lib" '$1 == name {print $2; exit}' <<<"$known")
  if [ -z "$path" ]; then
    case " ${required[*]} " in
      *" $lib "*) echo "driver-libs.sh: $lib not found: is the NVIDIA driver installed?" >&2; exit 1 ;;
    esac
    continue
  fi
  # -L: copy the versioned file the soname link points to, under the soname.
  cp -L "$path" "$staging/lib64/$lib"
done

# Newer drivers split a compiler library out, named after the full driver version.
gpucomp=$(awk '$1 ~ /^libnvidia-gpucomp[.]so[.][0-9.]+$/ {print $2; exit}' <<<"$known")
if [ -n "$gpucomp" ]; then
  cp -L "$gpucomp" "$staging/lib64/"
fi

if smi=$(command -v nvidia-smi); then
  cp -L "$smi" "$staging/bin/nvidia-smi"
fi

# /dev/nvidia-uvm exists only once a CUDA program has run on the host, or after this.
if [ ! -e /dev/nvidia-uvm ] && command -v nvidia-modprobe >/dev/null; then
  nvidia-modprobe -u -c=0
fi

rm -rf "$dest"
mv "$staging" "$dest"
