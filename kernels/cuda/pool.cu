// Max / average / adaptive average pooling: see pool.cuh for semantics.
// One file per layer family (STYLE.md, habit 1): forward and backward of the
// three kinds in both layouts sit together, which makes it about 600 lines.
#include "kernels/cuda/pool.cuh"

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/launch.h"

namespace cnnbench::kernels::cuda {
namespace {

using detail::ceil_div;
using detail::kBlockThreads;

/// Everything a pooling kernel needs to know about the problem. Window fields
/// are unused by the adaptive kernels.
struct PoolGeom {
  int n, c, h, w;  // input
  int oh, ow;      // output
  int kh, kw, sh, sw, ph, pw;
  bool include_pad;
  bool nhwc;
};

// ============================================================================
// kernels
// ============================================================================

/// Element offset of (n, c, y, x) in a tensor of dims (C, H, W) per image.
__device__ __forceinline__ int offset_of(bool nhwc, int n, int c, int y, int x, int cs, int hs,
                                         int ws) {
  return nhwc ? ((n * hs + y) * ws + x) * cs + c : ((n * cs + c) * hs + y) * ws + x;
}

/// Splits a thread index over (N, H, W, C/V) (NHWC: channel groups fastest) or
/// (N, C, H, W) (NCHW: x fastest) into its coordinates.
__device__ __forceinline__ void decode(int t, bool nhwc, int groups, int hs, int ws, int& n, int& g,
                                       int& y, int& x) {
  if (nhwc) {
    g = t % groups;
    t /= groups;
    x = t % ws;
    t /= ws;
    y = t % hs;
    n = t / hs;
  } else {
    x = t % ws;
    t /= ws;
    y = t % hs;
    t /= hs;
    g = t % groups;
    n = t / groups;
  }
}

/// First output index (along one axis) whose window covers input index i:
/// windows start at o·s − p and span k.
__device__ __forceinline__ int first_cover(int i, int k, int s, int p) {
  return (i + p < k) ? 0 : (i + p - k) / s + 1;
}

/// One past the last output index whose window covers input index i.
__device__ __forceinline__ int end_cover(int i, int s, int p, int out) {
  return min((i + p) / s + 1, out);
}

/// Average-pool divisor of the window starting at (hs, ws), as PyTorch's avg_pool2d.
__device__ __forceinline__ int avg_divisor(const PoolGeom& g, int hs, int ws) {
  const int he = min(hs + g.kh, g.h + g.ph), we = min(ws + g.kw, g.w + g.pw);
  if (g.include_pad) return (he - hs) * (we - ws);
  return (min(he, g.h) - max(hs, 0)) * (min(we, g.w) - max(ws, 0));
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    maxpool_fwd_kernel(const T* __restrict__ x,          // (N, H, W, C) or (N, C, H, W)
                       T* __restrict__ y,                // (N, OH, OW, C) or (N, C, OH, OW)
                       uint8_t* __restrict__ argmax,     // same dims as y, or nullptr
                       PoolGeom g) {
  const int groups = g.c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= g.n * g.oh * g.ow * groups) return;
  int n, gi, oy, ox;
  decode(t, g.nhwc, groups, g.oh, g.ow, n, gi, oy, ox);
  const int c0 = gi * V;
  const int hs = oy * g.sh - g.ph, ws = ox * g.sw - g.pw;
  const int h0 = max(hs, 0), w0 = max(ws, 0);
  const int h1 = min(hs + g.kh, g.h), w1 = min(ws + g.kw, g.w);
  float best[V];
  int arg[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    best[j] = -INFINITY;
    arg[j] = (h0 - hs) * g.kw + (w0 - ws);
  }
  for (int iy = h0; iy < h1; ++iy) {
    for (int ix = w0; ix < w1; ++ix) {
      float v[V];
      load_floats<V>(x + offset_of(g.nhwc, n, c0, iy, ix, g.c, g.h, g.w), v);
      const int pos = (iy - hs) * g.kw + (ix - ws);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (v[j] > best[j] || isnan(v[j])) {
          best[j] = v[j];
          arg[j] = pos;
        }
      }
    }
  }
  const int o = offset_of(g.nhwc, n, c0, oy, ox, g.c, g.oh, g.ow);
  store_floats<V>(y + o, best);
  if (argmax != nullptr) {
    uint8_t a[V];
#pragma unroll
    for (int j = 0; j < V; ++j) a[j] = static_cast<uint8_t>(arg[j]);
    store_raw<V>(argmax + o, a);
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    maxpool_bwd_kernel(const T* __restrict__ dy,             // (N, OH, OW, C) or (N, C, OH, OW)
                       const uint8_t* __restrict__ argmax,   // same dims as dy
                       T* __restrict__ dx,                   // (N, H, W, C) or (N, C, H, W)
                       PoolGeom g) {
  const int groups = g.c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= g.n * g.h * g.w * groups) return;
  int n, gi, iy, ix;
  decode(t, g.nhwc, groups, g.h, g.w, n, gi, iy, ix);
  const int c0 = gi * V;
  const int y0 = first_cover(iy, g.kh, g.sh, g.ph), y1 = end_cover(iy, g.sh, g.ph, g.oh);
  const int x0 = first_cover(ix, g.kw, g.sw, g.pw), x1 = end_cover(ix, g.sw, g.pw, g.ow);
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0F;
  for (int oy = y0; oy < y1; ++oy) {
    for (int ox = x0; ox < x1; ++ox) {
      const int o = offset_of(g.nhwc, n, c0, oy, ox, g.c, g.oh, g.ow);
      const int pos = (iy - (oy * g.sh - g.ph)) * g.kw + (ix - (ox * g.sw - g.pw));
      uint8_t a[V];
      float d[V];
      load_raw<V>(argmax + o, a);
      load_floats<V>(dy + o, d);
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (a[j] == pos) acc[j] += d[j];
    }
  }
  store_floats<V>(dx + offset_of(g.nhwc, n, c0, iy, ix, g.c, g.h, g.w), acc);
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    avgpool_fwd_kernel(const T* __restrict__ x,  // (N, H, W, C) or (N, C, H, W)
                       T* __restrict__ y,        // (N, OH, OW, C) or (N, C, OH, OW)
                       PoolGeom g) {
  const int groups = g.c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= g.n * g.oh * g.ow * groups) return;
  int n, gi, oy, ox;
  decode(t, g.nhwc, groups, g.oh, g.ow, n, gi, oy, ox);
  const int c0 = gi * V;
  const int hs = oy * g.sh - g.ph, ws = ox * g.sw - g.pw;
  const int h0 = max(hs, 0), w0 = max(ws, 0);
  const int h1 = min(hs + g.kh, g.h), w1 = min(ws + g.kw, g.w);
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0F;
  for (int iy = h0; iy < h1; ++iy) {
    for (int ix = w0; ix < w1; ++ix) {
      float v[V];
      load_floats<V>(x + offset_of(g.nhwc, n, c0, iy, ix, g.c, g.h, g.w), v);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += v[j];
    }
  }
  const float div = static_cast<float>(avg_divisor(g, hs, ws));
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] /= div;
  store_floats<V>(y + offset_of(g.nhwc, n, c0, oy, ox, g.c, g.oh, g.ow), acc);
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    avgpool_bwd_kernel(const T* __restrict__ dy,  // (N, OH, OW, C) or (N, C, OH, OW)
                       T* __restrict__ dx,        // (N, H, W, C) or (N, C, H, W)
                       PoolGeom g) {
  const int groups = g.c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= g.n * g.h * g.w * groups) return;
  int n, gi, iy, ix;
  decode(t, g.nhwc, groups, g.h, g.w, n, gi, iy, ix);
  const int c0 = gi * V;
  const int y0 = first_cover(iy, g.kh, g.sh, g.ph), y1 = end_cover(iy, g.sh, g.ph, g.oh);
  const int x0 = first_cover(ix, g.kw, g.sw, g.pw), x1 = end_cover(ix, g.sw, g.pw, g.ow);
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0F;
  for (int oy = y0; oy < y1; ++oy) {
    for (int ox = x0; ox < x1; ++ox) {
      const float inv =
          __frcp_rn(static_cast<float>(avg_divisor(g, oy * g.sh - g.ph, ox * g.sw - g.pw)));
      float d[V];
      load_floats<V>(dy + offset_of(g.nhwc, n, c0, oy, ox, g.c, g.oh, g.ow), d);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] = fmaf(d[j], inv, acc[j]);
    }
  }
  store_floats<V>(dx + offset_of(g.nhwc, n, c0, iy, ix, g.c, g.h, g.w), acc);
}

