// Element-wise and data-movement kernels of the CUDA backend: add (residual
// connections and gradient accumulation), channel concat and its backward,
// flatten to PyTorch's C·H·W order, dropout with a counter-based mask, casts
// between fp32 and fp16/bf16, the first layer's channel padding, and the
// synthetic batch (images ~ N(0, 1), labels uniform).
//
// Storage type T ∈ {float, __half, __nv_bfloat16} with fp32 arithmetic unless a
// function says otherwise. 16-byte accesses wherever the pointers (and the row
// widths, for strided copies) allow, else one element per access. Every
// launcher enqueues on `stream` only, allocates nothing, never synchronises
// (CUDA-graph capturable) and throws std::invalid_argument on bad arguments.
//
// Random numbers come from Philox4x32-10 (philox.h) keyed by the run's seed and
// indexed by (element group, stream id, step): a pure function, so forward and
// backward regenerate the same dropout mask with nothing stored, and a CUDA
// graph replays a different mask each step by reading the step counter from
// device memory.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {

// ---- add ------------------------------------------------------------------

/// y = Σ inputs (two or more, equal shapes, any layout), summed in fp32 and
/// rounded once per group of up to 8 inputs. y may alias any input when there
/// are at most 8; beyond that only inputs[0]. Its backward needs no kernel: each
/// input's gradient is dy itself (alias it, or copy with cudaMemcpyAsync).
/// Bytes moved: (inputs + 1)·count·sizeof(T).
template <typename T>
void add(std::span<const T* const> inputs,  // each (count)
         T* y,                              // (count)
         int64_t count, cudaStream_t stream);

// ---- concat along channels -------------------------------------------------

/// Concatenates inputs[i] (N, channels[i], H, W) along channels into y
/// (N, Σ channels, H, W), in `format`. One strided copy per input.
/// Bytes moved: 2·N·ΣC·H·W·sizeof(T).
template <typename T>
void concat_channels(std::span<const T* const> inputs,  // (N, H, W, C_i) NHWC or (N, C_i, H, W) NCHW
                     std::span<const int> channels,     // C_i
                     T* y,                              // (N, H, W, ΣC_i) NHWC or (N, ΣC_i, H, W) NCHW
                     int n, int h, int w, DataFormat format, cudaStream_t stream);

/// Backward of concat_channels: dx[i] = the channel slice of dy for input i.
/// Bytes moved: 2·N·ΣC·H·W·sizeof(T).
template <typename T>
void concat_channels_backward(const T* dy,                     // (N, H, W, ΣC_i) or (N, ΣC_i, H, W)
                              std::span<T* const> dx,          // (N, H, W, C_i) or (N, C_i, H, W)
                              std::span<const int> channels,   // C_i
                              int n, int h, int w, DataFormat format, cudaStream_t stream);

// ---- flatten ----------------------------------------------------------------

/// torch.flatten(x, 1) of an NHWC tensor: y[n, c·H·W + h·W + w] = x[n, h, w, c]
/// (a batched transpose (H·W, C) → (C, H·W) through shared-memory tiles). With
/// H·W == 1 the two orders coincide: a plain copy (skipped when y == x, so the
/// caller may alias). NCHW tensors are already in this order: no kernel needed.
/// y must not alias x when H·W > 1. Bytes moved: 2·N·C·H·W·sizeof(T).
template <typename T>
void flatten_nhwc(const T* x,  // (N, H, W, C) NHWC
                  T* y,        // (N, C·H·W) in C, H, W order
                  int n, int c, int h, int w, cudaStream_t stream);

/// Backward of flatten_nhwc: dx[n, h, w, c] = dy[n, c·H·W + h·W + w].
/// Bytes moved: 2·N·C·H·W·sizeof(T).
template <typename T>
void flatten_nhwc_backward(const T* dy,  // (N, C·H·W)
                           T* dx,        // (N, H, W, C) NHWC
                           int n, int c, int h, int w, cudaStream_t stream);

// ---- dropout ----------------------------------------------------------------

