// BatchNorm2d (+ residual add + ReLU): see batchnorm.cuh for semantics.
// Longer than most files on purpose: one file per layer family (STYLE.md,
// habit 1), so forward, backward, the fused add/ReLU epilogues and both layouts
// of the one layer stay side by side.
//
// Scratch layout (fp32), for M = N·H·W and P = max_partials(M):
//   coef    [3][C]   backward: a = gamma·invstd, b = dbeta/M, k = dgamma·invstd/M
//   part_a  [P][C]   forward: Welford mean per block row; backward: Σ dy_eff
//   part_b  [P][C]   forward: Welford M2 per block row;   backward: Σ dy_eff·(x − mean)
//   part_n  [P]      forward: elements per block row
#include "kernels/cuda/batchnorm.cuh"

#include <algorithm>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/launch.h"

namespace cnnbench::kernels::cuda {
namespace {

using detail::ceil_div;
using detail::kBlockThreads;

/// Most blocks along N·H·W in a reduction: bounds the partials (and the
/// finalize kernel's serial work) while leaving enough blocks to fill the GPU.
constexpr int kMaxPartials = 1024;
/// NHWC reductions: rows of N·H·W each thread visits (about).
constexpr int kReduceRowsPerThread = 16;
/// NCHW reductions: elements of one channel each thread visits (about).
constexpr int kNchwReducePerThread = 16;
/// Apply kernels: rows (NHWC) or elements (NCHW) per thread (about).
constexpr int kApplyPerThread = 4;
/// Finalize kernels: a block is 32 channels × 8 slices of the partials.
constexpr int kFinalizeChannels = 32;
constexpr int kFinalizeSlices = 8;

// ============================================================================
// kernels
// ============================================================================

/// Merges the moments (mean_b, m2_b) of nb > 0 values into (mean, m2) of na
/// values (Chan, Golub & LeVeque 1979); the caller adds nb to its count.
__device__ __forceinline__ void merge_moments(float na, float nb, float& mean, float& m2,
                                              float mean_b, float m2_b) {
  const float frac = nb / (na + nb);
  const float delta = mean_b - mean;
  mean = fmaf(delta, frac, mean);
  m2 = m2 + m2_b + delta * delta * na * frac;
}

/// Adds one value to a running Welford state whose count is already `inv_n`'s n.
__device__ __forceinline__ void welford_add(float v, float inv_n, float& mean, float& m2) {
  const float d = v - mean;
  mean = fmaf(d, inv_n, mean);
  m2 = fmaf(d, v - mean, m2);
}

/// ReLU derivative from the forward output, as torch's threshold_backward:
/// the gradient is dropped where y <= 0 (NaN passes).
__device__ __forceinline__ float relu_grad(float g, float y, bool relu) {
  return (relu && y <= 0.0F) ? 0.0F : g;
}

// ---- NHWC: block (cx, ry) walks V-channel vectors × rows; see detail::row_grid.

/// Per-block Welford statistics of x (M rows of C channels). Block row
/// blockIdx.y covers rows blockIdx.y·ry + ty + k·gridDim.y·ry; its merged state
/// goes to part_*[blockIdx.y].
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    bn_stats_nhwc_kernel(const T* __restrict__ x,        // (M, C)
                         float* __restrict__ part_mean,  // (gridDim.y, C)
                         float* __restrict__ part_m2,    // (gridDim.y, C)
                         float* __restrict__ part_n,     // (gridDim.y)
                         int64_t m, int c) {
  __shared__ float s_n[kBlockThreads];
  __shared__ float s_mean[V][kBlockThreads];
  __shared__ float s_m2[V][kBlockThreads];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int cx = static_cast<int>(blockDim.x), ry = static_cast<int>(blockDim.y);
  const int slot = ty * cx + tx;
  const int c0 = (static_cast<int>(blockIdx.x) * cx + tx) * V;
  const bool active = c0 < c;

  float mean[V], m2[V];
#pragma unroll
  for (int j = 0; j < V; ++j) mean[j] = m2[j] = 0.0F;
  int count = 0;
  if (active) {
    const int64_t stride = static_cast<int64_t>(gridDim.y) * ry;
    int64_t r = static_cast<int64_t>(blockIdx.y) * ry + ty;
    // Four rows per iteration: their loads are issued before the dependent math.
    for (; r + 3 * stride < m; r += 4 * stride) {
      float v[4][V];
#pragma unroll
      for (int u = 0; u < 4; ++u) load_floats<V>(x + (r + u * stride) * c + c0, v[u]);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        ++count;
        const float inv_n = __frcp_rn(static_cast<float>(count));
#pragma unroll
        for (int j = 0; j < V; ++j) welford_add(v[u][j], inv_n, mean[j], m2[j]);
      }
    }
    for (; r < m; r += stride) {
      float v[V];
      load_floats<V>(x + r * c + c0, v);
      ++count;
      const float inv_n = __frcp_rn(static_cast<float>(count));
#pragma unroll
      for (int j = 0; j < V; ++j) welford_add(v[j], inv_n, mean[j], m2[j]);
    }
  }