/// Adaptive cell i of `out` cells over `in`: [floor(i·in/out), ceil((i+1)·in/out)).
__device__ __forceinline__ int cell_begin(int i, int in, int out) { return (i * in) / out; }
__device__ __forceinline__ int cell_end(int i, int in, int out) {
  return ((i + 1) * in + out - 1) / out;
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    adaptive_avgpool_fwd_kernel(const T* __restrict__ x,  // (N, H, W, C) or (N, C, H, W)
                                T* __restrict__ y,        // (N, OH, OW, C) or (N, C, OH, OW)
                                PoolGeom g) {
  const int groups = g.c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= g.n * g.oh * g.ow * groups) return;
  int n, gi, oy, ox;
  decode(t, g.nhwc, groups, g.oh, g.ow, n, gi, oy, ox);
  const int c0 = gi * V;
  const int h0 = cell_begin(oy, g.h, g.oh), h1 = cell_end(oy, g.h, g.oh);
  const int w0 = cell_begin(ox, g.w, g.ow), w1 = cell_end(ox, g.w, g.ow);
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0F;
  for (int iy = h0; iy < h1; ++iy) {
    for (int ix = w0; ix < w1; ++ix) {
      float v[V];
      load_floats<V>(x + offset_of(g.nhwc, n, c0, iy, ix, g.c, g.h, g.w), v);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += v[j];
    }
  }
  const float div = static_cast<float>((h1 - h0) * (w1 - w0));
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] /= div;
  store_floats<V>(y + offset_of(g.nhwc, n, c0, oy, ox, g.c, g.oh, g.ow), acc);
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    adaptive_avgpool_bwd_kernel(const T* __restrict__ dy,  // (N, OH, OW, C) or (N, C, OH, OW)
                                T* __restrict__ dx,        // (N, H, W, C) or (N, C, H, W)
                                PoolGeom g) {
  const int groups = g.c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= g.n * g.h * g.w * groups) return;
  int n, gi, iy, ix;
  decode(t, g.nhwc, groups, g.h, g.w, n, gi, iy, ix);
  const int c0 = gi * V;
  // Cells containing row iy: floor(iy·OH/H) <= i < ceil((iy+1)·OH/H) (cell i
  // starts at or before iy and ends after it); likewise columns.
  const int y0 = (iy * g.oh) / g.h, y1 = ((iy + 1) * g.oh + g.h - 1) / g.h;
  const int x0 = (ix * g.ow) / g.w, x1 = ((ix + 1) * g.ow + g.w - 1) / g.w;
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0F;
  for (int oy = y0; oy < y1; ++oy) {
    const int rows = cell_end(oy, g.h, g.oh) - cell_begin(oy, g.h, g.oh);
    for (int ox = x0; ox < x1; ++ox) {
      const float inv = __frcp_rn(
          static_cast<float>(rows * (cell_end(ox, g.w, g.ow) - cell_begin(ox, g.w, g.ow))));
      float d[V];
      load_floats<V>(dy + offset_of(g.nhwc, n, c0, oy, ox, g.c, g.oh, g.ow), d);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] = fmaf(d[j], inv, acc[j]);
    }
  }
  store_floats<V>(dx + offset_of(g.nhwc, n, c0, iy, ix, g.c, g.h, g.w), acc);
}

