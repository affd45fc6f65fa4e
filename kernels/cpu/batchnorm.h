// Batch normalisation (torch.nn.BatchNorm2d) forward in training and inference
// mode and its backward, on oneDNN.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/host_array.h"
#include "kernels/cpu/primitive.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// Batch normalisation over N, H, W per channel of a [N, C, H, W] tensor in the
/// layer's DataFormat; scale (gamma), shift (beta) and the statistics are [C].
///
/// Training: y = scale·(x − μ_B)/√(σ²_B + eps) + shift with the batch mean μ_B and
/// the biased batch variance σ²_B, then, as PyTorch does, running_mean ←
/// (1 − m)·running_mean + m·μ_B and running_var ← (1 − m)·running_var +
/// m·σ²_B·M/(M − 1), M = N·H·W (the unbiased variance), m = attrs.momentum.
/// Inference: the same formula with the running statistics.
///
/// The layer owns the running statistics (initialised to 0 and 1, as PyTorch)
/// and the batch statistics of the last training forward, which backward uses.
///
/// Errors: std::invalid_argument for a training layer with M = 1 (PyTorch refuses
/// it too: the unbiased variance is undefined); dnnl::error; BackendError.
class BatchNormLayer {
 public:
  BatchNormLayer(Context& ctx, const models::BatchNormAttrs& attrs, models::Shape shape,
                 DataFormat format, bool training = true);

  /// Training forward: batch statistics, running statistics updated.
  void forward_training(const float* src, const float* scale, const float* shift, float* dst);
  /// Inference forward with the running statistics.
  void forward_inference(const float* src, const float* scale, const float* shift, float* dst);
  /// Gradients of the last forward_training: diff_src, diff_scale, diff_shift.
  void backward(const float* src, const float* diff_dst, const float* scale, float* diff_src,
                float* diff_scale, float* diff_shift);

  [[nodiscard]] float* running_mean() { return running_mean_.data(); }
  [[nodiscard]] float* running_var() { return running_var_.data(); }
  [[nodiscard]] const float* batch_mean() const { return mean_.data(); }
  /// Biased batch variance of the last forward_training.
  [[nodiscard]] const float* batch_variance() const { return variance_.data(); }
  /// Bytes held by the layer (running and batch statistics).
  [[nodiscard]] int64_t state_bytes() const;

 private:
  models::BatchNormAttrs attrs_;
  int channels_;
  int64_t reduced_;  ///< M = N·H·W
  bool training_;
  HostArray<float> running_mean_, running_var_, mean_, variance_;
  dnnl::memory src_, dst_, scale_, shift_, mean_mem_, var_mem_, run_mean_mem_, run_var_mem_;
  dnnl::memory diff_src_, diff_dst_, diff_scale_, diff_shift_;
  Primitive fwd_train_, fwd_infer_, bwd_;
};

}  // namespace cnnbench::kernels::cpu
