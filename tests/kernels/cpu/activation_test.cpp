// ActivationLayer: relu and relu6 forward against max/clip and backward against
// finite differences, in NHWC and NCHW.
#include "kernels/cpu/activation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using Kind = models::ActivationAttrs::Kind;
using models::Shape;

constexpr Shape kShape{2, 3, 4, 5};

struct ActivationCase {
  Kind kind;
  DataFormat format;
};

class ActivationTest : public ::testing::TestWithParam<ActivationCase> {};

/// Inputs in [−8, 8] kept 0.05 away from the kinks at 0 and 6.
std::vector<float> inputs(uint32_t seed) {
  auto x = testutil::uniform_vector(kShape.elements(), seed, -8.0F, 8.0F);
  for (auto& v : x) {
    for (const float kink : {0.0F, 6.0F}) {
      if (std::fabs(v - kink) < 0.05F) v = kink + (v < kink ? -0.05F : 0.05F);
    }
  }
  return x;
}

TEST_P(ActivationTest, ForwardClips) {
  const auto [kind, format] = GetParam();
  Context ctx;
  ActivationLayer layer(ctx, kind, kShape, format);
  const auto x = inputs(1);
  std::vector<float> y(x.size());
  layer.forward(x.data(), y.data());
  for (size_t i = 0; i < x.size(); ++i) {
    const float expected = kind == Kind::Relu ? std::max(x[i], 0.0F) : std::clamp(x[i], 0.0F, 6.0F);
    EXPECT_EQ(y[i], expected) << "at " << i << " for x = " << x[i];
  }
}

TEST_P(ActivationTest, BackwardMatchesFiniteDifferences) {
  const auto [kind, format] = GetParam();
  Context ctx;
  ActivationLayer layer(ctx, kind, kShape, format);
  auto x = inputs(2);
  const auto r = testutil::uniform_vector(kShape.elements(), 3);
  std::vector<float> y(x.size()), dx(x.size());
  const auto objective = [&] {
    layer.forward(x.data(), y.data());
    return testutil::dot(y, r);
  };
  objective();
  layer.backward(y.data(), r.data(), dx.data());
  testutil::expect_gradient(objective, x, dx, "activation dx");
}

TEST_P(ActivationTest, RunsInPlace) {
  const auto [kind, format] = GetParam();
  Context ctx;
  ActivationLayer layer(ctx, kind, kShape, format);
  const auto x = inputs(4);
  std::vector<float> y(x.size());
  layer.forward(x.data(), y.data());
  auto inplace = x;
  layer.forward(inplace.data(), inplace.data());
  EXPECT_EQ(inplace, y);
  const auto r = testutil::uniform_vector(kShape.elements(), 5);
  std::vector<float> dx(x.size());
  layer.backward(y.data(), r.data(), dx.data());
  auto dinplace = r;
  layer.backward(y.data(), dinplace.data(), dinplace.data());
  EXPECT_EQ(dinplace, dx);
}

INSTANTIATE_TEST_SUITE_P(Kinds, ActivationTest,
                         ::testing::Values(ActivationCase{Kind::Relu, DataFormat::NHWC},
                                           ActivationCase{Kind::Relu, DataFormat::NCHW},
                                           ActivationCase{Kind::Relu6, DataFormat::NHWC},
                                           ActivationCase{Kind::Relu6, DataFormat::NCHW}),
                         [](const ::testing::TestParamInfo<ActivationCase>& param) {
                           return std::string(param.param.kind == Kind::Relu ? "relu_" : "relu6_") +
                                  (param.param.format == DataFormat::NHWC ? "NHWC" : "NCHW");
                         });

}  // namespace
}  // namespace cnnbench::kernels::cpu
