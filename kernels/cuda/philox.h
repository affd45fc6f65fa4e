// Philox4x32-10, the counter-based random number generator of Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3" (SC'11), as in Random123
// (philox4x32_R with R = 10). A pure function of (counter, key): any element of a
// random stream is computed independently, with no state to carry between
// kernels, which makes dropout masks reproducible and CUDA-graph capturable.
// Host and device; the tests use the host side as their reference.
#pragma once

#include <cuda_runtime.h>  // __host__ / __device__ for host compilers

#include <cstdint>

namespace cnnbench::kernels::cuda {

/// Four 32-bit random words.
struct Philox4 {
  uint32_t v[4];
};

__host__ __device__ __forceinline__ uint32_t philox_mulhi(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((uint64_t{a} * b) >> 32);
#endif
}

/// Philox4x32 with 10 rounds on counter (c0, c1, c2, c3) and key (k0, k1).
/// Matches Random123's known-answer vectors (tests/kat_vectors, "philox4x32 10").
__host__ __device__ __forceinline__ Philox4 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2,
                                                          uint32_t c3, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53U, kMul1 = 0xCD9E8D57U;    // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9U, kWeyl1 = 0xBB67AE85U;  // key schedule increments
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kWeyl0;
      k1 += kWeyl1;
    }
    const uint32_t hi0 = philox_mulhi(kMul0, c0), lo0 = kMul0 * c0;
    const uint32_t hi1 = philox_mulhi(kMul1, c2), lo1 = kMul1 * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// A uniform number in [0, 1) from the top 24 bits of `u` (exact in fp32).
__host__ __device__ __forceinline__ float philox_uniform(uint32_t u) {
  return static_cast<float>(u >> 8) * 0x1p-24F;
}

/// A uniform number in (0, 1), never 0 (safe for log): the top 23 bits of `u`
/// plus one half, times 2^-23 (24 significant bits: exact in fp32).
__host__ __device__ __forceinline__ float philox_uniform_open(uint32_t u) {
  return (static_cast<float>(u >> 9) + 0.5F) * 0x1p-23F;
}

}  // namespace cnnbench::kernels::cuda