  // Merge the ry states of each channel vector: a fixed pairwise tree over ty.
  s_n[slot] = static_cast<float>(count);
#pragma unroll
  for (int j = 0; j < V; ++j) {
    s_mean[j][slot] = mean[j];
    s_m2[j][slot] = m2[j];
  }
  int span = 1;
  while (span < ry) span <<= 1;
  for (int s = span >> 1; s > 0; s >>= 1) {
    __syncthreads();
    if (ty < s && ty + s < ry) {
      const int other = slot + s * cx;
      const float nb = s_n[other];
      if (nb > 0.0F) {
        const float na = s_n[slot];
#pragma unroll
        for (int j = 0; j < V; ++j) {
          float mu = s_mean[j][slot], q = s_m2[j][slot];
          merge_moments(na, nb, mu, q, s_mean[j][other], s_m2[j][other]);
          s_mean[j][slot] = mu;
          s_m2[j][slot] = q;
        }
        s_n[slot] = na + nb;
      }
    }
  }
  if (ty == 0 && active) {
    const int64_t base = static_cast<int64_t>(blockIdx.y) * c + c0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      part_mean[base + j] = s_mean[j][slot];
      part_m2[base + j] = s_m2[j][slot];
    }
    if (tx == 0 && blockIdx.x == 0) part_n[blockIdx.y] = s_n[slot];
  }
}

/// y = relu?((x − mean)·gamma·invstd + beta [+ z]); invstd is `stat`, or
/// 1/sqrt(stat + eps) when stat_is_var (inference with running_var).
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    bn_apply_nhwc_kernel(const T* x,            // (M, C)
                         const T* z,            // (M, C) or nullptr
                         T* y,                  // (M, C); may alias x or z
                         const float* mean,     // (C)
                         const float* stat,     // (C) invstd, or variance if stat_is_var
                         const float* gamma,    // (C)
                         const float* beta,     // (C)
                         int64_t m, int c, bool stat_is_var, float eps, bool relu) {
  const int c0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (c0 >= c) return;
  float mu[V], scale[V], shift[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const float invstd = stat_is_var ? 1.0F / sqrtf(stat[c0 + j] + eps) : stat[c0 + j];
    mu[j] = mean[c0 + j];
    scale[j] = gamma[c0 + j] * invstd;
    shift[j] = beta[c0 + j];
  }
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < m; r += stride) {
    const int64_t off = r * c + c0;
    float v[V], zv[V];
    load_floats<V>(x + off, v);
    if (z != nullptr) load_floats<V>(z + off, zv);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float o = fmaf(v[j] - mu[j], scale[j], shift[j]);
      if (z != nullptr) o += zv[j];
      v[j] = relu ? relu_keep_nan(o) : o;
    }
    store_floats<V>(y + off, v);
  }
}

/// Per-block sums Σ dy_eff and Σ dy_eff·(x − mean); writes dz = dy_eff if given.
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    bn_bwd_reduce_nhwc_kernel(const T* x,          // (M, C)
                              const T* y,          // (M, C) forward output, or nullptr if !relu
                              const T* dy,         // (M, C)
                              T* dz,               // (M, C) or nullptr; may alias dy
                              const float* mean,   // (C)
                              float* part_dy,      // (gridDim.y, C)
                              float* part_dyx,     // (gridDim.y, C)
                              int64_t m, int c, bool relu) {
  __shared__ float s_dy[V][kBlockThreads];
  __shared__ float s_dyx[V][kBlockThreads];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int cx = static_cast<int>(blockDim.x), ry = static_cast<int>(blockDim.y);
  const int slot = ty * cx + tx;
  const int c0 = (static_cast<int>(blockIdx.x) * cx + tx) * V;
  const bool active = c0 < c;

  float sdy[V], sdyx[V], mu[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    sdy[j] = sdyx[j] = 0.0F;
    mu[j] = active ? mean[c0 + j] : 0.0F;
  }
  if (active) {
    const int64_t stride = static_cast<int64_t>(gridDim.y) * ry;
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * ry + ty; r < m; r += stride) {
      const int64_t off = r * c + c0;
      float xv[V], gv[V], yv[V];
      load_floats<V>(x + off, xv);
      load_floats<V>(dy + off, gv);
      if (relu) load_floats<V>(y + off, yv);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float g = relu_grad(gv[j], relu ? yv[j] : 1.0F, relu);
        gv[j] = g;
        sdy[j] += g;
        sdyx[j] = fmaf(g, xv[j] - mu[j], sdyx[j]);
      }
      if (dz != nullptr) store_floats<V>(dz + off, gv);
    }
  }

