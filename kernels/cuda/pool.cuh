// Pooling for the CUDA backend: max pool (forward saving the argmax, backward
// from it), average pool (count_include_pad and ceil_mode as PyTorch) and
// adaptive average pool (global average pool is its 1×1 case, with kernels of
// its own). Semantics are torch.nn.MaxPool2d / AvgPool2d / AdaptiveAvgPool2d's
// (see models::PoolAttrs, models::AdaptiveAvgPoolAttrs); dilation 1.
//
// Storage type T ∈ {float, __half, __nv_bfloat16}, fp32 arithmetic. Layouts:
// NHWC (threads across channels, 16-byte accesses when C is a multiple of
// 16/sizeof(T) and the pointers are 16-byte aligned) and NCHW (threads across
// W, one element each). Backward kernels gather (one thread per input element
// visits the outputs whose windows cover it): no atomics, deterministic.
//
// Requires N·C·H·W < 2^31 for input and output (32-bit indexing). Launchers
// enqueue one kernel on `stream`, allocate nothing and never synchronise
// (CUDA-graph capturable); they throw std::invalid_argument on bad arguments.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/backend.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {

/// Output dims of a pooling window over `in`, as PyTorch's pooling_output_shape:
/// floor((H + 2·pad − k)/stride) + 1, or ceil(...) + 1 with ceil_mode, minus one
/// when ceil_mode would start the last window at or beyond H + pad. Throws
/// std::invalid_argument for a kernel or stride < 1, pad < 0, pad > kernel/2
/// (PyTorch's limit) or an empty output.
models::Shape pool_output_shape(const models::Shape& in, const models::PoolAttrs& attrs);

/// Max pool forward. Where several elements of a window hold the maximum, the
/// first in row-major window order wins; NaN wins over numbers (as PyTorch).
/// argmax (optional; needed by maxpool_backward) receives each output's
/// position inside its window, (ih − oh·stride_h + pad_h)·kernel_w + (iw − ...),
/// one byte per output element, so kernel_h·kernel_w must be <= 256.
/// Bytes moved: reads about (k_h·k_w/(s_h·s_w))·in elements (L1/L2 absorb the
/// overlap; DRAM sees ≈ in), writes out elements (+ out bytes of argmax):
/// ≈ (in + out)·sizeof(T) + out.
template <typename T>
void maxpool_forward(const T* x,        // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                     T* y,              // pool_output_shape(in, attrs), same layout
                     uint8_t* argmax,   // same dims as y, or nullptr (inference)
                     const models::Shape& in, const models::PoolAttrs& attrs, DataFormat format,
                     cudaStream_t stream);

/// Max pool backward: dx[i] = Σ dy[o] over the outputs o whose argmax is i
/// (every dx element is written). Bytes moved: in·sizeof(T) written, about
/// out·(sizeof(T) + 1) read. dx must not alias dy.
template <typename T>
void maxpool_backward(const T* dy,             // (N, OH, OW, C) NHWC or (N, C, OH, OW) NCHW
                      const uint8_t* argmax,   // same dims as dy, from maxpool_forward
                      T* dx,                   // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                      const models::Shape& in, const models::PoolAttrs& attrs,
                      DataFormat format, cudaStream_t stream);

/// Average pool forward: each output is the window sum divided by the window
/// size clipped to the padded input (count_include_pad) or by the number of
/// input elements in it (!count_include_pad), as PyTorch's avg_pool2d.
/// Bytes moved: ≈ (in + out)·sizeof(T).
template <typename T>
void avgpool_forward(const T* x,  // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                     T* y,        // pool_output_shape(in, attrs), same layout
                     const models::Shape& in, const models::PoolAttrs& attrs, DataFormat format,
                     cudaStream_t stream);

/// Average pool backward: dx[i] = Σ dy[o]/divisor(o) over the windows o that
/// cover i. Bytes moved: ≈ (in + out)·sizeof(T). dx must not alias dy.
template <typename T>
void avgpool_backward(const T* dy,  // (N, OH, OW, C) NHWC or (N, C, OH, OW) NCHW
                      T* dx,        // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                      const models::Shape& in, const models::PoolAttrs& attrs,
                      DataFormat format, cudaStream_t stream);

/// Adaptive average pool forward to attrs.out_h × attrs.out_w: output cell (i, j)
/// averages rows [floor(i·H/oh), ceil((i+1)·H/oh)) and likewise columns. The
/// 1×1 case (global average pool) uses a dedicated reduction kernel. Output
/// dims (N, C, out_h, out_w). Bytes moved: ≈ (in + out)·sizeof(T).
template <typename T>
void adaptive_avgpool_forward(const T* x,  // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                              T* y,        // (N, oh, ow, C) NHWC or (N, C, oh, ow) NCHW
                              const models::Shape& in, const models::AdaptiveAvgPoolAttrs& attrs,
                              DataFormat format, cudaStream_t stream);

/// Adaptive average pool backward: dx[i] = Σ dy[cell]/|cell| over the cells
/// containing i (global: dy[n, c]/(H·W) everywhere). Bytes moved:
/// ≈ (in + out)·sizeof(T). dx must not alias dy.
template <typename T>
void adaptive_avgpool_backward(const T* dy,  // (N, oh, ow, C) NHWC or (N, C, oh, ow) NCHW
                               T* dx,        // (N, H, W, C) NHWC or (N, C, H, W) NCHW
                               const models::Shape& in,
                               const models::AdaptiveAvgPoolAttrs& attrs, DataFormat format,
                               cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
