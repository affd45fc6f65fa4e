// 2-D convolution (torch.nn.Conv2d) forward, data gradient (dgrad) and weight
// gradient (wgrad) on oneDNN.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/primitive.h"
#include "kernels/cpu/weights.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// A convolution of fixed shapes.
///
/// Tensors: src [N, C, H, W] and dst [N, K, OH, OW] in the layer's DataFormat
/// (plain nhwc or nchw); weights [K, C/groups, R, S] in PyTorch's layout (oihw,
/// or goihw viewed as [groups, K/groups, C/groups, R, S]); bias [K]. Gradients
/// have the shapes and layouts of their tensors. Output size follows
/// torch.nn.Conv2d: OH = floor((H + 2·pad_h − R) / stride_h) + 1.
///
/// With WeightFormat::Preferred (and Auto) oneDNN picks the weight layout of
/// each primitive and the layer reorders the caller's plain weights into it (and
/// weight gradients back) on every call.
///
/// Errors: std::invalid_argument when the shapes disagree with the attributes;
/// dnnl::error when oneDNN has no implementation; BackendError on execution.
class ConvLayer {
 public:
  ConvLayer(Context& ctx, const models::ConvAttrs& attrs, models::Shape in, models::Shape out,
            DataFormat format, bool training = true,
            WeightFormat weight_format = WeightFormat::Auto);

  /// dst = conv(src, weights) + bias. `bias` is ignored (may be null) without bias.
  void forward(const float* src, const float* weights, const float* bias, float* dst);
  /// diff_src = dgrad(diff_dst, weights). Training layers only.
  void backward_data(const float* diff_dst, const float* weights, float* diff_src);
  /// diff_weights = wgrad(src, diff_dst); diff_bias[k] = Σ_{n,h,w} diff_dst.
  /// Training layers only.
  void backward_weights(const float* src, const float* diff_dst, float* diff_weights,
                        float* diff_bias);

  /// Bytes of private weight copies in oneDNN's preferred layouts.
  [[nodiscard]] int64_t private_bytes() const;
  /// oneDNN's implementation names, e.g. "fwd: brgconv:avx512_core_amx, ...".
  [[nodiscard]] std::string implementation() const { return implementation_; }

 private:
  bool has_bias_;
  bool training_;
  dnnl::memory src_, dst_, bias_;
  dnnl::memory diff_src_, diff_dst_, diff_bias_;
  WeightBinding fwd_weights_, bwd_data_weights_, diff_weights_;
  Primitive fwd_, bwd_data_, bwd_weights_;
  std::string implementation_;
};

}  // namespace cnnbench::kernels::cpu