#pragma unroll
  for (int j = 0; j < V; ++j) {
    s_dy[j][slot] = sdy[j];
    s_dyx[j][slot] = sdyx[j];
  }
  int span = 1;
  while (span < ry) span <<= 1;
  for (int s = span >> 1; s > 0; s >>= 1) {
    __syncthreads();
    if (ty < s && ty + s < ry) {
      const int other = slot + s * cx;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        s_dy[j][slot] += s_dy[j][other];
        s_dyx[j][slot] += s_dyx[j][other];
      }
    }
  }
  if (ty == 0 && active) {
    const int64_t base = static_cast<int64_t>(blockIdx.y) * c + c0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      part_dy[base + j] = s_dy[j][slot];
      part_dyx[base + j] = s_dyx[j][slot];
    }
  }
}

/// dx = a·(dy_eff − b − (x − mean)·k) with (a, b, k) = coef[0..2][c]; dy_eff is
/// dz when given (written by the reduce kernel), else dy masked by y > 0.
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    bn_bwd_apply_nhwc_kernel(const T* x,          // (M, C)
                             const T* y,          // (M, C) or nullptr (unused when dz or !relu)
                             const T* dy,         // (M, C)
                             const T* dz,         // (M, C) or nullptr
                             T* dx,               // (M, C); may alias dy
                             const float* mean,   // (C)
                             const float* coef,   // (3, C)
                             int64_t m, int c, bool relu) {
  const int c0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * V;
  if (c0 >= c) return;
  float mu[V], a[V], b[V], k[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    mu[j] = mean[c0 + j];
    a[j] = coef[c0 + j];
    b[j] = coef[c + c0 + j];
    k[j] = coef[2 * c + c0 + j];
  }
  const bool mask = relu && dz == nullptr;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < m; r += stride) {
    const int64_t off = r * c + c0;
    float xv[V], gv[V], yv[V];
    load_floats<V>(x + off, xv);
    load_floats<V>(dz != nullptr ? dz + off : dy + off, gv);
    if (mask) load_floats<V>(y + off, yv);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float g = relu_grad(gv[j], mask ? yv[j] : 1.0F, mask);
      gv[j] = a[j] * (g - b[j] - (xv[j] - mu[j]) * k[j]);
    }
    store_floats<V>(dx + off, gv);
  }
}

