// Softmax cross-entropy averaged over the batch (torch.nn.CrossEntropyLoss,
// reduction='mean') and its gradient.
#pragma once

#include <cstdint>

#include "kernels/cpu/host_array.h"

namespace cnnbench::kernels::cpu {

/// Loss of logits [N, classes] (the [N, classes, 1, 1] output of an FC layer,
/// identical in NHWC and NCHW) against int32 labels [N]:
/// loss = (1/N) Σ_n (logsumexp(x_n) − x_n[label_n]), with logsumexp computed as
/// m + log Σ exp(x − m), m = max x_n, so large logits do not overflow.
/// Gradient: d loss / d x_n = (softmax(x_n) − one_hot(label_n)) / N.
class SoftmaxCrossEntropyLayer {
 public:
  /// Throws std::invalid_argument unless batch ≥ 1 and classes ≥ 1.
  SoftmaxCrossEntropyLayer(int batch, int classes);

  /// Returns the mean loss and keeps softmax(logits) for backward. Throws
  /// std::out_of_range naming the sample when a label is outside [0, classes).
  float forward(const float* logits, const int32_t* labels);
  /// diff_logits = scale·(softmax − one_hot)/N for the last forward; `scale` is
  /// the gradient arriving at the loss (1 for plain training).
  void backward(float* diff_logits, float scale = 1.0F) const;

  [[nodiscard]] int64_t state_bytes() const { return probabilities_.bytes() + labels_.bytes(); }

 private:
  int batch_;
  int classes_;
  HostArray<float> probabilities_;
  HostArray<int32_t> labels_;
};

}  // namespace cnnbench::kernels::cpu
