// Add, concat, flatten, dropout, casts, channel padding and synthetic data:
// see elementwise.cuh.
#include "kernels/cuda/elementwise.cuh"

#include <algorithm>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/philox.h"

namespace cnnbench::kernels::cuda {
namespace {

using detail::ceil_div;
using detail::kBlockThreads;

/// Inputs summed by one add launch.
constexpr int kMaxAddInputs = 8;
/// Philox counter word 2 of the synthetic streams, distinct from dropout's
/// layer ids in practice ("IMAG", "LABL" in ASCII).
constexpr uint32_t kImageStream = 0x494D4147U;
constexpr uint32_t kLabelStream = 0x4C41424CU;
/// Elements per Philox call (four 32-bit words).
constexpr int kPhiloxWords = 4;
/// Transpose tile edge and the rows of it each thread row handles.
constexpr int kTile = 32;
constexpr int kTileRows = 8;

// ============================================================================
// kernels
// ============================================================================

template <typename T>
struct AddInputs {
  const T* p[kMaxAddInputs];
  int count;
};

/// y = Σ in.p[k]; thread t handles elements [t·V, t·V + V) (the straddling
/// thread takes the remainder one by one).
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    add_kernel(AddInputs<T> in,  // in.count pointers, each (count)
               T* y,             // (count); may alias any input
               int64_t count) {
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (base + V <= count) {
    float acc[V];
    load_floats<V>(in.p[0] + base, acc);
    // Unrolled with constant indices so the pointers stay in parameter space.
#pragma unroll
    for (int k = 1; k < kMaxAddInputs; ++k) {
      if (k < in.count) {
        float v[V];
        load_floats<V>(in.p[k] + base, v);
#pragma unroll
        for (int j = 0; j < V; ++j) acc[j] += v[j];
      }
    }
    store_floats<V>(y + base, acc);
  } else {
    for (int64_t i = base; i < count; ++i) {
      float acc = to_float(in.p[0][i]);
#pragma unroll
      for (int k = 1; k < kMaxAddInputs; ++k)
        if (k < in.count) acc += to_float(in.p[k][i]);
      y[i] = from_float<T>(acc);
    }
  }
}

/// dst[r·dst_stride + i] = src[r·src_stride + i] for r < rows, i < width;
/// block (cx, ry) as detail::row_grid, V elements per access.
template <typename T, int V>
__global__ void __launch_bounds__(kBlockThreads)
    copy_rows_kernel(const T* __restrict__ src,  // (rows, src_stride)
                     int64_t src_stride,
                     T* __restrict__ dst,        // (rows, dst_stride)
                     int64_t dst_stride, int64_t rows, int64_t width) {
  const int64_t v = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (v >= width) return;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; r < rows; r += stride) {
    T tmp[V];
    load_raw<V>(src + r * src_stride + v, tmp);
    store_raw<V>(dst + r * dst_stride + v, tmp);
  }
}

/// dst[b, j, i] = src[b, i, j] for src (B, R, S): 32×32 tiles through shared
/// memory (fp32, padded to 33 columns: conflict-free column reads), so both the
/// reads along S and the writes along R are coalesced.
template <typename T>
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_kernel(const T* __restrict__ src,  // (B, R, S)
                     T* __restrict__ dst,        // (B, S, R)
                     int r, int s) {
  __shared__ float tile[kTile][kTile + 1];
  const int64_t plane = static_cast<int64_t>(blockIdx.z) * r * s;
  const int r0 = static_cast<int>(blockIdx.y) * kTile, s0 = static_cast<int>(blockIdx.x) * kTile;
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  for (int i = ty; i < kTile; i += kTileRows) {
    const int rr = r0 + i, ss = s0 + tx;
    if (rr < r && ss < s) tile[i][tx] = to_float(src[plane + static_cast<int64_t>(rr) * s + ss]);
  }
  __syncthreads();
  for (int i = ty; i < kTile; i += kTileRows) {
    const int ss = s0 + i, rr = r0 + tx;
    if (rr < r && ss < s) dst[plane + static_cast<int64_t>(ss) * r + rr] = from_float<T>(tile[tx][i]);
  }
}

/// y = x·keep·scale over groups of four elements (one Philox call each); see
/// DropoutMask for the mask.
template <typename T, bool kVec>
__global__ void __launch_bounds__(kBlockThreads)
    dropout_kernel(const T* x,  // (count)
                   T* y,        // (count); may alias x
                   int64_t count, float p, float scale, uint32_t key0, uint32_t key1,
                   uint32_t layer_id, const uint64_t* __restrict__ step) {  // step: (1)
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t base = g * kPhiloxWords;
  if (base >= count) return;
  const uint64_t st = *step;
  const Philox4 r = philox4x32_10(static_cast<uint32_t>(g), layer_id, static_cast<uint32_t>(st),
                                  static_cast<uint32_t>(st >> 32), key0, key1);
  if (kVec && base + kPhiloxWords <= count) {
    float v[kPhiloxWords];
    load_floats<kPhiloxWords>(x + base, v);
#pragma unroll
    for (int j = 0; j < kPhiloxWords; ++j) v[j] *= philox_uniform(r.v[j]) >= p ? scale : 0.0F;
    store_floats<kPhiloxWords>(y + base, v);
  } else {
#pragma unroll
    for (int j = 0; j < kPhiloxWords; ++j) {
      if (base + j < count) {
        const float keep = philox_uniform(r.v[j]) >= p ? scale : 0.0F;
        y[base + j] = from_float<T>(to_float(x[base + j]) * keep);
      }
    }
  }
}

__global__ void step_advance_kernel(uint64_t* step) { *step += 1; }

/// y = convert(x); thread t handles [t·V, t·V + V).
template <typename Src, typename Dst, int V>
__global__ void __launch_bounds__(kBlockThreads)
    cast_kernel(const Src* __restrict__ x,  // (count)
                Dst* __restrict__ y,        // (count)
                int64_t count) {
  const int64_t base = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (base + V <= count) {
    float v[V];
    load_floats<V>(x + base, v);
    store_floats<V>(y + base, v);
  } else {
    for (int64_t i = base; i < count; ++i) y[i] = from_float<Dst>(to_float(x[i]));
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    pad_channels_kernel(const T* __restrict__ x,  // (rows, c)
                        T* __restrict__ y,        // (rows, cp)
                        int64_t rows, int c, int cp) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * cp) return;
  const int64_t row = t / cp;
  const int ch = static_cast<int>(t - row * cp);
  y[t] = ch < c ? x[row * c + ch] : from_float<T>(0.0F);
}

/// One thread per stored element: decodes its logical (n, c, h, w), and draws
/// the Box–Muller normal of its NCHW index (pairs of Philox words give two
/// normals: r·cos θ and r·sin θ).
template <typename T>
__global__ void __launch_bounds__(kBlockThreads)
    synthetic_images_kernel(T* __restrict__ out,  // (N, H, W, cs) or (N, cs, H, W)
                            int c, int h, int w, int cs, int64_t total, bool nhwc, uint32_t key0,
                            uint32_t key1) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= total) return;
  int64_t rest = t;
  int ch, yy, xx;
  if (nhwc) {
    ch = static_cast<int>(rest % cs);
    rest /= cs;
    xx = static_cast<int>(rest % w);
    rest /= w;
    yy = static_cast<int>(rest % h);
    rest /= h;
  } else {
    xx = static_cast<int>(rest % w);
    rest /= w;
    yy = static_cast<int>(rest % h);
    rest /= h;
    ch = static_cast<int>(rest % cs);
    rest /= cs;
  }
  if (ch >= c) {
    out[t] = from_float<T>(0.0F);
    return;
  }
  const int64_t logical = ((rest * c + ch) * h + yy) * w + xx;
  const uint64_t g = static_cast<uint64_t>(logical) / kPhiloxWords;
  const int j = static_cast<int>(logical % kPhiloxWords);
  const Philox4 r = philox4x32_10(static_cast<uint32_t>(g), static_cast<uint32_t>(g >> 32),
                                  kImageStream, 0U, key0, key1);
  const int pair = j & 2;
  const float radius = sqrtf(-2.0F * logf(philox_uniform_open(r.v[pair])));
  float sin_t = 0.0F, cos_t = 0.0F;
  sincospif(2.0F * philox_uniform(r.v[pair + 1]), &sin_t, &cos_t);
  out[t] = from_float<T>(radius * ((j & 1) != 0 ? sin_t : cos_t));
}

