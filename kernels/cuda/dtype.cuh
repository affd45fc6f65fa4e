// Device helpers for the storage types of activations (float, __half,
// __nv_bfloat16): conversion to and from fp32, in which all arithmetic is done,
// and vector loads/stores of up to 16 bytes. Included by our .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace cnnbench::kernels::cuda {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Rounds to nearest even, as PyTorch's .half() / .bfloat16() do.
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

/// Elements of T in one 16-byte access: 4 for float, 8 for the 16-bit types.
template <typename T>
inline constexpr int kPack = 16 / static_cast<int>(sizeof(T));

/// The unsigned integer type of each access width, so that one access of N
/// elements compiles to a single load or store instruction.
template <int kBytes>
struct BitsOf;
template <>
struct BitsOf<16> { using Type = uint4; };
template <>
struct BitsOf<8> { using Type = uint2; };
template <>
struct BitsOf<4> { using Type = uint32_t; };
template <>
struct BitsOf<2> { using Type = uint16_t; };
template <>
struct BitsOf<1> { using Type = uint8_t; };

/// Loads N consecutive elements at `p`, which must be aligned to N·sizeof(U).
template <int N, typename U>
__device__ __forceinline__ void load_raw(const U* p, U (&v)[N]) {
  using Bits = typename BitsOf<N * static_cast<int>(sizeof(U))>::Type;
  const Bits bits = *reinterpret_cast<const Bits*>(p);
  memcpy(&v, &bits, sizeof(Bits));
}

/// Stores N consecutive elements at `p`, which must be aligned to N·sizeof(U).
template <int N, typename U>
__device__ __forceinline__ void store_raw(U* p, const U (&v)[N]) {
  using Bits = typename BitsOf<N * static_cast<int>(sizeof(U))>::Type;
  Bits bits;
  memcpy(&bits, &v, sizeof(Bits));
  *reinterpret_cast<Bits*>(p) = bits;
}

/// Loads N elements of T at `p` (aligned to N·sizeof(T)) as fp32.
template <int N, typename T>
__device__ __forceinline__ void load_floats(const T* p, float (&f)[N]) {
  T v[N];
  load_raw<N>(p, v);
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = to_float(v[i]);
}

/// Rounds N fp32 values to T and stores them at `p` (aligned to N·sizeof(T)).
template <int N, typename T>
__device__ __forceinline__ void store_floats(T* p, const float (&f)[N]) {
  T v[N];
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = from_float<T>(f[i]);
  store_raw<N>(p, v);
}

/// max(v, 0) that lets NaN through, as torch.relu does.
__device__ __forceinline__ float relu_keep_nan(float v) { return v < 0.0F ? 0.0F : v; }

}  // namespace cnnbench::kernels::cuda
