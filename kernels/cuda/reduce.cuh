// Block-wide reductions shared by our .cu files (not a public interface). Every
// reduction runs in a fixed order (xor-shuffle trees within warps, then across
// the warps' results), so results are bitwise reproducible run to run.
#pragma once

#include <cuda_runtime.h>

namespace cnnbench::kernels::cuda::detail {

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// Reduces one value per thread over the whole block (blockDim.x a multiple of
/// 32, at most 1024; 1-D blocks) and returns the result to every thread.
/// `identity` is op's neutral element; `smem` holds 32 floats. Contains
/// __syncthreads: call from all threads of the block.
template <typename Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float identity, float* smem) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_xor_sync(0xFFFFFFFFU, v, off));
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? smem[lane] : identity;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = op(v, __shfl_xor_sync(0xFFFFFFFFU, v, off));
  return v;
}

}  // namespace cnnbench::kernels::cuda::detail