__global__ void __launch_bounds__(kBlockThreads)
    synthetic_labels_kernel(int32_t* __restrict__ labels,  // (n)
                            int n, int classes, uint32_t key0, uint32_t key1) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const Philox4 r = philox4x32_10(static_cast<uint32_t>(i / kPhiloxWords), 0U, kLabelStream, 0U,
                                  key0, key1);
  // Multiply-shift maps a 32-bit word onto [0, classes) (Lemire 2019).
  labels[i] = static_cast<int32_t>((uint64_t{r.v[i % kPhiloxWords]} * static_cast<uint32_t>(classes)) >> 32);
}

// ============================================================================
// launchers
// ============================================================================

/// Copies `rows` rows of `width` elements between strided buffers, with 16-byte
/// accesses when the widths, strides and pointers allow.
template <typename T>
void copy_rows(const T* src, int64_t src_stride, T* dst, int64_t dst_stride, int64_t rows,
               int64_t width, cudaStream_t stream) {
  if (rows <= 0 || width <= 0) return;
  constexpr int V = kPack<T>;
  const bool vec = width % V == 0 && src_stride % V == 0 && dst_stride % V == 0 &&
                   detail::aligned16(src) && detail::aligned16(dst);
  if (vec) {
    const auto g = detail::row_grid(rows, width / V, 4, 65535);
    copy_rows_kernel<T, V><<<g.grid, g.block, 0, stream>>>(src, src_stride, dst, dst_stride, rows, width);
  } else {
    const auto g = detail::row_grid(rows, width, 4, 65535);
    copy_rows_kernel<T, 1><<<g.grid, g.block, 0, stream>>>(src, src_stride, dst, dst_stride, rows, width);
  }
  CNNBENCH_CHECK_LAUNCH();
}