/// Global average pool, NHWC: block (cx, ry) = channel vectors × pixels of one
/// image (blockIdx.y = n); each thread sums pixels ty, ty + ry, ...; then a
/// fixed pairwise tree over ty.
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    global_avgpool_fwd_nhwc_kernel(const T* __restrict__ x,  // (N, HW, C)
                                   T* __restrict__ y,        // (N, C)
                                   int hw, int c) {
  __shared__ float s[V][kBlockThreads];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int cx = static_cast<int>(blockDim.x), ry = static_cast<int>(blockDim.y);
  const int slot = ty * cx + tx;
  const int c0 = (static_cast<int>(blockIdx.x) * cx + tx) * V;
  const bool active = c0 < c;
  const int n = static_cast<int>(blockIdx.y);
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0F;
  if (active) {
    const T* base = x + static_cast<int64_t>(n) * hw * c + c0;
#pragma unroll 4
    for (int r = ty; r < hw; r += ry) {
      float v[V];
      load_floats<V>(base + static_cast<int64_t>(r) * c, v);
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] += v[j];
    }
  }
#pragma unroll
  for (int j = 0; j < V; ++j) s[j][slot] = acc[j];
  int span = 1;
  while (span < ry) span <<= 1;
  for (int st = span >> 1; st > 0; st >>= 1) {
    __syncthreads();
    if (ty < st && ty + st < ry) {
#pragma unroll
      for (int j = 0; j < V; ++j) s[j][slot] += s[j][slot + st * cx];
    }
  }
  if (ty == 0 && active) {
    float out[V];
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = s[j][slot] / static_cast<float>(hw);
    store_floats<V>(y + static_cast<int64_t>(n) * c + c0, out);
  }
}

