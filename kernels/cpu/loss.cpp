#include "kernels/cpu/loss.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace cnnbench::kernels::cpu {

SoftmaxCrossEntropyLayer::SoftmaxCrossEntropyLayer(int batch, int classes)
    : batch_(batch),
      classes_(classes),
      probabilities_(int64_t{batch} * classes, "softmax probabilities"),
      labels_(batch, "loss labels") {
  if (batch < 1 || classes < 1) {
    throw std::invalid_argument("SoftmaxCrossEntropyLayer: batch and classes must be positive");
  }
}

float SoftmaxCrossEntropyLayer::forward(const float* logits, const int32_t* labels) {
  for (int n = 0; n < batch_; ++n) {
    if (labels[n] < 0 || labels[n] >= classes_) {
      throw std::out_of_range("softmax cross-entropy: label " + std::to_string(labels[n]) +
                              " of sample " + std::to_string(n) + " is outside [0, " +
                              std::to_string(classes_) + ")");
    }
    labels_.data()[n] = labels[n];
  }
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int n = 0; n < batch_; ++n) {
    const float* x = logits + int64_t{n} * classes_;
    float* p = probabilities_.data() + int64_t{n} * classes_;
    float m = x[0];
    for (int k = 1; k < classes_; ++k) m = std::fmax(m, x[k]);
    double sum = 0.0;
    for (int k = 0; k < classes_; ++k) {
      p[k] = std::exp(x[k] - m);
      sum += p[k];
    }
    const auto inv = static_cast<float>(1.0 / sum);
    for (int k = 0; k < classes_; ++k) p[k] *= inv;
    total += static_cast<double>(m) + std::log(sum) - static_cast<double>(x[labels[n]]);
  }
  return static_cast<float>(total / batch_);
}

void SoftmaxCrossEntropyLayer::backward(float* diff_logits, float scale) const {
  const float k_scale = scale / static_cast<float>(batch_);
  const float* p = probabilities_.data();
  const int64_t count = int64_t{batch_} * classes_;
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) diff_logits[i] = p[i] * k_scale;
  for (int n = 0; n < batch_; ++n)
    diff_logits[int64_t{n} * classes_ + labels_.data()[n]] -= k_scale;
}

}  // namespace cnnbench::kernels::cpu