/// (rows, row length, channel stride unit) of one image's slice in a concat:
/// NHWC rows are pixels (N·H·W of them) holding C channels; NCHW rows are
/// images holding C·H·W elements.
struct ConcatGeom {
  int64_t rows;
  int64_t unit;  // elements per channel within a row
};

ConcatGeom concat_geom(const char* fn, std::span<const int> channels, size_t tensors, int n, int h,
                       int w, DataFormat format) {
  detail::require(n > 0 && h > 0 && w > 0, fn, "n, h and w must be > 0");
  detail::require(!channels.empty() && channels.size() == tensors, fn,
                  "need one channel count per tensor, got " + std::to_string(channels.size()) +
                      " counts for " + std::to_string(tensors) + " tensors");
  for (const int c : channels) detail::require(c > 0, fn, "channel counts must be > 0");
  const int64_t hw = int64_t{h} * w;
  return format == DataFormat::NHWC ? ConcatGeom{n * hw, 1} : ConcatGeom{n, hw};
}

template <typename T>
void launch_dropout(const char* fn, const T* x, T* y, int64_t count, const DropoutMask& m,
                    cudaStream_t stream) {
  detail::require(m.p >= 0.0F && m.p <= 1.0F, fn, "p must be in [0, 1], got " + std::to_string(m.p));
  detail::require(count >= 0 && count < (int64_t{1} << 34), fn, "count must be in [0, 2^34)");
  detail::require(count == 0 || (x != nullptr && y != nullptr && m.step != nullptr), fn,
                  "tensors and the step counter must be non-null");
  if (count == 0) return;
  // torch: scale = 1/(1 − p); p = 1 zeroes everything.
  const float scale = m.p < 1.0F ? static_cast<float>(1.0 / (1.0 - static_cast<double>(m.p))) : 0.0F;
  const auto key0 = static_cast<uint32_t>(m.seed), key1 = static_cast<uint32_t>(m.seed >> 32);
  const dim3 grid = detail::grid_1d(ceil_div(count, kPhiloxWords));
  if (detail::aligned16(x) && detail::aligned16(y)) {
    dropout_kernel<T, true><<<grid, kBlockThreads, 0, stream>>>(x, y, count, m.p, scale, key0, key1,
                                                                m.layer_id, m.step);
  } else {
    dropout_kernel<T, false><<<grid, kBlockThreads, 0, stream>>>(x, y, count, m.p, scale, key0,
                                                                 key1, m.layer_id, m.step);
  }
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void add(std::span<const T* const> inputs, T* y, int64_t count, cudaStream_t stream) {
  constexpr const char* fn = "add";
  detail::require(inputs.size() >= 2, fn, "needs two or more inputs, got " + std::to_string(inputs.size()));
  detail::require(count >= 0, fn, "count must be >= 0");
  detail::require(y != nullptr && std::none_of(inputs.begin(), inputs.end(),
                                               [](const T* p) { return p == nullptr; }),
                  fn, "inputs and y must be non-null");
  if (count == 0) return;
  size_t next = 0;
  while (next < inputs.size()) {
    AddInputs<T> in{};
    // After the first launch, y holds the partial sum and is the first input.
    if (next > 0) in.p[in.count++] = y;
    while (in.count < kMaxAddInputs && next < inputs.size()) in.p[in.count++] = inputs[next++];
    bool vec = detail::aligned16(y);
    for (int k = 0; k < in.count; ++k) vec = vec && detail::aligned16(in.p[k]);
    if (vec) {
      constexpr int V = kPack<T>;
      add_kernel<T, V><<<detail::grid_1d(ceil_div(count, V)), kBlockThreads, 0, stream>>>(in, y, count);
    } else {
      add_kernel<T, 1><<<detail::grid_1d(count), kBlockThreads, 0, stream>>>(in, y, count);
    }
    CNNBENCH_CHECK_LAUNCH();
  }
}

template <typename T>
void concat_channels(std::span<const T* const> inputs, std::span<const int> channels, T* y, int n,
                     int h, int w, DataFormat format, cudaStream_t stream) {
  constexpr const char* fn = "concat_channels";
  const ConcatGeom g = concat_geom(fn, channels, inputs.size(), n, h, w, format);
  detail::require(y != nullptr && std::none_of(inputs.begin(), inputs.end(),
                                               [](const T* p) { return p == nullptr; }),
                  fn, "inputs and y must be non-null");
  int64_t total = 0;
  for (const int c : channels) total += c;
  int64_t offset = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int64_t width = channels[i] * g.unit;
    copy_rows(inputs[i], width, y + offset * g.unit, total * g.unit, g.rows, width, stream);
    offset += channels[i];
  }
}

