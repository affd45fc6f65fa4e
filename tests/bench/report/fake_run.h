// A GPU run's header figures for the report tests: resnet50 in fp16 on the given
// GPUs, the same per-device batch on each.
#pragma once

#include <vector>

#include "bench/report/run_result.h"
#include "bench/telemetry/gpu_sample.h"

namespace cnnbench::bench::testing {

/// RunInfo of a resnet50 fp16 GPU run on `gpus` (CUDA ordinal, UUID), each
/// named `name`, with `per_device_batch` images per GPU over `world_size` ranks
/// (global batch = per_device_batch × GPUs).
inline RunInfo fake_gpu_run(const std::vector<telemetry::GpuId>& gpus, int per_device_batch, int world_size = 1,
                            const char* name = "Fake H100") {
  RunInfo info;
  info.model = "resnet50";
  info.precision = "fp16 (dynamic loss scaling)";
  info.device_kind = "gpu";
  info.world_size = world_size;
  info.per_device_batch = per_device_batch;
  info.global_batch = per_device_batch * static_cast<int>(gpus.size());
  for (const telemetry::GpuId& id : gpus) {
    DeviceEntry d;
    d.ordinal = id.index;
    d.uuid = id.uuid;
    d.name = name;
    info.devices.push_back(d);
  }
  return info;
}

}  // namespace cnnbench::bench::testing
