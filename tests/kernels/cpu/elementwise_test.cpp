// Add (3 inputs), concat, flatten and dropout: forward values and backward
// against finite differences, including gradient accumulation into inputs that
// already hold a gradient, in NHWC and NCHW.
#include "kernels/cpu/elementwise.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::Shape;

class ElementwiseTest : public ::testing::TestWithParam<DataFormat> {};

TEST_P(ElementwiseTest, AddOfThreeInputs) {
  const Shape s{2, 3, 4, 5};
  const int64_t n = s.elements();
  std::array<std::vector<float>, 3> x{testutil::uniform_vector(n, 1),
                                      testutil::uniform_vector(n, 2),
                                      testutil::uniform_vector(n, 3)};
  const std::array<const float*, 3> srcs{x[0].data(), x[1].data(), x[2].data()};
  std::vector<float> y(static_cast<size_t>(n));
  add_forward(srcs, y.data(), n);
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y[i], x[0][i] + x[1][i] + x[2][i]);

  const auto r = testutil::uniform_vector(n, 4);
  // Input 1 already holds a gradient from another consumer: add_backward adds to it.
  std::array<std::vector<float>, 3> dx{std::vector<float>(y.size()), testutil::uniform_vector(n, 5),
                                       std::vector<float>(y.size())};
  const auto earlier = dx[1];
  const std::array<GradOut, 3> outs{GradOut{dx[0].data(), false}, GradOut{dx[1].data(), true},
                                    GradOut{nullptr, false}};
  add_backward(r.data(), outs, n);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_FLOAT_EQ(dx[1][i], earlier[i] + r[i]);
  dx[1] = std::vector<float>(y.size());
  add_backward(
      r.data(),
      std::array<GradOut, 3>{GradOut{dx[0].data()}, GradOut{dx[1].data()}, GradOut{dx[2].data()}},
      n);
  for (int k = 0; k < 3; ++k) {
    const auto objective = [&] {
      add_forward(srcs, y.data(), n);
      return testutil::dot(y, r);
    };
    testutil::expect_gradient(objective, x[static_cast<size_t>(k)], dx[static_cast<size_t>(k)],
                              "add dx");
  }
}

TEST_P(ElementwiseTest, ConcatAlongChannels) {
  const DataFormat format = GetParam();
  const std::vector<Shape> ins{{2, 2, 3, 4}, {2, 3, 3, 4}, {2, 1, 3, 4}};
  const Shape out{2, 6, 3, 4};
  ConcatLayer layer(ins, out, format);
  std::vector<std::vector<float>> x;  // logical NCHW
  std::vector<std::vector<float>> x_l;
  for (size_t k = 0; k < ins.size(); ++k) {
    x.push_back(testutil::uniform_vector(ins[k].elements(), static_cast<uint32_t>(k + 1)));
    x_l.push_back(testutil::to_layout(x.back(), ins[k], format));
  }
  std::vector<const float*> srcs{x_l[0].data(), x_l[1].data(), x_l[2].data()};
  std::vector<float> y(static_cast<size_t>(out.elements()));
  layer.forward(srcs, y.data());
  const auto y_nchw = testutil::from_layout(y, out, format);
  int c_out = 0;
  for (size_t k = 0; k < ins.size(); ++k) {
    for (int c = 0; c < ins[k].c; ++c, ++c_out)
      for (int n = 0; n < out.n; ++n)
        for (int p = 0; p < out.h * out.w; ++p) {
          ASSERT_EQ(y_nchw[static_cast<size_t>((n * out.c + c_out) * out.h * out.w + p)],
                    x[k][static_cast<size_t>((n * ins[k].c + c) * out.h * out.w + p)]);
        }
  }
  const auto r = testutil::uniform_vector(out.elements(), 9);
  std::vector<std::vector<float>> dx;
  for (const auto& s : ins) dx.emplace_back(static_cast<size_t>(s.elements()));
  std::vector<GradOut> outs{{dx[0].data()}, {dx[1].data()}, {dx[2].data()}};
  layer.backward(r.data(), outs);
  for (size_t k = 0; k < ins.size(); ++k) {
    const auto objective = [&] {
      layer.forward(srcs, y.data());
      return testutil::dot(y, r);
    };
    testutil::expect_gradient(objective, x_l[k], dx[k], "concat dx");
  }
  // Accumulating backward adds the slice to what is there.
  const auto before = dx[1];
  outs[1].accumulate = true;
  layer.backward(r.data(), outs);
  for (size_t i = 0; i < before.size(); ++i) ASSERT_FLOAT_EQ(dx[1][i], 2 * before[i]);
}

