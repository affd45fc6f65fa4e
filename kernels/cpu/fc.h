// Fully connected layer y = x·Wᵀ + b (torch.nn.Linear on the flattened input)
// forward and backward, on oneDNN's inner product.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/primitive.h"
#include "kernels/cpu/weights.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// A fully connected layer on an input [N, C, H, W] in the layer's DataFormat
/// (H = W = 1 after a flatten or global pooling, larger when applied directly to
/// a feature map). Output [N, out_features] (= [N, out, 1, 1]); weights
/// [out_features, C·H·W] in PyTorch's layout, whose in-feature index is
/// c·H·W + h·W + w whatever the activation layout, so the same weights give the
/// same result in NHWC and NCHW; bias [out_features].
///
/// Errors: std::invalid_argument when the output shape is not [N, out, 1, 1];
/// dnnl::error; BackendError.
class FullyConnectedLayer {
 public:
  FullyConnectedLayer(Context& ctx, const models::FullyConnectedAttrs& attrs, models::Shape in,
                      models::Shape out, DataFormat format, bool training = true,
                      WeightFormat weight_format = WeightFormat::Auto);

  void forward(const float* src, const float* weights, const float* bias, float* dst);
  /// Training layers only.
  void backward_data(const float* diff_dst, const float* weights, float* diff_src);
  /// diff_bias[o] = Σ_n diff_dst[n, o]. Training layers only.
  void backward_weights(const float* src, const float* diff_dst, float* diff_weights,
                        float* diff_bias);

  [[nodiscard]] int64_t private_bytes() const;
  [[nodiscard]] std::string implementation() const { return implementation_; }

 private:
  bool has_bias_;
  bool training_;
  dnnl::memory src_, dst_, bias_, diff_src_, diff_dst_, diff_bias_;
  WeightBinding fwd_weights_, bwd_data_weights_, diff_weights_;
  Primitive fwd_, bwd_data_, bwd_weights_;
  std::string implementation_;
};

}  // namespace cnnbench::kernels::cpu
