// Work for the GPU telemetry test: keeps the GPUs busy so that NVML has
// something to see. Implemented by gpu_busy.cu, or gpu_busy_unavailable.cpp in a
// build without CUDA.
#pragma once

#include <string>

namespace cnnbench::bench::telemetry::fake {

/// Runs a spinning kernel on every SM of every visible GPU for about `ms`
/// milliseconds and waits for it. Returns "" or why the GPUs could not be kept busy.
std::string keep_gpus_busy(int ms);

}  // namespace cnnbench::bench::telemetry::fake