template <typename T>
void concat_channels_backward(const T* dy, std::span<T* const> dx, std::span<const int> channels,
                              int n, int h, int w, DataFormat format, cudaStream_t stream) {
  constexpr const char* fn = "concat_channels_backward";
  const ConcatGeom g = concat_geom(fn, channels, dx.size(), n, h, w, format);
  detail::require(dy != nullptr && std::none_of(dx.begin(), dx.end(),
                                                [](const T* p) { return p == nullptr; }),
                  fn, "dy and dx must be non-null");
  int64_t total = 0;
  for (const int c : channels) total += c;
  int64_t offset = 0;
  for (size_t i = 0; i < dx.size(); ++i) {
    const int64_t width = channels[i] * g.unit;
    copy_rows(dy + offset * g.unit, total * g.unit, dx[i], width, g.rows, width, stream);
    offset += channels[i];
  }
}

namespace {

/// dst (B, S, R) = transpose of src (B, R, S), or a copy when either is 1.
template <typename T>
void transpose(const char* fn, const T* src, T* dst, int b, int r, int s, cudaStream_t stream) {
  detail::require(b > 0 && r > 0 && s > 0, fn, "dims must be > 0");
  detail::require(src != nullptr && dst != nullptr, fn, "tensors must be non-null");
  if (r == 1 || s == 1) {
    if (src != dst) {
      CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(dst, src, sizeof(T) * static_cast<size_t>(b) * r * s,
                                          cudaMemcpyDeviceToDevice, stream));
    }
    return;
  }
  detail::require(src != dst, fn, "the transpose cannot run in place");
  detail::require(b <= 65535 && ceil_div(r, kTile) <= 65535, fn, "batch or rows too large");
  const dim3 grid(static_cast<unsigned>(ceil_div(s, kTile)), static_cast<unsigned>(ceil_div(r, kTile)),
                  static_cast<unsigned>(b));
  transpose_kernel<T><<<grid, dim3(kTile, kTileRows), 0, stream>>>(src, dst, r, s);
  CNNBENCH_CHECK_LAUNCH();
}

}  // namespace

