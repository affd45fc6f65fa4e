#include "kernels/cuda/device.h"

#include <cuda_runtime.h>

namespace cnnbench::kernels::cuda {
namespace {

std::string describe(cudaError_t err, const char* call) {
  (void)cudaGetLastError();  // leave no sticky launch state for the caller
  return std::string("no CUDA device: ") + call + " returned " + cudaGetErrorName(err) + " (" +
         cudaGetErrorString(err) + ")";
}

}  // namespace

std::optional<std::string> cuda_device_missing_reason() {
  int count = 0;
  if (const cudaError_t err = cudaGetDeviceCount(&count); err != cudaSuccess)
    return describe(err, "cudaGetDeviceCount");
  if (count == 0) return std::string("no CUDA device: cudaGetDeviceCount returned 0 devices");
  return std::nullopt;
}

std::optional<std::string> cuda_unavailable_reason() {
  if (auto reason = cuda_device_missing_reason()) return reason;
  // Creating the primary context is where a driver older than the runtime, or a
  // device in exclusive use, fails.
  if (const cudaError_t err = cudaSetDevice(0); err != cudaSuccess)
    return describe(err, "cudaSetDevice(0)");
  if (const cudaError_t err = cudaFree(nullptr); err != cudaSuccess)
    return describe(err, "cudaFree(nullptr)");
  return std::nullopt;
}

}  // namespace cnnbench::kernels::cuda
