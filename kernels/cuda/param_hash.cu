#include <stdexcept>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/param_hash.cuh"

namespace cnnbench::kernels::cuda {
namespace {

constexpr int kHashThreads = 256;

__global__ void __launch_bounds__(kHashThreads)
    param_hash_chunks_kernel(const uint32_t* words, const ParamHashChunk* chunks, uint64_t* out) {
  __shared__ uint64_t partial[kHashThreads];
  const ParamHashChunk chunk = chunks[blockIdx.x];
  uint64_t s = 0;
  for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x) {
    s += param_hash_term(static_cast<uint64_t>(i), words[i]);
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

}  // namespace

void launch_param_hash_chunks(const float* flat, const ParamHashChunk* chunks, int64_t count,
                              uint64_t* out, cudaStream_t stream) {
  if (count < 0 || count > 0x7FFFFFFF) {
    throw std::invalid_argument("launch_param_hash_chunks: chunk count " + std::to_string(count) +
                                " out of range");
  }
  if (count == 0) return;
  param_hash_chunks_kernel<<<static_cast<unsigned>(count), kHashThreads, 0, stream>>>(
      reinterpret_cast<const uint32_t*>(flat), chunks, out);
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace cnnbench::kernels::cuda
