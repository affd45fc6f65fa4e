// The canned GPUs of fake_nvml.cpp, for the tests that load it.
#pragma once

#include "bench/telemetry/gpu_sample.h"

namespace cnnbench::bench::telemetry::fake {

inline const GpuId kBusyGpu{0, "GPU-00000000-0000-4000-8000-000000000000"};
inline const GpuId kMigGpu{1, "MIG-11111111-1111-4111-8111-111111111111"};
inline const GpuId kCappedGpu{2, "GPU-22222222-2222-4222-8222-222222222222"};
inline const GpuId kFlakyGpu{3, "GPU-33333333-3333-4333-8333-333333333333"};
inline const GpuId kUnknownGpu{4, "GPU-44444444-4444-4444-8444-444444444444"};

}  // namespace cnnbench::bench::telemetry::fake