/// Global average pool, NCHW: one warp per (n, c) plane, lanes stride the plane,
/// then an xor-shuffle tree (same order every run).
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    global_avgpool_fwd_nchw_kernel(const T* __restrict__ x,  // (N·C, HW)
                                   T* __restrict__ y,        // (N·C)
                                   int planes, int hw) {
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (warp >= planes) return;  // uniform across the warp
  const T* base = x + static_cast<int64_t>(warp) * hw;
  float acc = 0.0F;
  for (int i = lane; i < hw; i += 32) acc += to_float(base[i]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFU, acc, off);
  if (lane == 0) y[warp] = from_float<T>(acc / static_cast<float>(hw));
}

/// Global average pool backward, NHWC: dx[n, p, c] = dy[n, c] / HW.
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    global_avgpool_bwd_nhwc_kernel(const T* __restrict__ dy,  // (N, C)
                                   T* __restrict__ dx,        // (N, HW, C)
                                   int n, int hw, int c) {
  const int groups = c / V;
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= n * hw * groups) return;
  const int c0 = (t % groups) * V;
  const int row = t / groups;  // pixel of the whole batch
  const int img = row / hw;
  float v[V];
  load_floats<V>(dy + static_cast<int64_t>(img) * c + c0, v);
  const float inv = 1.0F / static_cast<float>(hw);
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] *= inv;
  store_floats<V>(dx + static_cast<int64_t>(row) * c + c0, v);
}

/// Global average pool backward, NCHW: dx[plane, i] = dy[plane] / HW.
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    global_avgpool_bwd_nchw_kernel(const T* __restrict__ dy,  // (N·C)
                                   T* __restrict__ dx,        // (N·C, HW)
                                   int total, int hw) {
  const int t = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= total) return;
  dx[t] = from_float<T>(to_float(dy[t / hw]) * (1.0F / static_cast<float>(hw)));
}

// ============================================================================
// launchers
// ============================================================================

std::string to_string(const models::Shape& s) {
  return "(N=" + std::to_string(s.n) + ", C=" + std::to_string(s.c) + ", H=" + std::to_string(s.h) +
         ", W=" + std::to_string(s.w) + ")";
}

constexpr int64_t kIndexLimit = int64_t{1} << 31;

void check_dims(const char* fn, const models::Shape& in, const models::Shape& out) {
  detail::require(in.n > 0 && in.c > 0 && in.h > 0 && in.w > 0, fn, "empty input " + to_string(in));
  detail::require(in.elements() < kIndexLimit && out.elements() < kIndexLimit, fn,
                  "tensors must have fewer than 2^31 elements, input " + to_string(in) +
                      ", output " + to_string(out));
}

