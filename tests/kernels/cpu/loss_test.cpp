// SoftmaxCrossEntropyLayer: loss against a double-precision reference, stability
// with huge logits, gradient against finite differences, label validation.
#include "kernels/cpu/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

double reference_loss(const std::vector<float>& x, const std::vector<int32_t>& labels,
                      int classes) {
  double total = 0.0;
  const auto n = static_cast<int>(labels.size());
  for (int i = 0; i < n; ++i) {
    double sum = 0.0;
    for (int k = 0; k < classes; ++k)
      sum += std::exp(static_cast<double>(x[static_cast<size_t>(i * classes + k)]));
    total += std::log(sum) - x[static_cast<size_t>(i * classes + labels[static_cast<size_t>(i)])];
  }
  return total / n;
}

TEST(SoftmaxCrossEntropy, LossMatchesReference) {
  const int n = 5, classes = 7;
  SoftmaxCrossEntropyLayer layer(n, classes);
  const auto x = testutil::uniform_vector(n * classes, 1, -3.0F, 3.0F);
  const std::vector<int32_t> labels{0, 6, 3, 3, 1};
  EXPECT_NEAR(layer.forward(x.data(), labels.data()), reference_loss(x, labels, classes), 1e-6);
  // Uniform logits: log(classes).
  const std::vector<float> flat(static_cast<size_t>(n * classes), 0.25F);
  EXPECT_NEAR(layer.forward(flat.data(), labels.data()), std::log(7.0), 1e-6);
}

TEST(SoftmaxCrossEntropy, StableForHugeLogits) {
  const int classes = 3;
  SoftmaxCrossEntropyLayer layer(1, classes);
  const std::vector<float> x{1000.0F, 1001.0F, 999.0F};
  const std::vector<int32_t> label{0};
  const float loss = layer.forward(x.data(), label.data());
  // log(e^0 + e^1 + e^-1) − 0 with the max (1001) subtracted.
  EXPECT_NEAR(loss, std::log(std::exp(-1.0) + 1.0 + std::exp(-2.0)) + 1.0, 1e-5);
  std::vector<float> d(3);
  layer.backward(d.data());
  for (float v : d) EXPECT_TRUE(std::isfinite(v));
}

TEST(SoftmaxCrossEntropy, GradientMatchesFiniteDifferences) {
  const int n = 4, classes = 6;
  SoftmaxCrossEntropyLayer layer(n, classes);
  auto x = testutil::uniform_vector(n * classes, 2, -2.0F, 2.0F);
  const std::vector<int32_t> labels{5, 0, 2, 2};
  std::vector<float> d(x.size());
  layer.forward(x.data(), labels.data());
  layer.backward(d.data());
  const auto objective = [&] {
    return static_cast<double>(layer.forward(x.data(), labels.data()));
  };
  // The loss is one fp32 number, so its rounding (≈ 1e-7) over 2h = 2e-2 needs the absolute term.
  testutil::expect_gradient(objective, x, d, "loss dlogits",
                            {.step = 1e-2F, .rtol = 1e-2, .atol = 2e-3});
  // Each row of the gradient sums to zero (softmax sums to one).
  for (int i = 0; i < n; ++i) {
    double row = 0.0;
    for (int k = 0; k < classes; ++k) row += d[static_cast<size_t>(i * classes + k)];
    EXPECT_NEAR(row, 0.0, 1e-6);
  }
  std::vector<float> scaled(x.size());
  layer.forward(x.data(), labels.data());
  layer.backward(scaled.data(), 8.0F);
  for (size_t i = 0; i < d.size(); ++i) EXPECT_FLOAT_EQ(scaled[i], 8.0F * d[i]);
}

TEST(SoftmaxCrossEntropy, RejectsLabelsOutOfRange) {
  SoftmaxCrossEntropyLayer layer(2, 3);
  const std::vector<float> x(6, 0.0F);
  const std::vector<int32_t> bad{1, 3};
  EXPECT_THROW(layer.forward(x.data(), bad.data()), std::out_of_range);
  const std::vector<int32_t> negative{-1, 0};
  EXPECT_THROW(layer.forward(x.data(), negative.data()), std::out_of_range);
}

}  // namespace
}  // namespace cnnbench::kernels::cpu
