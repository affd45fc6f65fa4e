// Element-wise map kernels shared by our .cu files (not a public interface):
// one thread per pack of V elements (16-byte accesses when every pointer is
// 16-byte aligned, else V = 1); the thread whose pack straddles `count` handles
// the remainder one element at a time. fp32 arithmetic on any storage type.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/launch.h"

namespace cnnbench::kernels::cuda::detail {

/// out[i] = op(a[i]). out may alias a.
template <int V, typename T, typename Op>
__global__ void __launch_bounds__(kBlockThreads)
    map1_kernel(const T* a, T* out, int64_t count, Op op) {  // a, out: (count)
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (base + V <= count) {
    float v[V];
    load_floats<V>(a + base, v);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = op(v[j]);
    store_floats<V>(out + base, v);
  } else {
    for (int64_t i = base; i < count; ++i) out[i] = from_float<T>(op(to_float(a[i])));
  }
}

/// out[i] = op(a[i], b[i]). out may alias a or b.
template <int V, typename T, typename Op>
__global__ void __launch_bounds__(kBlockThreads)
    map2_kernel(const T* a, const T* b, T* out, int64_t count, Op op) {  // a, b, out: (count)
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (base + V <= count) {
    float va[V], vb[V];
    load_floats<V>(a + base, va);
    load_floats<V>(b + base, vb);
#pragma unroll
    for (int j = 0; j < V; ++j) va[j] = op(va[j], vb[j]);
    store_floats<V>(out + base, va);
  } else {
    for (int64_t i = base; i < count; ++i) out[i] = from_float<T>(op(to_float(a[i]), to_float(b[i])));
  }
}

template <typename T, typename Op>
void launch_map1(const T* a, T* out, int64_t count, Op op, cudaStream_t stream) {
  if (count <= 0) return;
  if (aligned16(a) && aligned16(out)) {
    constexpr int V = kPack<T>;
    map1_kernel<V><<<grid_1d(ceil_div(count, V)), kBlockThreads, 0, stream>>>(a, out, count, op);
  } else {
    map1_kernel<1><<<grid_1d(count), kBlockThreads, 0, stream>>>(a, out, count, op);
  }
  CNNBENCH_CHECK_LAUNCH();
}

template <typename T, typename Op>
void launch_map2(const T* a, const T* b, T* out, int64_t count, Op op, cudaStream_t stream) {
  if (count <= 0) return;
  if (aligned16(a) && aligned16(b) && aligned16(out)) {
    constexpr int V = kPack<T>;
    map2_kernel<V><<<grid_1d(ceil_div(count, V)), kBlockThreads, 0, stream>>>(a, b, out, count, op);
  } else {
    map2_kernel<1><<<grid_1d(count), kBlockThreads, 0, stream>>>(a, b, out, count, op);
  }
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace cnnbench::kernels::cuda::detail
