// Helpers of the NCCL tests: how many GPUs there are, and device buffers
// filled from and read back into host vectors.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::mpi::testing {

/// GPUs CUDA sees; 0 when there is no driver or device.
inline int gpu_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

/// `values` converted to `dtype` and copied into a new device buffer.
inline kernels::cuda::DeviceBuffer to_device(const std::vector<float>& values,
                                             kernels::DType dtype) {
  const auto n = values.size();
  kernels::cuda::DeviceBuffer buffer(static_cast<int64_t>(n) * kernels::dtype_size(dtype),
                                     "test data");
  if (dtype == kernels::DType::F32) {
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(buffer.get(), values.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  } else if (dtype == kernels::DType::F16) {
    std::vector<__half> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = __float2half(values[i]);
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(buffer.get(), h.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  } else {
    std::vector<__nv_bfloat16> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = __float2bfloat16(values[i]);
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(buffer.get(), h.data(), n * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice));
  }
  return buffer;
}

/// `n` elements of `dtype` at `device_data`, as floats.
inline std::vector<float> to_host(const void* device_data, size_t n, kernels::DType dtype) {
  std::vector<float> out(n);
  if (dtype == kernels::DType::F32) {
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(out.data(), device_data, n * sizeof(float), cudaMemcpyDeviceToHost));
  } else if (dtype == kernels::DType::F16) {
    std::vector<__half> h(n);
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(h.data(), device_data, n * sizeof(__half), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = __half2float(h[i]);
  } else {
    std::vector<__nv_bfloat16> h(n);
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(h.data(), device_data, n * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = __bfloat162float(h[i]);
  }
  return out;
}

}  // namespace cnnbench::mpi::testing
