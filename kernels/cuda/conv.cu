// Bias kernels of the conv layer: the forward broadcast add and the bias
// gradient (a reduction over N·P·Q per output channel). Both are memory-bound
// and only used by the conv layers that have a bias (AlexNet, VGG).
#include <algorithm>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/dtype.cuh"

namespace cnnbench::kernels::cuda {
namespace {

// ----------------------------------------------------------------------------
// kernels
// ----------------------------------------------------------------------------

// y [total] += bias[channel]; channel = i % K (NHWC) or (i / PQ) % K (NCHW).
template <typename T, bool kNhwc>
__global__ void bias_forward_kernel(T* y, const T* bias, int64_t total, int64_t k, int64_t pq) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t ch = kNhwc ? i % k : (i / pq) % k;
    y[i] = from_float<T>(to_float(y[i]) + to_float(bias[ch]));
  }
}

constexpr int kNhwcCols = 32;  // channels per block: one warp reads 32 consecutive channels
constexpr int kNhwcRows = 8;   // rows (n, p, q) read in parallel per block
constexpr int kNchwThreads = 256;

// NHWC: dy is a row-major [M = N·P·Q, K] matrix. Block (x = channel tile,
// y = split) sums rows [split·per_split, (split+1)·per_split) of its 32
// channels into partial[split][channel]. Fixed order: deterministic.
template <typename T>
__global__ void bias_backward_nhwc_partial(const T* dy, float* partial, int64_t m, int64_t k,
                                           int64_t per_split) {
  __shared__ float tile[kNhwcRows][kNhwcCols + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kNhwcCols + threadIdx.x;
  const int64_t split = blockIdx.y;
  const int64_t begin = split * per_split;
  const int64_t end = min(m, begin + per_split);
  float sum = 0.0F;
  if (col < k) {
    for (int64_t row = begin + threadIdx.y; row < end; row += kNhwcRows) {
      sum += to_float(dy[row * k + col]);
    }
  }
  tile[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < k) {
    float total = 0.0F;
#pragma unroll
    for (int j = 0; j < kNhwcRows; ++j) total += tile[j][threadIdx.x];
    partial[split * k + col] = total;
  }
}

// NCHW: channel `blockIdx.x` holds N runs of PQ contiguous elements; block
// (channel, split) sums elements [split·per_split, ...) of the N·PQ flattened
// ones into partial[split][channel] with a fixed-shape tree reduction.
template <typename T>
__global__ void bias_backward_nchw_partial(const T* dy, float* partial, int64_t n, int64_t k,
                                           int64_t pq, int64_t per_split) {
  __shared__ float sums[kNchwThreads];
  const int64_t ch = blockIdx.x;
  const int64_t split = blockIdx.y;
  const int64_t count = n * pq;
  const int64_t begin = split * per_split;
  const int64_t end = min(count, begin + per_split);
  float sum = 0.0F;
  for (int64_t j = begin + threadIdx.x; j < end; j += kNchwThreads) {
    const int64_t b = j / pq;
    const int64_t e = j - b * pq;
    sum += to_float(dy[(b * k + ch) * pq + e]);
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kNchwThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[split * k + ch] = sums[0];
}

// db[c] = Σ_split partial[split][c], in split order.
template <typename T>
__global__ void bias_backward_finalize(const float* partial, T* db, int64_t splits, int64_t k) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < k; c += step) {
    float s = 0.0F;
    for (int64_t j = 0; j < splits; ++j) s += partial[j * k + c];
    db[c] = from_float<T>(s);
  }
}

// ----------------------------------------------------------------------------
// launchers
// ----------------------------------------------------------------------------

// How the N·P·Q elements of a channel are cut into slices: at least 4096
// elements per slice (each thread then adds ≥ 16 values) and at most 1024
// slices (partials stay small and the finalize loop short).
struct BiasSplit {
  int64_t splits = 1;
  int64_t per_split = 1;
};

BiasSplit bias_split(int64_t n, int64_t pq) {
  constexpr int64_t kMinPerSplit = 4096;
  constexpr int64_t kMaxSplits = 1024;
  const int64_t count = std::max<int64_t>(1, n * pq);
  BiasSplit s;
  s.splits = std::clamp<int64_t>((count + kMinPerSplit - 1) / kMinPerSplit, 1, kMaxSplits);
  s.per_split = (count + s.splits - 1) / s.splits;
  s.splits = (count + s.per_split - 1) / s.per_split;
  return s;
}

int grid_for(int64_t total, int threads) {
  constexpr int64_t kMaxBlocks = 8192;  // grid-stride loops cover the rest
  return static_cast<int>(std::clamp<int64_t>((total + threads - 1) / threads, 1, kMaxBlocks));
}

template <typename T>
void bias_forward(void* y, const void* bias, DataFormat format, int64_t n, int64_t k, int64_t pq,
                  cudaStream_t stream) {
  const int64_t total = n * k * pq;
  constexpr int kThreads = 256;
  if (format == DataFormat::NHWC) {
    bias_forward_kernel<T, true><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), total, k, pq);
  } else {
    bias_forward_kernel<T, false><<<grid_for(total, kThreads), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias), total, k, pq);
  }
  CNNBENCH_CHECK_LAUNCH();
}

