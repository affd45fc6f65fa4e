// Pooling: max and average with a fixed window (torch.nn.MaxPool2d / AvgPool2d)
// and adaptive average pooling (torch.nn.AdaptiveAvgPool2d), forward and backward.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/host_array.h"
#include "kernels/cpu/primitive.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// The windows of an average pooling along one axis: output o averages inputs
/// [start[o], end[o]) with weight scale[o] (1 / the axis's share of the divisor),
/// and input i is covered by outputs [first_out[i], last_out[i]). Both ends of
/// the windows grow with o, so the outputs covering an input are contiguous.
struct AxisWindows {
  std::vector<int> start, end;
  std::vector<float> scale;
  std::vector<int> first_out, last_out;

  /// Windows of torch.nn.AvgPool2d along an axis of `size` inputs and `out`
  /// outputs: start = o·stride − pad, end = min(start + kernel, size + pad),
  /// divisor = end − start before clipping to the input when count_include_pad,
  /// else the clipped count (PyTorch's avg_pool2d; the divisor factorises per axis).
  static AxisWindows fixed(int size, int out, int kernel, int stride, int pad,
                           bool count_include_pad);
  /// Windows of torch.nn.AdaptiveAvgPool2d: [floor(o·size/out), ceil((o+1)·size/out)).
  static AxisWindows adaptive(int size, int out);
};

/// Average pooling with per-axis windows over [N, C, H, W] in the given layout:
/// dst[n,c,oh,ow] = scale_h[oh]·scale_w[ow]·Σ src over the window. Hand-written
/// (OpenMP) because oneDNN has neither adaptive windows nor PyTorch's divisor
/// when ceil_mode lets a window run past the padding.
class AvgPoolKernel {
 public:
  AvgPoolKernel(models::Shape in, models::Shape out, DataFormat format, AxisWindows rows,
                AxisWindows cols);
  void forward(const float* src, float* dst) const;
  /// diff_src (overwritten) from diff_dst.
  void backward(const float* diff_dst, float* diff_src) const;

 private:
  models::Shape in_, out_;
  DataFormat format_;
  AxisWindows rows_, cols_;
};

/// Max or average pooling with a fixed window, as torch.nn.MaxPool2d /
/// AvgPool2d (padding, ceil_mode, count_include_pad). src [N, C, H, W] and dst
/// [N, C, OH, OW] in the layer's DataFormat. Max pooling runs on oneDNN and keeps
/// the arg-max workspace of the last training forward for backward; padding never
/// wins a max.
///
/// Errors: std::invalid_argument when the shapes disagree with the attributes;
/// dnnl::error; BackendError.
class PoolLayer {
 public:
  PoolLayer(Context& ctx, const models::PoolAttrs& attrs, models::Shape in, models::Shape out,
            DataFormat format, bool training = true);

  void forward(const float* src, float* dst);
  /// diff_src (overwritten) from diff_dst of the last forward. Training layers only.
  void backward(const float* diff_dst, float* diff_src);
  /// Bytes of the max-pooling workspace.
  [[nodiscard]] int64_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  bool training_;
  dnnl::memory src_, dst_, diff_src_, diff_dst_, workspace_mem_;
  HostArray<uint8_t> workspace_;
  Primitive fwd_, bwd_;
  std::optional<AvgPoolKernel> avg_;  ///< set for average pooling (max runs on oneDNN)
};

/// Adaptive average pooling to [N, C, out_h, out_w], as torch.nn.AdaptiveAvgPool2d
/// (windows of different sizes when H is not a multiple of out_h).
class AdaptiveAvgPoolLayer {
 public:
  AdaptiveAvgPoolLayer(models::Shape in, models::Shape out, DataFormat format);
  void forward(const float* src, float* dst) const { kernel_.forward(src, dst); }
  void backward(const float* diff_dst, float* diff_src) const {
    kernel_.backward(diff_dst, diff_src);
  }

 private:
  AvgPoolKernel kernel_;
};

}  // namespace cnnbench::kernels::cpu
