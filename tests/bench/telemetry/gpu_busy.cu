#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "tests/bench/telemetry/gpu_busy.h"

namespace cnnbench::bench::telemetry::fake {
namespace {

__device__ uint64_t global_ns() {
  uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Multiply-adds until `ns` nanoseconds have passed; `sink` keeps them from being optimised away.
__global__ void spin(uint64_t ns, float* sink) {
  const uint64_t end = global_ns() + ns;
  float x = static_cast<float>(threadIdx.x);
  while (global_ns() < end) {
    for (int i = 0; i < 256; ++i) x = x * 0.999f + 0.001f;
  }
  if (x == -1.0f) *sink = x;
}

std::string why(const char* call, cudaError_t e) { return std::string(call) + ": " + cudaGetErrorString(e); }

}  // namespace

std::string keep_gpus_busy(int ms) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) return why("cudaGetDeviceCount", e);
  const uint64_t ns = static_cast<uint64_t>(ms) * 1000000ULL;
  std::vector<float*> sinks(static_cast<size_t>(count), nullptr);
  const auto release = [&sinks] {
    for (size_t d = 0; d < sinks.size(); ++d) {
      if (sinks[d] == nullptr) continue;
      cudaSetDevice(static_cast<int>(d));
      cudaFree(sinks[d]);
    }
  };
  std::string error;
  for (int d = 0; d < count && error.empty(); ++d) {
    int sms = 0;
    if (cudaError_t e = cudaSetDevice(d); e != cudaSuccess) {
      error = why("cudaSetDevice", e);
    } else if (e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d); e != cudaSuccess) {
      error = why("cudaDeviceGetAttribute", e);
    } else if (e = cudaMalloc(&sinks[static_cast<size_t>(d)], sizeof(float)); e != cudaSuccess) {
      error = why("cudaMalloc", e);
    } else {
      spin<<<sms * 4, 256>>>(ns, sinks[static_cast<size_t>(d)]);
      if (e = cudaGetLastError(); e != cudaSuccess) error = why("spin<<<>>>", e);
    }
  }
  for (int d = 0; d < count; ++d) {
    cudaSetDevice(d);
    if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess && error.empty())
      error = why("cudaDeviceSynchronize", e);
  }
  release();
  return error;
}

}  // namespace cnnbench::bench::telemetry::fake
