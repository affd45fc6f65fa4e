#include "bench/discovery/device_selection.h"

#include <algorithm>
#include <string>
#include <utility>

#include "bench/status.h"
#include "kernels/error.h"

namespace cnnbench::bench {
namespace {

std::string spelled_int(const char* flag, int value) {
  return std::string("--") + flag + "=" + std::to_string(value);
}

std::string sweep_text(const std::vector<int>& counts) {
  std::string s;
  for (const int c : counts) {
    if (!s.empty()) s += ',';
    s += std::to_string(c);
  }
  return "--scaling_sweep=" + s;
}

/// GPU counts asked for that need GPUs, on a run that has none.
void reject_gpu_flags_without_gpus(const DeviceRequest& request, const std::string& why) {
  if (!request.scaling_sweep.empty()) {
    throw UsageError(sweep_text(request.scaling_sweep) + ": the scaling sweep runs on GPUs, and " +
                     why + "; it needs at least " + std::to_string(request.scaling_sweep.back()) +
                     " GPUs");
  }
  if (request.num_gpus > 0) {
    throw UsageError(spelled_int("num_gpus", request.num_gpus) + ": " + why +
                     "; use --device=cpu (one device per process) or give the process GPUs");
  }
}

}  // namespace

DeviceSelection select_devices(const DeviceRequest& request, const mpi::LaunchInfo& launch,
                               const EnvLookup& env, const kernels::GpuEnumeration& gpus) {
  // Both variables are checked on every run, the CPU's included: a malformed
  // value is a configuration error wherever it is found.
  const VisibleDevices nvidia = parse_nvidia_visible_devices(env("NVIDIA_VISIBLE_DEVICES"));
  if (!nvidia.ok()) throw UsageError(nvidia.error);
  const VisibleDevices cuda = parse_cuda_visible_devices(env("CUDA_VISIBLE_DEVICES"));
  if (!cuda.ok()) throw UsageError(cuda.error);

  DeviceSelection s;
  s.kind = "cpu";
  if (request.device == DeviceChoice::Cpu) {
    s.reason = "--device=cpu";
    return s;
  }

  s.discovery = match_devices(nvidia, cuda, gpus);
  if (!s.discovery.ok()) {
    // Allocated (or asked for) but unusable: both lists and the likely cause.
    throw RunError((request.device == DeviceChoice::Gpu ? "--device=gpu: " : "") + s.discovery.error);
  }
  if (s.discovery.devices.empty()) {
    const std::string why = "no GPU is allocated or visible: " + s.discovery.source;
    if (request.device == DeviceChoice::Gpu) throw RunError("--device=gpu: no usable GPU: " + why);
    reject_gpu_flags_without_gpus(request, why);
    s.reason = "--device=auto: " + why;
    return s;
  }

  s.kind = "gpu";
  s.reason = (request.device == DeviceChoice::Gpu ? "--device=gpu: " : "--device=auto: ") + s.discovery.source;
  const int given = static_cast<int>(s.discovery.devices.size());
  const std::string valid = "valid: 0 (every GPU) or 1 to " + std::to_string(given) + " here (" +
                            s.discovery.source + ")";
  if (launch.needs_transport()) {
    if (request.num_gpus > 1) {
      throw UsageError(spelled_int("num_gpus", request.num_gpus) + ": under " +
                       mpi::to_string(launch.launcher) +
                       " every rank trains on one GPU (the one of its local rank); start more ranks "
                       "instead (mpirun -np N)");
    }
    if (!request.scaling_sweep.empty()) {
      throw UsageError(sweep_text(request.scaling_sweep) + ": the scaling sweep runs the GPUs of one process "
                       "in turn; start cnnbench without " + mpi::to_string(launch.launcher) +
                       ", or sweep node counts as one job per count (README: Across nodes)");
    }
    s.gpus = s.discovery.devices;
    return s;
  }
  if (!request.scaling_sweep.empty()) {
    if (request.scaling_sweep.back() > given) {
      throw UsageError(sweep_text(request.scaling_sweep) + ": " + std::to_string(request.scaling_sweep.back()) +
                       " GPUs asked for, but this process was given " + std::to_string(given) + " (" +
                       s.discovery.source + ")");
    }
    s.gpus = s.discovery.devices;
    return s;
  }
  if (request.num_gpus > given) {
    throw UsageError(spelled_int("num_gpus", request.num_gpus) + ": more GPUs than this process was given; " + valid);
  }
  const int n = request.num_gpus > 0 ? request.num_gpus : given;
  s.gpus.assign(s.discovery.devices.begin(), s.discovery.devices.begin() + n);
  return s;
}

std::unique_ptr<kernels::Backend> make_backend(const DeviceSelection& selection) {
  if (selection.kind == "cpu") return kernels::make_cpu_backend();
  try {
    return kernels::make_cuda_backend();
  } catch (const kernels::BackendUnavailable& e) {
    std::string list;
    for (const auto& d : selection.gpus) {
      if (!list.empty()) list += ", ";
      list += d.uuid;
    }
    throw RunError("GPUs were selected (" + selection.reason + ": " + list +
                   ") but the CUDA backend cannot run: " + e.what());
  }
}

DeviceEntry cpu_device_entry(const Environment& environment) {
  DeviceEntry d;
  d.ordinal = -1;
  d.name = environment.cpu_model.empty() ? "CPU" : environment.cpu_model;
  return d;
}

}  // namespace cnnbench::bench
