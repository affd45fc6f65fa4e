// BatchNormLayer: training and inference forward against the formula, running
// statistics as PyTorch updates them, and dx, dscale, dshift against finite
// differences of the training forward, in NHWC and NCHW.
#include "kernels/cpu/batchnorm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::Shape;
using testutil::dot;
using testutil::uniform_vector;

constexpr Shape kShape{3, 4, 3, 5};

class BatchNormTest : public ::testing::TestWithParam<DataFormat> {};

TEST_P(BatchNormTest, TrainingForwardAndRunningStatisticsFollowPyTorch) {
  const DataFormat format = GetParam();
  const models::BatchNormAttrs attrs{.eps = 1e-3F, .momentum = 0.1F};
  Context ctx;
  BatchNormLayer layer(ctx, attrs, kShape, format);
  auto x = uniform_vector(kShape.elements(), 1, -2.0F, 3.0F);
  for (size_t i = 0; i < x.size(); ++i) x[i] += static_cast<float>(i % 4);  // per-channel offsets
  const auto scale = uniform_vector(kShape.c, 2, 0.5F, 1.5F);
  const auto shift = uniform_vector(kShape.c, 3);
  std::vector<float> y(x.size());
  const auto x_l = testutil::to_layout(x, kShape, format);
  layer.forward_training(x_l.data(), scale.data(), shift.data(), y.data());
  const auto y_nchw = testutil::from_layout(y, kShape, format);

  const int64_t m = int64_t{kShape.n} * kShape.h * kShape.w;
  const int64_t hw = int64_t{kShape.h} * kShape.w;
  std::vector<float> expected(x.size());
  for (int c = 0; c < kShape.c; ++c) {
    double mean = 0.0, var = 0.0;
    for (int n = 0; n < kShape.n; ++n)
      for (int64_t p = 0; p < hw; ++p) mean += x[static_cast<size_t>((n * kShape.c + c) * hw + p)];
    mean /= static_cast<double>(m);
    for (int n = 0; n < kShape.n; ++n)
      for (int64_t p = 0; p < hw; ++p) {
        const double d = x[static_cast<size_t>((n * kShape.c + c) * hw + p)] - mean;
        var += d * d;
      }
    var /= static_cast<double>(m);  // biased, for normalising
    for (int n = 0; n < kShape.n; ++n)
      for (int64_t p = 0; p < hw; ++p) {
        const auto i = static_cast<size_t>((n * kShape.c + c) * hw + p);
        expected[i] = static_cast<float>(scale[static_cast<size_t>(c)] * (x[i] - mean) /
                                             std::sqrt(var + attrs.eps) +
                                         shift[static_cast<size_t>(c)]);
      }
    EXPECT_NEAR(layer.batch_mean()[c], mean, 1e-5);
    EXPECT_NEAR(layer.batch_variance()[c], var, 1e-4);
    // running_mean starts at 0, running_var at 1; the unbiased variance goes in.
    EXPECT_NEAR(layer.running_mean()[c], 0.1 * mean, 1e-5);
    EXPECT_NEAR(layer.running_var()[c], 0.9 + 0.1 * var * m / (m - 1), 1e-5);
  }
  testutil::expect_near_all(y_nchw, expected, 1e-5F, "batchnorm training output");
}

TEST_P(BatchNormTest, InferenceUsesRunningStatistics) {
  const DataFormat format = GetParam();
  const models::BatchNormAttrs attrs{};
  Context ctx;
  BatchNormLayer layer(ctx, attrs, kShape, format);
  const auto mean = uniform_vector(kShape.c, 4);
  const auto var = uniform_vector(kShape.c, 5, 0.5F, 2.0F);
  for (int c = 0; c < kShape.c; ++c) {
    layer.running_mean()[c] = mean[static_cast<size_t>(c)];
    layer.running_var()[c] = var[static_cast<size_t>(c)];
  }
  const auto x = uniform_vector(kShape.elements(), 6);
  const auto scale = uniform_vector(kShape.c, 7, 0.5F, 1.5F);
  const auto shift = uniform_vector(kShape.c, 8);
  std::vector<float> y(x.size());
  const auto x_l = testutil::to_layout(x, kShape, format);
  layer.forward_inference(x_l.data(), scale.data(), shift.data(), y.data());
  const auto y_nchw = testutil::from_layout(y, kShape, format);
  std::vector<float> expected(x.size());
  const int64_t hw = int64_t{kShape.h} * kShape.w;
  for (size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<size_t>((static_cast<int64_t>(i) / hw) % kShape.c);
    expected[i] = scale[c] * (x[i] - mean[c]) / std::sqrt(var[c] + attrs.eps) + shift[c];
  }
  testutil::expect_near_all(y_nchw, expected, 1e-5F, "batchnorm inference output");
  // Inference leaves the running statistics alone.
  EXPECT_EQ(layer.running_mean()[0], mean[0]);
}

TEST_P(BatchNormTest, GradientsMatchFiniteDifferences) {
  const DataFormat format = GetParam();
  Context ctx;
  BatchNormLayer layer(ctx, models::BatchNormAttrs{}, kShape, format);
  auto x = uniform_vector(kShape.elements(), 21);
  auto scale = uniform_vector(kShape.c, 22, 0.5F, 1.5F);
  auto shift = uniform_vector(kShape.c, 23);
  const auto r = uniform_vector(kShape.elements(), 24);
  std::vector<float> y(x.size());
  const auto objective = [&] {
    layer.forward_training(x.data(), scale.data(), shift.data(), y.data());
    return dot(y, r);
  };
  objective();
  std::vector<float> dx(x.size()), dscale(scale.size()), dshift(shift.size());
  layer.backward(x.data(), r.data(), scale.data(), dx.data(), dscale.data(), dshift.data());
  testutil::expect_gradient(objective, x, dx, "batchnorm dx");
  testutil::expect_gradient(objective, scale, dscale, "batchnorm dscale");
  testutil::expect_gradient(objective, shift, dshift, "batchnorm dshift");
}

TEST(BatchNormLayer, TrainingNeedsMoreThanOneValuePerChannel) {
  Context ctx;
  EXPECT_THROW(BatchNormLayer(ctx, {}, {1, 4, 1, 1}, DataFormat::NHWC), std::invalid_argument);
  EXPECT_NO_THROW(BatchNormLayer(ctx, {}, {1, 4, 1, 1}, DataFormat::NHWC, /*training=*/false));
}

INSTANTIATE_TEST_SUITE_P(Layouts, BatchNormTest,
                         ::testing::Values(DataFormat::NHWC, DataFormat::NCHW),
                         testutil::format_name);

}  // namespace
}  // namespace cnnbench::kernels::cpu