int pool_out_dim(const char* axis, int in, int k, int s, int p, bool ceil_mode) {
  const int span = in + 2 * p - k;
  detail::require(span >= 0, "pool_output_shape",
                  std::string("window larger than the padded input along ") + axis + " (size " +
                      std::to_string(in) + ", pad " + std::to_string(p) + ", kernel " +
                      std::to_string(k) + ")");
  int out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // PyTorch: with ceil_mode the last window must start inside the padded input.
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

PoolGeom make_geom(const models::Shape& in, const models::Shape& out,
                   const models::PoolAttrs& a, DataFormat format) {
  return PoolGeom{in.n,       in.c,       in.h,       in.w,       out.h,
                  out.w,      a.kernel_h, a.kernel_w, a.stride_h, a.stride_w,
                  a.pad_h,    a.pad_w,    a.count_include_pad, format == DataFormat::NHWC};
}

PoolGeom make_geom(const models::Shape& in, const models::Shape& out, DataFormat format) {
  return PoolGeom{in.n, in.c, in.h, in.w, out.h, out.w, 1, 1, 1, 1, 0, 0, true,
                  format == DataFormat::NHWC};
}

template <typename T>
bool use_vectors(const PoolGeom& g, std::initializer_list<const void*> ptrs) {
  if (!g.nhwc || g.c % kPack<T> != 0) return false;
  for (const void* p : ptrs)
    if (!detail::aligned16(p)) return false;
  return true;
}

/// Launches `vec_kernel` (16-byte packs of V channels) when `vec`, else
/// `scalar_kernel`, with one thread per pack / element of `elements`.
template <typename... Args>
void launch_pool(void (*vec_kernel)(Args...), void (*scalar_kernel)(Args...), bool vec, int pack,
                 int64_t elements, cudaStream_t stream, std::type_identity_t<Args>... args) {
  if (vec) {
    vec_kernel<<<detail::grid_1d(elements / pack), kBlockThreads, 0, stream>>>(args...);
  } else {
    scalar_kernel<<<detail::grid_1d(elements), kBlockThreads, 0, stream>>>(args...);
  }
  CNNBENCH_CHECK_LAUNCH();
}

models::Shape adaptive_output_shape(const char* fn, const models::Shape& in,
                                    const models::AdaptiveAvgPoolAttrs& a) {
  detail::require(a.out_h > 0 && a.out_w > 0, fn, "output size must be positive");
  return models::Shape{in.n, in.c, a.out_h, a.out_w};
}

}  // namespace

models::Shape pool_output_shape(const models::Shape& in, const models::PoolAttrs& a) {
  constexpr const char* fn = "pool_output_shape";
  detail::require(a.kernel_h >= 1 && a.kernel_w >= 1 && a.stride_h >= 1 && a.stride_w >= 1, fn,
                  "kernel and stride must be >= 1");
  detail::require(a.pad_h >= 0 && a.pad_w >= 0 && 2 * a.pad_h <= a.kernel_h &&
                      2 * a.pad_w <= a.kernel_w,
                  fn, "pad must be between 0 and half the kernel size");
  return models::Shape{in.n, in.c, pool_out_dim("H", in.h, a.kernel_h, a.stride_h, a.pad_h, a.ceil_mode),
                       pool_out_dim("W", in.w, a.kernel_w, a.stride_w, a.pad_w, a.ceil_mode)};
}

template <typename T>
void maxpool_forward(const T* x, T* y, uint8_t* argmax, const models::Shape& in,
                     const models::PoolAttrs& attrs, DataFormat format, cudaStream_t stream) {
  constexpr const char* fn = "maxpool_forward";
  const models::Shape out = pool_output_shape(in, attrs);
  check_dims(fn, in, out);
  detail::require(x != nullptr && y != nullptr, fn, "x and y must be non-null");
  detail::require(argmax == nullptr || attrs.kernel_h * attrs.kernel_w <= 256, fn,
                  "argmax positions are one byte: kernel_h·kernel_w must be <= 256");
  const PoolGeom g = make_geom(in, out, attrs, format);
  launch_pool(maxpool_fwd_kernel<T, kPack<T>>, maxpool_fwd_kernel<T, 1>,
              use_vectors<T>(g, {x, y, argmax}), kPack<T>, out.elements(), stream, x, y, argmax, g);
}

