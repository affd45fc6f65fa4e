// Which devices a run trains on: --device and --num_gpus against the GPUs this
// process was given (NVIDIA_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES, what CUDA
// enumerates) and how it was launched. Never falls back silently: GPUs that
// were allocated but cannot be used are an error, not a CPU run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/discovery/device_list.h"
#include "bench/discovery/environment.h"
#include "kernels/backend.h"
#include "kernels/gpu_info.h"
#include "mpi/launch.h"

namespace cnnbench::bench {

/// Which device kind to train on (--device). Auto: GPUs when any are allocated
/// or visible, else the CPU (the header says which and why).
enum class DeviceChoice { Auto, Cpu, Gpu };

/// What the command line asks of the devices.
struct DeviceRequest {
  DeviceChoice device = DeviceChoice::Auto;  ///< --device
  int num_gpus = 0;                          ///< --num_gpus; 0 = every GPU given
  std::vector<int> scaling_sweep;            ///< --scaling_sweep; empty = none
};

/// The outcome of select_devices.
struct DeviceSelection {
  std::string kind;           ///< "cpu" or "gpu"
  std::string reason;         ///< why, for the header's "Device:" line
  DeviceDiscovery discovery;  ///< every GPU this process was given, and where the list came from
  /// GPU runs: the GPUs this process trains on, in CUDA ordinal order: the first
  /// --num_gpus of discovery.devices, or all of them under a launcher (each rank
  /// then takes the one of its local rank) and for --scaling_sweep (each run
  /// takes the first N). Empty on the CPU.
  std::vector<DeviceEntry> gpus;
};

/// Decides the device kind and the GPUs. `env` gives NVIDIA_VISIBLE_DEVICES and
/// CUDA_VISIBLE_DEVICES; `gpus` is kernels::enumerate_gpus().
///
/// Throws UsageError (exit 2) for a malformed NVIDIA_VISIBLE_DEVICES or
/// CUDA_VISIBLE_DEVICES (naming the variable, the value and the valid forms),
/// --num_gpus above the GPUs given, --num_gpus > 1 under a launcher, and
/// --num_gpus or --scaling_sweep on a run that has no GPU. Throws RunError
/// (exit 1) when GPUs were allocated or asked for (--device=gpu) but cannot be
/// used, with the allocation, what CUDA shows and the likely cause.
DeviceSelection select_devices(const DeviceRequest& request, const mpi::LaunchInfo& launch,
                               const EnvLookup& env, const kernels::GpuEnumeration& gpus);

/// The backend for `selection` (a fresh one per call: each training thread
/// compiles with its own). Throws RunError when the GPU backend cannot run
/// here, naming the GPUs it was meant for.
std::unique_ptr<kernels::Backend> make_backend(const DeviceSelection& selection);

/// The CPU as the header and the result list it: ordinal -1, the model name
/// (or "CPU" where /proc/cpuinfo gives none).
DeviceEntry cpu_device_entry(const Environment& environment);

}  // namespace cnnbench::bench