// ---- NCHW: the N·H·W values of channel ch are the H·W-long runs at
// (n·C + ch)·H·W. Reductions: block (ch, slice) with 256 threads over the
// flattened j ∈ [0, N·H·W); apply: block (plane n·C + ch, chunk of H·W).

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    bn_stats_nchw_kernel(const T* __restrict__ x,        // (N, C, HW)
                         float* __restrict__ part_mean,  // (gridDim.y, C)
                         float* __restrict__ part_m2,    // (gridDim.y, C)
                         float* __restrict__ part_n,     // (gridDim.y)
                         int c, int hw, int m) {
  __shared__ float s_n[kBlockThreads], s_mean[kBlockThreads], s_m2[kBlockThreads];
  const int ch = static_cast<int>(blockIdx.x);
  const int t = static_cast<int>(threadIdx.x);
  float mean = 0.0F, m2 = 0.0F;
  int count = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * kBlockThreads;
  for (int64_t j = static_cast<int64_t>(blockIdx.y) * kBlockThreads + t; j < m; j += stride) {
    const int n = static_cast<int>(static_cast<unsigned>(j) / static_cast<unsigned>(hw));
    const int i = static_cast<int>(j) - n * hw;
    const float v = to_float(x[(static_cast<int64_t>(n) * c + ch) * hw + i]);
    ++count;
    welford_add(v, __frcp_rn(static_cast<float>(count)), mean, m2);
  }
  s_n[t] = static_cast<float>(count);
  s_mean[t] = mean;
  s_m2[t] = m2;
  for (int s = kBlockThreads / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (t < s && s_n[t + s] > 0.0F) {
      const float na = s_n[t], nb = s_n[t + s];
      float mu = s_mean[t], q = s_m2[t];
      merge_moments(na, nb, mu, q, s_mean[t + s], s_m2[t + s]);
      s_mean[t] = mu;
      s_m2[t] = q;
      s_n[t] = na + nb;
    }
  }
  if (t == 0) {
    part_mean[static_cast<int64_t>(blockIdx.y) * c + ch] = s_mean[0];
    part_m2[static_cast<int64_t>(blockIdx.y) * c + ch] = s_m2[0];
    if (ch == 0) part_n[blockIdx.y] = s_n[0];
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    bn_apply_nchw_kernel(const T* x,            // (N, C, HW)
                         const T* z,            // (N, C, HW) or nullptr
                         T* y,                  // (N, C, HW); may alias x or z
                         const float* mean,     // (C)
                         const float* stat,     // (C) invstd, or variance if stat_is_var
                         const float* gamma,    // (C)
                         const float* beta,     // (C)
                         int c, int hw, bool stat_is_var, float eps, bool relu) {
  const int64_t plane = blockIdx.x;
  const int ch = static_cast<int>(plane % c);
  const float invstd = stat_is_var ? 1.0F / sqrtf(stat[ch] + eps) : stat[ch];
  const float mu = mean[ch], scale = gamma[ch] * invstd, shift = beta[ch];
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < hw; i += stride) {
    const int64_t off = plane * hw + i;
    float o = fmaf(to_float(x[off]) - mu, scale, shift);
    if (z != nullptr) o += to_float(z[off]);
    y[off] = from_float<T>(relu ? relu_keep_nan(o) : o);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    bn_bwd_reduce_nchw_kernel(const T* x,          // (N, C, HW)
                              const T* y,          // (N, C, HW) or nullptr if !relu
                              const T* dy,         // (N, C, HW)
                              T* dz,               // (N, C, HW) or nullptr; may alias dy
                              const float* mean,   // (C)
                              float* part_dy,      // (gridDim.y, C)
                              float* part_dyx,     // (gridDim.y, C)
                              int c, int hw, int m, bool relu) {
  __shared__ float s_dy[kBlockThreads], s_dyx[kBlockThreads];
  const int ch = static_cast<int>(blockIdx.x);
  const int t = static_cast<int>(threadIdx.x);
  const float mu = mean[ch];
  float sdy = 0.0F, sdyx = 0.0F;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * kBlockThreads;
  for (int64_t j = static_cast<int64_t>(blockIdx.y) * kBlockThreads + t; j < m; j += stride) {
    const int n = static_cast<int>(static_cast<unsigned>(j) / static_cast<unsigned>(hw));
    const int64_t off = (static_cast<int64_t>(n) * c + ch) * hw + (j - int64_t{n} * hw);
    const float g = relu_grad(to_float(dy[off]), relu ? to_float(y[off]) : 1.0F, relu);
    sdy += g;
    sdyx = fmaf(g, to_float(x[off]) - mu, sdyx);
    if (dz != nullptr) dz[off] = from_float<T>(g);
  }
  s_dy[t] = sdy;
  s_dyx[t] = sdyx;
  for (int s = kBlockThreads / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (t < s) {
      s_dy[t] += s_dy[t + s];
      s_dyx[t] += s_dyx[t + s];
    }
  }
  if (t == 0) {
    part_dy[static_cast<int64_t>(blockIdx.y) * c + ch] = s_dy[0];
    part_dyx[static_cast<int64_t>(blockIdx.y) * c + ch] = s_dyx[0];
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    bn_bwd_apply_nchw_kernel(const T* x,          // (N, C, HW)
                             const T* y,          // (N, C, HW) or nullptr
                             const T* dy,         // (N, C, HW)
                             const T* dz,         // (N, C, HW) or nullptr
                             T* dx,               // (N, C, HW); may alias dy
                             const float* mean,   // (C)
                             const float* coef,   // (3, C)
                             int c, int hw, bool relu) {
  const int64_t plane = blockIdx.x;
  const int ch = static_cast<int>(plane % c);
  const float mu = mean[ch], a = coef[ch], b = coef[c + ch], k = coef[2 * c + ch];
  const bool mask = relu && dz == nullptr;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < hw; i += stride) {
    const int64_t off = plane * hw + i;
    const float g = relu_grad(to_float(dz != nullptr ? dz[off] : dy[off]),
                              mask ? to_float(y[off]) : 1.0F, mask);
    dx[off] = from_float<T>(a * (g - b - (to_float(x[off]) - mu) * k));
  }
}

// ---- Finalize: block (32 channels, 8 slices); slice ty merges partials
// ty, ty + 8, ... in order, then a fixed tree over the 8 slices.

/// Batch mean and invstd from the partials; updates the running statistics.
__global__ void __launch_bounds__(kFinalizeChannels* kFinalizeSlices)
    bn_finalize_stats_kernel(const float* __restrict__ part_mean,  // (parts, C)
                             const float* __restrict__ part_m2,    // (parts, C)
                             const float* __restrict__ part_n,     // (parts)
                             int parts, int c, int64_t m, float eps, float momentum,
                             float* running_mean,   // (C) or nullptr
                             float* running_var,    // (C) or nullptr
                             float* save_mean,      // (C)
                             float* save_invstd) {  // (C)
  __shared__ float s_n[kFinalizeSlices][kFinalizeChannels];
  __shared__ float s_mean[kFinalizeSlices][kFinalizeChannels];
  __shared__ float s_m2[kFinalizeSlices][kFinalizeChannels];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int ch = static_cast<int>(blockIdx.x) * kFinalizeChannels + tx;
  float n = 0.0F, mean = 0.0F, m2 = 0.0F;
  if (ch < c) {
    for (int p = ty; p < parts; p += kFinalizeSlices) {
      const float nb = part_n[p];
      if (nb > 0.0F) {
        merge_moments(n, nb, mean, m2, part_mean[static_cast<int64_t>(p) * c + ch],
                      part_m2[static_cast<int64_t>(p) * c + ch]);
        n += nb;
      }
    }
  }
  s_n[ty][tx] = n;
  s_mean[ty][tx] = mean;
  s_m2[ty][tx] = m2;
  for (int s = kFinalizeSlices / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (ty < s && s_n[ty + s][tx] > 0.0F) {
      const float na = s_n[ty][tx], nb = s_n[ty + s][tx];
      float mu = s_mean[ty][tx], q = s_m2[ty][tx];
      merge_moments(na, nb, mu, q, s_mean[ty + s][tx], s_m2[ty + s][tx]);
      s_mean[ty][tx] = mu;
      s_m2[ty][tx] = q;
      s_n[ty][tx] = na + nb;
    }
  }
  if (ty == 0 && ch < c) {
    mean = s_mean[0][tx];
    m2 = s_m2[0][tx];
    const float var = static_cast<float>(static_cast<double>(m2) / static_cast<double>(m));
    save_mean[ch] = mean;
    save_invstd[ch] = 1.0F / sqrtf(var + eps);
    if (running_mean != nullptr) running_mean[ch] = (1.0F - momentum) * running_mean[ch] + momentum * mean;
    if (running_var != nullptr) {
      const float unbiased = static_cast<float>(static_cast<double>(m2) / static_cast<double>(m - 1));
      running_var[ch] = (1.0F - momentum) * running_var[ch] + momentum * unbiased;
    }
  }
}

/// dgamma, dbeta and the dx coefficients from the backward partials.
__global__ void __launch_bounds__(kFinalizeChannels* kFinalizeSlices)
    bn_finalize_grads_kernel(const float* __restrict__ part_dy,   // (parts, C)
                             const float* __restrict__ part_dyx,  // (parts, C)
                             int parts, int c, float inv_m,
                             const float* gamma,    // (C)
                             const float* invstd,   // (C)
                             float* dgamma,         // (C)
                             float* dbeta,          // (C)
                             float* coef) {         // (3, C)
  __shared__ float s_dy[kFinalizeSlices][kFinalizeChannels];
  __shared__ float s_dyx[kFinalizeSlices][kFinalizeChannels];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int ch = static_cast<int>(blockIdx.x) * kFinalizeChannels + tx;
  float sdy = 0.0F, sdyx = 0.0F;
  if (ch < c) {
    for (int p = ty; p < parts; p += kFinalizeSlices) {
      sdy += part_dy[static_cast<int64_t>(p) * c + ch];
      sdyx += part_dyx[static_cast<int64_t>(p) * c + ch];
    }
  }
  s_dy[ty][tx] = sdy;
  s_dyx[ty][tx] = sdyx;
  for (int s = kFinalizeSlices / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (ty < s) {
      s_dy[ty][tx] += s_dy[ty + s][tx];
      s_dyx[ty][tx] += s_dyx[ty + s][tx];
    }
  }
  if (ty == 0 && ch < c) {
    const float is = invstd[ch];
    const float db = s_dy[0][tx];
    const float dg = s_dyx[0][tx] * is;
    dbeta[ch] = db;
    dgamma[ch] = dg;
    coef[ch] = gamma[ch] * is;
    coef[c + ch] = db * inv_m;
    coef[2 * c + ch] = dg * is * inv_m;
  }
}

// ============================================================================
// launchers
// ============================================================================

int64_t max_partials(int64_t m) {
  // NHWC blocks have ry >= 8 rows (detail::row_grid) and NCHW blocks 256
  // threads, so neither launches more block rows than this.
  return std::clamp<int64_t>(ceil_div(m, int64_t{8} * kReduceRowsPerThread), 1, kMaxPartials);
}

struct Scratch {
  float* coef;
  float* part_a;
  float* part_b;
  float* part_n;
};

Scratch carve(void* scratch, int64_t c, int64_t m) {
  auto* f = static_cast<float*>(scratch);
  const int64_t p = max_partials(m);
  return {f, f + 3 * c, f + 3 * c + p * c, f + 3 * c + 2 * p * c};
}

std::string to_string(const models::Shape& s) {
  return "(N=" + std::to_string(s.n) + ", C=" + std::to_string(s.c) + ", H=" + std::to_string(s.h) +
         ", W=" + std::to_string(s.w) + ")";
}

void check_shape(const char* fn, const models::Shape& s) {
  detail::require(s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0, fn, "empty shape " + to_string(s));
  // NCHW reductions index N·H·W with 32-bit integers.
  detail::require(int64_t{s.n} * s.h * s.w < (int64_t{1} << 31) && int64_t{s.n} * s.c < (int64_t{1} << 31),
                  fn, "N·H·W and N·C must be below 2^31, got shape " + to_string(s));
}

template <typename T>
bool use_vectors(int c, std::initializer_list<const void*> ptrs) {
  if (c % kPack<T> != 0) return false;
  for (const void* p : ptrs)
    if (!detail::aligned16(p)) return false;
  return true;
}

/// y = relu?((x − mean)·gamma·invstd + beta [+ z]); see bn_apply_*_kernel.
template <typename T>
void launch_apply(const T* x, const T* z, T* y, const float* mean, const float* stat,
                  bool stat_is_var, const float* gamma, const float* beta,
                  const models::Shape& s, DataFormat format, float eps, bool relu,
                  cudaStream_t stream) {
  const int64_t m = int64_t{s.n} * s.h * s.w;
  if (format == DataFormat::NHWC) {
    if (use_vectors<T>(s.c, {x, z, y})) {
      constexpr int V = kPack<T>;
      const auto g = detail::row_grid(m, s.c / V, kApplyPerThread, 65535);
      bn_apply_nhwc_kernel<T, V><<<g.grid, g.block, 0, stream>>>(x, z, y, mean, stat, gamma, beta,
                                                                m, s.c, stat_is_var, eps, relu);
    } else {
      const auto g = detail::row_grid(m, s.c, kApplyPerThread, 65535);
      bn_apply_nhwc_kernel<T, 1><<<g.grid, g.block, 0, stream>>>(x, z, y, mean, stat, gamma, beta,
                                                                m, s.c, stat_is_var, eps, relu);
    }
  } else {
    const int hw = s.h * s.w;
    const int threads = static_cast<int>(std::min<int64_t>(kBlockThreads, ceil_div(hw, 32) * 32));
    const dim3 grid(static_cast<unsigned>(int64_t{s.n} * s.c),
                    static_cast<unsigned>(std::clamp<int64_t>(
                        ceil_div(hw, int64_t{threads} * kApplyPerThread), 1, 65535)));
    bn_apply_nchw_kernel<T><<<grid, threads, 0, stream>>>(x, z, y, mean, stat, gamma, beta, s.c, hw,
                                                          stat_is_var, eps, relu);
  }
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace

int64_t batchnorm_scratch_bytes(const models::Shape& shape) {
  const int64_t c = shape.c;
  const int64_t m = int64_t{shape.n} * shape.h * shape.w;
  return (3 * c + max_partials(m) * (2 * c + 1)) * static_cast<int64_t>(sizeof(float));
}

template <typename T>
void batchnorm_forward_training(const T* x, const T* z, T* y, const float* gamma, const float* beta,
                                float* running_mean, float* running_var, float* save_mean,
                                float* save_invstd, void* scratch, int64_t scratch_bytes,
                                const models::Shape& shape, DataFormat format,
                                const models::BatchNormAttrs& attrs, bool relu,
                                cudaStream_t stream) {
  constexpr const char* fn = "batchnorm_forward_training";
  check_shape(fn, shape);
  const int64_t m = int64_t{shape.n} * shape.h * shape.w;
  const int c = shape.c;
  detail::require(m > 1, fn,
                  "training needs more than one value per channel (N·H·W > 1), got shape " +
                      to_string(shape));
  detail::require(x != nullptr && y != nullptr && gamma != nullptr && beta != nullptr &&
                      save_mean != nullptr && save_invstd != nullptr && scratch != nullptr,
                  fn, "x, y, gamma, beta, save_mean, save_invstd and scratch must be non-null");
  detail::require(scratch_bytes >= batchnorm_scratch_bytes(shape), fn,
                  "scratch of " + std::to_string(scratch_bytes) + " bytes, needs " +
                      std::to_string(batchnorm_scratch_bytes(shape)));
  detail::require(attrs.eps > 0.0F, fn, "eps must be > 0");
  const Scratch sc = carve(scratch, c, m);

  int parts = 0;
  if (format == DataFormat::NHWC) {
    if (use_vectors<T>(c, {x})) {
      constexpr int V = kPack<T>;
      const auto g = detail::row_grid(m, c / V, kReduceRowsPerThread, kMaxPartials);
      parts = static_cast<int>(g.grid.y);
      bn_stats_nhwc_kernel<T, V><<<g.grid, g.block, 0, stream>>>(x, sc.part_a, sc.part_b,
                                                                 sc.part_n, m, c);
    } else {
      const auto g = detail::row_grid(m, c, kReduceRowsPerThread, kMaxPartials);
      parts = static_cast<int>(g.grid.y);
      bn_stats_nhwc_kernel<T, 1><<<g.grid, g.block, 0, stream>>>(x, sc.part_a, sc.part_b,
                                                                 sc.part_n, m, c);
    }
  } else {
    parts = static_cast<int>(std::clamp<int64_t>(
        ceil_div(m, int64_t{kBlockThreads} * kNchwReducePerThread), 1, kMaxPartials));
    bn_stats_nchw_kernel<T><<<dim3(static_cast<unsigned>(c), static_cast<unsigned>(parts)),
                              kBlockThreads, 0, stream>>>(x, sc.part_a, sc.part_b, sc.part_n, c,
                                                          shape.h * shape.w, static_cast<int>(m));
  }
  CNNBENCH_CHECK_LAUNCH();

  bn_finalize_stats_kernel<<<static_cast<unsigned>(ceil_div(c, kFinalizeChannels)),
                             dim3(kFinalizeChannels, kFinalizeSlices), 0, stream>>>(
      sc.part_a, sc.part_b, sc.part_n, parts, c, m, attrs.eps, attrs.momentum, running_mean,
      running_var, save_mean, save_invstd);
  CNNBENCH_CHECK_LAUNCH();

  launch_apply<T>(x, z, y, save_mean, save_invstd, /*stat_is_var=*/false, gamma, beta, shape,
                  format, attrs.eps, relu, stream);
}

template <typename T>
void batchnorm_forward_inference(const T* x, const T* z, T* y, const float* gamma,
                                 const float* beta, const float* running_mean,
                                 const float* running_var, const models::Shape& shape,
                                 DataFormat format, const models::BatchNormAttrs& attrs, bool relu,
                                 cudaStream_t stream) {
  constexpr const char* fn = "batchnorm_forward_inference";
  check_shape(fn, shape);
  detail::require(x != nullptr && y != nullptr && gamma != nullptr && beta != nullptr &&
                      running_mean != nullptr && running_var != nullptr,
                  fn, "x, y, gamma, beta, running_mean and running_var must be non-null");
  detail::require(attrs.eps > 0.0F, fn, "eps must be > 0");
  launch_apply<T>(x, z, y, running_mean, running_var, /*stat_is_var=*/true, gamma, beta, shape,
                  format, attrs.eps, relu, stream);
}

template <typename T>
void batchnorm_backward(const T* x, const T* y, const T* dy, T* dx, T* dz, const float* gamma,
                        const float* save_mean, const float* save_invstd, float* dgamma,
                        float* dbeta, void* scratch, int64_t scratch_bytes,
                        const models::Shape& shape, DataFormat format, bool relu,
                        cudaStream_t stream) {
  constexpr const char* fn = "batchnorm_backward";
  check_shape(fn, shape);
  const int64_t m = int64_t{shape.n} * shape.h * shape.w;
  const int c = shape.c;
  detail::require(x != nullptr && dy != nullptr && dx != nullptr && gamma != nullptr &&
                      save_mean != nullptr && save_invstd != nullptr && dgamma != nullptr &&
                      dbeta != nullptr && scratch != nullptr,
                  fn,
                  "x, dy, dx, gamma, save_mean, save_invstd, dgamma, dbeta and scratch must be "
                  "non-null");
  detail::require(!relu || y != nullptr, fn, "relu needs the forward output y for its mask");
  detail::require(dz == nullptr || (dz != dx && dz != x), fn, "dz must not alias dx or x");
  detail::require(scratch_bytes >= batchnorm_scratch_bytes(shape), fn,
                  "scratch of " + std::to_string(scratch_bytes) + " bytes, needs " +
                      std::to_string(batchnorm_scratch_bytes(shape)));
  const Scratch sc = carve(scratch, c, m);
  const bool nhwc = format == DataFormat::NHWC;
  const bool vec = nhwc && use_vectors<T>(c, {x, y, dy, dx, dz});

  int parts = 0;
  if (nhwc) {
    if (vec) {
      constexpr int V = kPack<T>;
      const auto g = detail::row_grid(m, c / V, kReduceRowsPerThread, kMaxPartials);
      parts = static_cast<int>(g.grid.y);
      bn_bwd_reduce_nhwc_kernel<T, V><<<g.grid, g.block, 0, stream>>>(
          x, y, dy, dz, save_mean, sc.part_a, sc.part_b, m, c, relu);
    } else {
      const auto g = detail::row_grid(m, c, kReduceRowsPerThread, kMaxPartials);
      parts = static_cast<int>(g.grid.y);
      bn_bwd_reduce_nhwc_kernel<T, 1><<<g.grid, g.block, 0, stream>>>(
          x, y, dy, dz, save_mean, sc.part_a, sc.part_b, m, c, relu);
    }
  } else {
    parts = static_cast<int>(std::clamp<int64_t>(
        ceil_div(m, int64_t{kBlockThreads} * kNchwReducePerThread), 1, kMaxPartials));
    bn_bwd_reduce_nchw_kernel<T>
        <<<dim3(static_cast<unsigned>(c), static_cast<unsigned>(parts)), kBlockThreads, 0,
           stream>>>(x, y, dy, dz, save_mean, sc.part_a, sc.part_b, c, shape.h * shape.w,
                     static_cast<int>(m), relu);
  }
  CNNBENCH_CHECK_LAUNCH();

  bn_finalize_grads_kernel<<<static_cast<unsigned>(ceil_div(c, kFinalizeChannels)),
                             dim3(kFinalizeChannels, kFinalizeSlices), 0, stream>>>(
      sc.part_a, sc.part_b, parts, c, static_cast<float>(1.0 / static_cast<double>(m)), gamma,
      save_invstd, dgamma, dbeta, sc.coef);
  CNNBENCH_CHECK_LAUNCH();

  if (nhwc) {
    if (vec) {
      constexpr int V = kPack<T>;
      const auto g = detail::row_grid(m, c / V, kApplyPerThread, 65535);
      bn_bwd_apply_nhwc_kernel<T, V><<<g.grid, g.block, 0, stream>>>(x, y, dy, dz, dx, save_mean,
                                                                    sc.coef, m, c, relu);
    } else {
      const auto g = detail::row_grid(m, c, kApplyPerThread, 65535);
      bn_bwd_apply_nhwc_kernel<T, 1><<<g.grid, g.block, 0, stream>>>(x, y, dy, dz, dx, save_mean,
                                                                    sc.coef, m, c, relu);
    }
  } else {
    const int hw = shape.h * shape.w;
    const int threads = static_cast<int>(std::min<int64_t>(kBlockThreads, ceil_div(hw, 32) * 32));
    const dim3 grid(static_cast<unsigned>(int64_t{shape.n} * c),
                    static_cast<unsigned>(std::clamp<int64_t>(
                        ceil_div(hw, int64_t{threads} * kApplyPerThread), 1, 65535)));
    bn_bwd_apply_nchw_kernel<T><<<grid, threads, 0, stream>>>(x, y, dy, dz, dx, save_mean, sc.coef,
                                                              c, hw, relu);
  }
  CNNBENCH_CHECK_LAUNCH();
}

#define CNNBENCH_INSTANTIATE_BATCHNORM(T)                                                      \
  template void batchnorm_forward_training<T>(                                                 \
      const T*, const T*, T*, const float*, const float*, float*, float*, float*, float*, void*, \
      int64_t, const models::Shape&, DataFormat, const models::BatchNormAttrs&, bool,          \
      cudaStream_t);                                                                           \
  template void batchnorm_forward_inference<T>(const T*, const T*, T*, const float*,            \
                                               const float*, const float*, const float*,       \
                                               const models::Shape&, DataFormat,               \
                                               const models::BatchNormAttrs&, bool, cudaStream_t); \
  template void batchnorm_backward<T>(const T*, const T*, const T*, T*, T*, const float*,       \
                                      const float*, const float*, float*, float*, void*, int64_t, \
                                      const models::Shape&, DataFormat, bool, cudaStream_t);
CNNBENCH_INSTANTIATE_BATCHNORM(float)
CNNBENCH_INSTANTIATE_BATCHNORM(__half)
CNNBENCH_INSTANTIATE_BATCHNORM(__nv_bfloat16)
#undef CNNBENCH_INSTANTIATE_BATCHNORM

}  // namespace cnnbench::kernels::cuda