template <typename T>
void maxpool_backward(const T* dy, const uint8_t* argmax, T* dx, const models::Shape& in,
                      const models::PoolAttrs& attrs, DataFormat format, cudaStream_t stream) {
  constexpr const char* fn = "maxpool_backward";
  const models::Shape out = pool_output_shape(in, attrs);
  check_dims(fn, in, out);
  detail::require(dy != nullptr && argmax != nullptr && dx != nullptr, fn,
                  "dy, argmax and dx must be non-null");
  detail::require(attrs.kernel_h * attrs.kernel_w <= 256, fn, "kernel_h·kernel_w must be <= 256");
  const PoolGeom g = make_geom(in, out, attrs, format);
  launch_pool(maxpool_bwd_kernel<T, kPack<T>>, maxpool_bwd_kernel<T, 1>,
              use_vectors<T>(g, {dy, argmax, dx}), kPack<T>, in.elements(), stream, dy, argmax, dx, g);
}

template <typename T>
void avgpool_forward(const T* x, T* y, const models::Shape& in, const models::PoolAttrs& attrs,
                     DataFormat format, cudaStream_t stream) {
  constexpr const char* fn = "avgpool_forward";
  const models::Shape out = pool_output_shape(in, attrs);
  check_dims(fn, in, out);
  detail::require(x != nullptr && y != nullptr, fn, "x and y must be non-null");
  const PoolGeom g = make_geom(in, out, attrs, format);
  launch_pool(avgpool_fwd_kernel<T, kPack<T>>, avgpool_fwd_kernel<T, 1>, use_vectors<T>(g, {x, y}),
              kPack<T>, out.elements(), stream, x, y, g);
}

template <typename T>
void avgpool_backward(const T* dy, T* dx, const models::Shape& in, const models::PoolAttrs& attrs,
                      DataFormat format, cudaStream_t stream) {
  constexpr const char* fn = "avgpool_backward";
  const models::Shape out = pool_output_shape(in, attrs);
  check_dims(fn, in, out);
  detail::require(dy != nullptr && dx != nullptr, fn, "dy and dx must be non-null");
  const PoolGeom g = make_geom(in, out, attrs, format);
  launch_pool(avgpool_bwd_kernel<T, kPack<T>>, avgpool_bwd_kernel<T, 1>, use_vectors<T>(g, {dy, dx}),
              kPack<T>, in.elements(), stream, dy, dx, g);
}

template <typename T>
void adaptive_avgpool_forward(const T* x, T* y, const models::Shape& in,
                              const models::AdaptiveAvgPoolAttrs& attrs, DataFormat format,
                              cudaStream_t stream) {
  constexpr const char* fn = "adaptive_avgpool_forward";
  const models::Shape out = adaptive_output_shape(fn, in, attrs);
  check_dims(fn, in, out);
  detail::require(x != nullptr && y != nullptr, fn, "x and y must be non-null");
  const PoolGeom g = make_geom(in, out, format);
  const bool vec = use_vectors<T>(g, {x, y});
  if (out.h != 1 || out.w != 1) {
    launch_pool(adaptive_avgpool_fwd_kernel<T, kPack<T>>, adaptive_avgpool_fwd_kernel<T, 1>, vec,
                kPack<T>, out.elements(), stream, x, y, g);
    return;
  }
  const int hw = in.h * in.w;
  if (g.nhwc) {
    detail::require(in.n <= 65535, fn, "batch must be <= 65535");
    const int64_t vecs = vec ? in.c / kPack<T> : in.c;
    // One block row per image: row_grid(1 row, ...) gives the (cx, ry) block
    // and the split of wide channel ranges; the grid's y is the batch.
    const auto rg = detail::row_grid(1, vecs, 1, 1);
    const dim3 grid(rg.grid.x, static_cast<unsigned>(in.n));
    if (vec) {
      global_avgpool_fwd_nhwc_kernel<T, kPack<T>><<<grid, rg.block, 0, stream>>>(x, y, hw, in.c);
    } else {
      global_avgpool_fwd_nhwc_kernel<T, 1><<<grid, rg.block, 0, stream>>>(x, y, hw, in.c);
    }
  } else {
    const int planes = in.n * in.c;
    global_avgpool_fwd_nchw_kernel<T>
        <<<detail::grid_1d(int64_t{planes} * 32), kBlockThreads, 0, stream>>>(x, y, planes, hw);
  }
  CNNBENCH_CHECK_LAUNCH();
}