template <typename T, typename D>
void bias_backward(void* db, const void* dy, DataFormat format, int64_t n, int64_t k, int64_t pq,
                   float* partial, cudaStream_t stream) {
  const BiasSplit s = bias_split(n, pq);
  if (format == DataFormat::NHWC) {
    const dim3 grid(static_cast<unsigned>((k + kNhwcCols - 1) / kNhwcCols),
                    static_cast<unsigned>(s.splits));
    const dim3 block(kNhwcCols, kNhwcRows);
    bias_backward_nhwc_partial<T>
        <<<grid, block, 0, stream>>>(static_cast<const T*>(dy), partial, n * pq, k, s.per_split);
  } else {
    const dim3 grid(static_cast<unsigned>(k), static_cast<unsigned>(s.splits));
    bias_backward_nchw_partial<T><<<grid, kNchwThreads, 0, stream>>>(
        static_cast<const T*>(dy), partial, n, k, pq, s.per_split);
  }
  CNNBENCH_CHECK_LAUNCH();
  constexpr int kThreads = 256;
  bias_backward_finalize<D>
      <<<grid_for(k, kThreads), kThreads, 0, stream>>>(partial, static_cast<D*>(db), s.splits, k);
  CNNBENCH_CHECK_LAUNCH();
}

void check_sizes(const char* what, int64_t n, int64_t k, int64_t pq) {
  if (n <= 0 || k <= 0 || pq <= 0) {
    throw BackendError(std::string(what) + ": sizes must be positive (N=" + std::to_string(n) +
                       ", K=" + std::to_string(k) + ", PQ=" + std::to_string(pq) + ")");
  }
}

}  // namespace

void launch_conv_bias_forward(void* y, const void* bias, DType dtype, DataFormat format, int64_t n,
                              int64_t k, int64_t pq, cudaStream_t stream) {
  check_sizes("conv bias forward", n, k, pq);
  switch (dtype) {
    case DType::F32: bias_forward<float>(y, bias, format, n, k, pq, stream); return;
    case DType::F16: bias_forward<__half>(y, bias, format, n, k, pq, stream); return;
    case DType::BF16: bias_forward<__nv_bfloat16>(y, bias, format, n, k, pq, stream); return;
    case DType::I32: break;
  }
  throw BackendError("conv bias forward: unsupported dtype (F32, F16 or BF16 expected)");
}

int64_t conv_bias_backward_workspace_bytes(DataFormat /*format*/, int64_t n, int64_t k,
                                           int64_t pq) {
  return bias_split(n, pq).splits * std::max<int64_t>(k, 1) * static_cast<int64_t>(sizeof(float));
}

void launch_conv_bias_backward(void* db, const void* dy, DType dtype, DataFormat format, int64_t n,
                               int64_t k, int64_t pq, void* workspace, int64_t workspace_bytes,
                               cudaStream_t stream) {
  launch_bias_backward(db, dtype, dy, dtype, format, n, k, pq, workspace, workspace_bytes, stream);
}

void launch_bias_backward(void* db, DType db_dtype, const void* dy, DType dy_dtype,
                          DataFormat format, int64_t n, int64_t k, int64_t pq, void* workspace,
                          int64_t workspace_bytes, cudaStream_t stream) {
  check_sizes("bias backward", n, k, pq);
  const int64_t needed = conv_bias_backward_workspace_bytes(format, n, k, pq);
  if (workspace == nullptr || workspace_bytes < needed) {
    throw BackendError("bias backward (N=" + std::to_string(n) + ", K=" + std::to_string(k) +
                       ", PQ=" + std::to_string(pq) + ") needs " + std::to_string(needed) +
                       " bytes of workspace, has " + std::to_string(workspace_bytes) +
                       ": include the layer's workspace_bytes() in reserve_workspace");
  }
  if (db_dtype != dy_dtype && db_dtype != DType::F32) {
    throw BackendError("bias backward: db must be F32 or dy's type");
  }
  auto* partial = static_cast<float*>(workspace);
  const bool f32_out = db_dtype == DType::F32;
  switch (dy_dtype) {
    case DType::F32: bias_backward<float, float>(db, dy, format, n, k, pq, partial, stream); return;
    case DType::F16:
      if (f32_out) {
        bias_backward<__half, float>(db, dy, format, n, k, pq, partial, stream);
      } else {
        bias_backward<__half, __half>(db, dy, format, n, k, pq, partial, stream);
      }
      return;
    case DType::BF16:
      if (f32_out) {
        bias_backward<__nv_bfloat16, float>(db, dy, format, n, k, pq, partial, stream);
      } else {
        bias_backward<__nv_bfloat16, __nv_bfloat16>(db, dy, format, n, k, pq, partial, stream);
      }
      return;
    case DType::I32: break;
  }
  throw BackendError("bias backward: unsupported dtype (F32, F16 or BF16 expected)");
}

}  // namespace cnnbench::kernels::cuda