template <typename T>
void flatten_nhwc(const T* x, T* y, int n, int c, int h, int w, cudaStream_t stream) {
  transpose("flatten_nhwc", x, y, n, h * w, c, stream);
}

template <typename T>
void flatten_nhwc_backward(const T* dy, T* dx, int n, int c, int h, int w, cudaStream_t stream) {
  transpose("flatten_nhwc_backward", dy, dx, n, c, h * w, stream);
}

template <typename T>
void dropout_forward(const T* x, T* y, int64_t count, const DropoutMask& mask, cudaStream_t stream) {
  launch_dropout("dropout_forward", x, y, count, mask, stream);
}

template <typename T>
void dropout_backward(const T* dy, T* dx, int64_t count, const DropoutMask& mask,
                      cudaStream_t stream) {
  launch_dropout("dropout_backward", dy, dx, count, mask, stream);
}

void dropout_step_advance(uint64_t* step, cudaStream_t stream) {
  detail::require(step != nullptr, "dropout_step_advance", "step must be non-null");
  step_advance_kernel<<<1, 1, 0, stream>>>(step);
  CNNBENCH_CHECK_LAUNCH();
}

template <typename Src, typename Dst>
void cast(const Src* x, Dst* y, int64_t count, cudaStream_t stream) {
  detail::require(count >= 0, "cast", "count must be >= 0");
  detail::require(count == 0 || (x != nullptr && y != nullptr), "cast", "x and y must be non-null");
  if (count == 0) return;
  constexpr int V = 4;  // 16 bytes of fp32, 8 of the 16-bit type
  if (detail::aligned16(x) && detail::aligned16(y)) {
    cast_kernel<Src, Dst, V><<<detail::grid_1d(ceil_div(count, V)), kBlockThreads, 0, stream>>>(x, y, count);
  } else {
    cast_kernel<Src, Dst, 1><<<detail::grid_1d(count), kBlockThreads, 0, stream>>>(x, y, count);
  }
  CNNBENCH_CHECK_LAUNCH();
}