template <typename T>
void adaptive_avgpool_backward(const T* dy, T* dx, const models::Shape& in,
                               const models::AdaptiveAvgPoolAttrs& attrs, DataFormat format,
                               cudaStream_t stream) {
  constexpr const char* fn = "adaptive_avgpool_backward";
  const models::Shape out = adaptive_output_shape(fn, in, attrs);
  check_dims(fn, in, out);
  detail::require(dy != nullptr && dx != nullptr, fn, "dy and dx must be non-null");
  const PoolGeom g = make_geom(in, out, format);
  const bool vec = use_vectors<T>(g, {dy, dx});
  if (out.h != 1 || out.w != 1) {
    launch_pool(adaptive_avgpool_bwd_kernel<T, kPack<T>>, adaptive_avgpool_bwd_kernel<T, 1>, vec,
                kPack<T>, in.elements(), stream, dy, dx, g);
    return;
  }
  const int hw = in.h * in.w;
  if (g.nhwc) {
    if (vec) {
      global_avgpool_bwd_nhwc_kernel<T, kPack<T>>
          <<<detail::grid_1d(in.elements() / kPack<T>), kBlockThreads, 0, stream>>>(dy, dx, in.n,
                                                                                   hw, in.c);
    } else {
      global_avgpool_bwd_nhwc_kernel<T, 1>
          <<<detail::grid_1d(in.elements()), kBlockThreads, 0, stream>>>(dy, dx, in.n, hw, in.c);
    }
  } else {
    global_avgpool_bwd_nchw_kernel<T><<<detail::grid_1d(in.elements()), kBlockThreads, 0, stream>>>(
        dy, dx, static_cast<int>(in.elements()), hw);
  }
  CNNBENCH_CHECK_LAUNCH();
}

#define CNNBENCH_INSTANTIATE_POOL(T)                                                             \
  template void maxpool_forward<T>(const T*, T*, uint8_t*, const models::Shape&,                 \
                                   const models::PoolAttrs&, DataFormat, cudaStream_t);          \
  template void maxpool_backward<T>(const T*, const uint8_t*, T*, const models::Shape&,          \
                                    const models::PoolAttrs&, DataFormat, cudaStream_t);         \
  template void avgpool_forward<T>(const T*, T*, const models::Shape&, const models::PoolAttrs&, \
                                   DataFormat, cudaStream_t);                                    \
  template void avgpool_backward<T>(const T*, T*, const models::Shape&,                          \
                                    const models::PoolAttrs&, DataFormat, cudaStream_t);         \
  template void adaptive_avgpool_forward<T>(const T*, T*, const models::Shape&,                  \
                                            const models::AdaptiveAvgPoolAttrs&, DataFormat,     \
                                            cudaStream_t);                                       \
  template void adaptive_avgpool_backward<T>(const T*, T*, const models::Shape&,                 \
                                             const models::AdaptiveAvgPoolAttrs&, DataFormat,    \
                                             cudaStream_t);
CNNBENCH_INSTANTIATE_POOL(float)
CNNBENCH_INSTANTIATE_POOL(__half)
CNNBENCH_INSTANTIATE_POOL(__nv_bfloat16)
#undef CNNBENCH_INSTANTIATE_POOL

}  // namespace cnnbench::kernels::cuda