TEST_P(ElementwiseTest, FlattenGivesPyTorchFeatureOrder) {
  const DataFormat format = GetParam();
  for (const Shape in : {Shape{2, 3, 4, 5}, Shape{2, 7, 1, 1}}) {
    Context ctx;
    FlattenLayer layer(ctx, in, format);
    EXPECT_EQ(layer.is_view(), format == DataFormat::NCHW || in.h * in.w == 1);
    auto x = testutil::uniform_vector(in.elements(), 1);  // logical NCHW = flattened order
    auto x_l = testutil::to_layout(x, in, format);
    std::vector<float> y(x.size());
    layer.forward(x_l.data(), y.data());
    EXPECT_EQ(y, x);
    const auto r = testutil::uniform_vector(in.elements(), 2);
    std::vector<float> dx(x.size());
    layer.backward(r.data(), dx.data());
    const auto objective = [&] {
      layer.forward(x_l.data(), y.data());
      return testutil::dot(y, r);
    };
    testutil::expect_gradient(objective, x_l, dx, "flatten dx");
  }
}

TEST_P(ElementwiseTest, DropoutWithAFixedMask) {
  const DataFormat format = GetParam();
  const Shape s{4, 8, 6, 6};
  const float p = 0.3F;
  DropoutLayer layer(p, s, format);
  layer.new_mask(42);
  int64_t dropped = 0;
  for (int64_t i = 0; i < s.elements(); ++i) {
    const float m = layer.mask()[i];
    ASSERT_TRUE(m == 0.0F || m == 1.0F / (1.0F - p)) << m;
    dropped += m == 0.0F ? 1 : 0;
  }
  // 1152 Bernoulli(0.3) draws: mean 345.6, standard deviation 15.6; ±5σ.
  EXPECT_NEAR(static_cast<double>(dropped), 0.3 * static_cast<double>(s.elements()), 78.0);

  auto x = testutil::uniform_vector(s.elements(), 3);
  std::vector<float> y(x.size()), dx(x.size());
  layer.forward(x.data(), y.data());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i] * layer.mask()[i]);
  const auto r = testutil::uniform_vector(s.elements(), 4);
  layer.backward(r.data(), dx.data());
  const auto objective = [&] {
    layer.forward(x.data(), y.data());
    return testutil::dot(y, r);
  };
  testutil::expect_gradient(objective, x, dx, "dropout dx");
}

TEST(Dropout, SameLogicalMaskInBothLayoutsAndNewMaskPerKey) {
  const Shape s{2, 3, 4, 5};
  DropoutLayer nhwc(0.5F, s, DataFormat::NHWC);
  DropoutLayer nchw(0.5F, s, DataFormat::NCHW);
  nhwc.new_mask(7);
  nchw.new_mask(7);
  const std::vector<float> a(nhwc.mask(), nhwc.mask() + s.elements());
  const std::vector<float> b(nchw.mask(), nchw.mask() + s.elements());
  EXPECT_EQ(testutil::from_layout(a, s, DataFormat::NHWC), b);
  nchw.new_mask(8);
  const std::vector<float> c(nchw.mask(), nchw.mask() + s.elements());
  EXPECT_NE(b, c);
}

TEST(Dropout, ExtremeProbabilities) {
  const Shape s{2, 3, 2, 2};
  DropoutLayer none(0.0F, s, DataFormat::NHWC);
  DropoutLayer all(1.0F, s, DataFormat::NHWC);
  none.new_mask(1);
  all.new_mask(1);
  for (int64_t i = 0; i < s.elements(); ++i) {
    EXPECT_EQ(none.mask()[i], 1.0F);
    EXPECT_EQ(all.mask()[i], 0.0F);
  }
  EXPECT_THROW(DropoutLayer(1.5F, s, DataFormat::NHWC), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ElementwiseTest,
                         ::testing::Values(DataFormat::NHWC, DataFormat::NCHW),
                         testutil::format_name);

}  // namespace
}  // namespace cnnbench::kernels::cpu