/// Where a dropout mask comes from: element i of layer `layer_id` at training
/// step *step is kept iff philox_uniform(Philox(counter = (i/4, layer_id,
/// step_lo, step_hi), key = seed)[i % 4]) >= p (philox_uniform: the top 24 bits
/// / 2^24), i counted from the start of the buffer passed in.
/// The keep rate is 1 − p (to 2^-24).
struct DropoutMask {
  float p = 0.5F;              ///< drop probability, in [0, 1]
  uint64_t seed = 0;           ///< the run's seed
  uint32_t layer_id = 0;       ///< distinct per dropout layer of the graph
  const uint64_t* step = nullptr;  ///< (1) device step counter (dropout_step_advance)
};

/// Inverted dropout, as torch.nn.Dropout in training: y = x·keep/(1 − p)
/// (p = 1 gives zeros). y may alias x. count must be < 2^34.
/// Bytes moved: 2·count·sizeof(T).
template <typename T>
void dropout_forward(const T* x,  // (count), any layout
                     T* y,        // (count)
                     int64_t count, const DropoutMask& mask, cudaStream_t stream);

/// dx = dy·keep/(1 − p) with the forward's mask (same mask arguments and the
/// same *step value: advance the counter after the backward). dx may alias dy.
/// Bytes moved: 2·count·sizeof(T).
template <typename T>
void dropout_backward(const T* dy,  // (count)
                      T* dx,        // (count)
                      int64_t count, const DropoutMask& mask, cudaStream_t stream);

/// *step += 1 on the device (one thread), once per training step.
void dropout_step_advance(uint64_t* step, cudaStream_t stream);

// ---- casts and channel padding -----------------------------------------------

/// y[i] = x[i] converted (round to nearest even when narrowing). Instantiated for
/// float → __half, float → __nv_bfloat16, __half → float, __nv_bfloat16 → float.
/// Bytes moved: count·(sizeof(Src) + sizeof(Dst)).
template <typename Src, typename Dst>
void cast(const Src* x,  // (count)
          Dst* y,        // (count)
          int64_t count, cudaStream_t stream);

/// Pads the channels of an NHWC tensor with zeros: y[m, c] = x[m, c] for
/// c < channels, 0 for channels <= c < padded_channels (the first convolution
/// with C = 3 padded to 4 or 8 for cuDNN's tensor-core kernels, CUDNN.md §2).
/// Bytes moved: rows·(channels + padded_channels)·sizeof(T).
template <typename T>
void pad_channels_nhwc(const T* x,  // (rows, channels), rows = N·H·W
                       T* y,        // (rows, padded_channels)
                       int64_t rows, int channels, int padded_channels, cudaStream_t stream);

// ---- synthetic data -------------------------------------------------------------

/// Fills a batch of images with N(0, 1) values (Philox4x32-10 + Box–Muller).
/// The value of logical element (n, c, h, w) depends only on (seed, its NCHW
/// index i), so NHWC and NCHW runs see the same images: with (w0, w1) the word
/// pair (i % 4) & 2 of Philox(counter = (i/4 low, i/4 high, 0x494D4147, 0),
/// key = seed), u1 = philox_uniform_open(w0), u2 = philox_uniform(w1), the value
/// is sqrt(−2 ln u1)·cos(2π u2) for even i and ·sin(2π u2) for odd i. `shape`
/// holds the logical dims (C = the real channels, 3 for RGB); the buffer has
/// `stored_channels` >= C channels, the extra ones zero (the padded input of the
/// first convolution).
/// Bytes moved: N·stored_channels·H·W·sizeof(T) written.
template <typename T>
void synthetic_images(T* images,  // (N, H, W, stored_channels) NHWC or (N, stored_channels, H, W) NCHW
                      const models::Shape& shape, int stored_channels, DataFormat format,
                      uint64_t seed, cudaStream_t stream);

/// Fills labels with integers uniform in [0, classes): label i = (w·classes) >> 32
/// for w = word i % 4 of Philox(counter = (i/4, 0, 0x4C41424C, 0), key = seed)
/// (bias below classes/2^32). Bytes moved: 4·n written.
void synthetic_labels(int32_t* labels,  // (n)
                      int n, int classes, uint64_t seed, cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
