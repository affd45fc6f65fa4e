// Element-wise and data-movement ops without parameters: add (residual sums),
// concat (Inception branches), flatten (torch.flatten(x, 1)) and dropout, each
// with its backward.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/host_array.h"
#include "kernels/cpu/primitive.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// Where a backward pass writes one input's gradient: `data` is overwritten, or
/// added to when `accumulate` (the input has another consumer whose gradient is
/// already there). A null `data` means the input needs no gradient.
struct GradOut {
  float* data = nullptr;
  bool accumulate = false;
};

/// dst[i] = src[i] (OpenMP).
void copy_elements(const float* src, float* dst, int64_t count);
/// dst[i] += src[i] (OpenMP): the sum of gradients of a tensor with several consumers.
void accumulate_elements(const float* src, float* dst, int64_t count);
/// Writes `src` into `out` as GradOut says (copy or accumulate; nothing when null).
void write_gradient(const float* src, GradOut out, int64_t count);

/// dst = Σ srcs, all `count` elements in the same layout (two or more inputs).
void add_forward(std::span<const float* const> srcs, float* dst, int64_t count);
/// The gradient of a sum is diff_dst for every input.
void add_backward(const float* diff_dst, std::span<const GradOut> diff_srcs, int64_t count);

/// Concatenation along channels of inputs [N, C_i, H, W] into [N, ΣC_i, H, W],
/// all in the layer's DataFormat (a strided copy per image in NCHW, per pixel in NHWC).
/// Throws std::invalid_argument when N, H, W differ or the channels do not add up.
class ConcatLayer {
 public:
  ConcatLayer(std::vector<models::Shape> ins, models::Shape out, DataFormat format);
  void forward(std::span<const float* const> srcs, float* dst) const;
  /// Each input's slice of diff_dst into its GradOut.
  void backward(const float* diff_dst, std::span<const GradOut> diff_srcs) const;

 private:
  std::vector<models::Shape> ins_;
  std::vector<int64_t> channel_offset_;
  models::Shape out_;
  DataFormat format_;
};

/// torch.flatten(x, 1): [N, C, H, W] → [N, C·H·W, 1, 1] with feature index
/// c·H·W + h·W + w. In NCHW, or when H·W = 1, memory is unchanged and the layer is
/// a view (forward/backward copy only when given distinct buffers); in NHWC with
/// H·W > 1 it is a oneDNN reorder nhwc → nchw (and back for the gradient).
class FlattenLayer {
 public:
  FlattenLayer(Context& ctx, models::Shape in, DataFormat format);
  /// True when flattening `in` in `format` leaves memory unchanged.
  [[nodiscard]] static bool is_view(models::Shape in, DataFormat format) {
    return format == DataFormat::NCHW || int64_t{in.h} * in.w == 1;
  }
  /// True when output and input may share memory.
  [[nodiscard]] bool is_view() const { return !fwd_.valid(); }
  void forward(const float* src, float* dst);
  /// diff_src (overwritten) from diff_dst.
  void backward(const float* diff_dst, float* diff_src);

 private:
  int64_t count_;
  dnnl::memory nhwc_, nchw_;
  Primitive fwd_, bwd_;
};

/// Inverted dropout (torch.nn.Dropout in training): y = x·mask with mask = 0
/// with probability p, else 1/(1 − p). new_mask(key) draws the mask: logical
/// element e (NCHW order, whatever the layout) is dropped when
/// random_uniform(key, e) < p (kernels/init.h), so both layouts drop the same
/// elements. forward and backward use the last mask drawn (all ones before the first).
/// Throws std::invalid_argument unless 0 ≤ p ≤ 1.
class DropoutLayer {
 public:
  DropoutLayer(float p, models::Shape shape, DataFormat format);
  void new_mask(uint64_t key);
  void forward(const float* src, float* dst) const;
  void backward(const float* diff_dst, float* diff_src) const;
  /// The mask in the layer's layout (0 or 1/(1 − p)).
  [[nodiscard]] const float* mask() const { return mask_.data(); }
  [[nodiscard]] int64_t mask_bytes() const { return mask_.bytes(); }

 private:
  float p_;
  models::Shape shape_;
  DataFormat format_;
  HostArray<float> mask_;
};

}  // namespace cnnbench::kernels::cpu