template <typename T>
void pad_channels_nhwc(const T* x, T* y, int64_t rows, int channels, int padded_channels,
                       cudaStream_t stream) {
  constexpr const char* fn = "pad_channels_nhwc";
  detail::require(rows >= 0 && channels > 0 && padded_channels >= channels, fn,
                  "need rows >= 0 and 0 < channels <= padded_channels");
  detail::require(rows == 0 || (x != nullptr && y != nullptr), fn, "x and y must be non-null");
  if (rows == 0) return;
  pad_channels_kernel<T><<<detail::grid_1d(rows * padded_channels), kBlockThreads, 0, stream>>>(
      x, y, rows, channels, padded_channels);
  CNNBENCH_CHECK_LAUNCH();
}

template <typename T>
void synthetic_images(T* images, const models::Shape& shape, int stored_channels, DataFormat format,
                      uint64_t seed, cudaStream_t stream) {
  constexpr const char* fn = "synthetic_images";
  detail::require(shape.n > 0 && shape.c > 0 && shape.h > 0 && shape.w > 0, fn, "empty shape");
  detail::require(stored_channels >= shape.c, fn, "stored_channels must be >= the image channels");
  detail::require(images != nullptr, fn, "images must be non-null");
  const int64_t total = int64_t{shape.n} * stored_channels * shape.h * shape.w;
  synthetic_images_kernel<T><<<detail::grid_1d(total), kBlockThreads, 0, stream>>>(
      images, shape.c, shape.h, shape.w, stored_channels, total, format == DataFormat::NHWC,
      static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  CNNBENCH_CHECK_LAUNCH();
}

void synthetic_labels(int32_t* labels, int n, int classes, uint64_t seed, cudaStream_t stream) {
  constexpr const char* fn = "synthetic_labels";
  detail::require(n > 0 && classes > 0, fn, "n and classes must be > 0");
  detail::require(labels != nullptr, fn, "labels must be non-null");
  synthetic_labels_kernel<<<detail::grid_1d(n), kBlockThreads, 0, stream>>>(
      labels, n, classes, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  CNNBENCH_CHECK_LAUNCH();
}

#define CNNBENCH_INSTANTIATE_ELEMENTWISE(T)                                                        \
  template void add<T>(std::span<const T* const>, T*, int64_t, cudaStream_t);                      \
  template void concat_channels<T>(std::span<const T* const>, std::span<const int>, T*, int, int,  \
                                   int, DataFormat, cudaStream_t);                                 \
  template void concat_channels_backward<T>(const T*, std::span<T* const>, std::span<const int>,   \
                                            int, int, int, DataFormat, cudaStream_t);              \
  template void flatten_nhwc<T>(const T*, T*, int, int, int, int, cudaStream_t);                   \
  template void flatten_nhwc_backward<T>(const T*, T*, int, int, int, int, cudaStream_t);          \
  template void dropout_forward<T>(const T*, T*, int64_t, const DropoutMask&, cudaStream_t);       \
  template void dropout_backward<T>(const T*, T*, int64_t, const DropoutMask&, cudaStream_t);      \
  template void pad_channels_nhwc<T>(const T*, T*, int64_t, int, int, cudaStream_t);               \
  template void synthetic_images<T>(T*, const models::Shape&, int, DataFormat, uint64_t,           \
                                    cudaStream_t);
CNNBENCH_INSTANTIATE_ELEMENTWISE(float)
CNNBENCH_INSTANTIATE_ELEMENTWISE(__half)
CNNBENCH_INSTANTIATE_ELEMENTWISE(__nv_bfloat16)
#undef CNNBENCH_INSTANTIATE_ELEMENTWISE

template void cast<float, __half>(const float*, __half*, int64_t, cudaStream_t);
template void cast<float, __nv_bfloat16>(const float*, __nv_bfloat16*, int64_t, cudaStream_t);
template void cast<__half, float>(const __half*, float*, int64_t, cudaStream_t);
template void cast<__nv_bfloat16, float>(const __nv_bfloat16*, float*, int64_t, cudaStream_t);

}  // namespace cnnbench::kernels::cuda
