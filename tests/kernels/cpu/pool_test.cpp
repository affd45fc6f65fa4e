// PoolLayer (max, average) and AdaptiveAvgPoolLayer: forward against naive loops
// with PyTorch's semantics (padding, ceil_mode, count_include_pad, uneven
// adaptive windows) and backward against finite differences, in NHWC and NCHW.
#include "kernels/cpu/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::PoolAttrs;
using models::Shape;

/// PyTorch's pooling_output_shape.
int pooled(int size, int k, int s, int p, bool ceil_mode) {
  int out = (ceil_mode ? (size + 2 * p - k + s - 1) / s : (size + 2 * p - k) / s) + 1;
  if (ceil_mode && (out - 1) * s >= size + p) --out;
  return out;
}

struct PoolCase {
  std::string name;
  Shape in;
  PoolAttrs attrs;
  [[nodiscard]] Shape out() const {
    return {in.n, in.c, pooled(in.h, attrs.kernel_h, attrs.stride_h, attrs.pad_h, attrs.ceil_mode),
            pooled(in.w, attrs.kernel_w, attrs.stride_w, attrs.pad_w, attrs.ceil_mode)};
  }
};

PoolAttrs pool(PoolAttrs::Kind kind, int k, int s, int p, bool ceil_mode, bool include_pad = true) {
  PoolAttrs a;
  a.kind = kind;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = include_pad;
  return a;
}

constexpr auto kMax = PoolAttrs::Kind::Max;
constexpr auto kAvg = PoolAttrs::Kind::Avg;

std::vector<PoolCase> cases() {
  return {
      {"max_3x3_s2_p1", {2, 3, 7, 7}, pool(kMax, 3, 2, 1, false)},
      {"max_3x3_s2_ceil", {2, 3, 8, 8}, pool(kMax, 3, 2, 0, true)},
      {"max_3x3_s1_p1_ceil", {2, 3, 5, 6}, pool(kMax, 3, 1, 1, true)},
      {"max_2x2_s2_odd", {2, 3, 5, 6}, pool(kMax, 2, 2, 0, false)},
      {"avg_3x3_s1_p1_include_pad", {2, 3, 5, 5}, pool(kAvg, 3, 1, 1, false, true)},
      {"avg_3x3_s2_p1_exclude_pad", {2, 3, 7, 6}, pool(kAvg, 3, 2, 1, false, false)},
      // ceil_mode lets the last window run past the padding: PyTorch's divisor
      // stops at the padding (2 here), not at the kernel (3).
      {"avg_3x3_s2_p1_ceil_include_pad", {2, 3, 6, 6}, pool(kAvg, 3, 2, 1, true, true)},
      {"avg_3x3_s2_p1_ceil_exclude_pad", {2, 3, 6, 6}, pool(kAvg, 3, 2, 1, true, false)},
      {"avg_2x2_s2_floor", {2, 3, 5, 5}, pool(kAvg, 2, 2, 0, false)},
  };
}

std::vector<float> reference_pool(const PoolCase& c, const std::vector<float>& x) {
  const auto& a = c.attrs;
  const Shape in = c.in;
  const Shape out = c.out();
  std::vector<float> y(static_cast<size_t>(out.elements()));
  for (int nc = 0; nc < in.n * in.c; ++nc)
    for (int oh = 0; oh < out.h; ++oh)
      for (int ow = 0; ow < out.w; ++ow) {
        int hs = oh * a.stride_h - a.pad_h, ws = ow * a.stride_w - a.pad_w;
        int he = std::min(hs + a.kernel_h, in.h + a.pad_h),
            we = std::min(ws + a.kernel_w, in.w + a.pad_w);
        const int pool_size = (he - hs) * (we - ws);
        hs = std::max(hs, 0);
        ws = std::max(ws, 0);
        he = std::min(he, in.h);
        we = std::min(we, in.w);
        double acc = a.kind == kMax ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int h = hs; h < he; ++h)
          for (int w = ws; w < we; ++w) {
            const double v = x[static_cast<size_t>((nc * in.h + h) * in.w + w)];
            acc = a.kind == kMax ? std::max(acc, v) : acc + v;
          }
        if (a.kind == kAvg) acc /= a.count_include_pad ? pool_size : (he - hs) * (we - ws);
        y[static_cast<size_t>((nc * out.h + oh) * out.w + ow)] = static_cast<float>(acc);
      }
  return y;
}

class PoolTest : public ::testing::TestWithParam<DataFormat> {};

TEST_P(PoolTest, ForwardMatchesPyTorchSemantics) {
  const DataFormat format = GetParam();
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(c.name);
    Context ctx;
    PoolLayer layer(ctx, c.attrs, c.in, c.out(), format);
    const auto x = testutil::uniform_vector(c.in.elements(), 1);
    const auto x_l = testutil::to_layout(x, c.in, format);
    std::vector<float> y(static_cast<size_t>(c.out().elements()));
    layer.forward(x_l.data(), y.data());
    testutil::expect_near_all(testutil::from_layout(y, c.out(), format), reference_pool(c, x),
                              1e-6F, c.name);
  }
}

TEST_P(PoolTest, BackwardMatchesFiniteDifferences) {
  const DataFormat format = GetParam();
  for (const PoolCase& c : cases()) {
    SCOPED_TRACE(c.name);
    Context ctx;
    PoolLayer layer(ctx, c.attrs, c.in, c.out(), format);
    // Distinct values 0.05 apart: a step of 0.01 never changes which element wins a max.
    auto x = testutil::distinct_values(c.in.elements(), 2, 0.05F);
    const auto r = testutil::uniform_vector(c.out().elements(), 3);
    std::vector<float> y(static_cast<size_t>(c.out().elements())), dx(x.size(), 99.0F);
    const auto objective = [&] {
      layer.forward(x.data(), y.data());
      return testutil::dot(y, r);
    };
    objective();
    layer.backward(r.data(), dx.data());
    testutil::expect_gradient(objective, x, dx, c.name + " dx");
  }
}

TEST_P(PoolTest, AdaptiveAveragePoolingWithUnevenWindows) {
  const DataFormat format = GetParam();
  // in → out pairs with windows of different sizes (7 → 3: [0,3), [2,5), [4,7)),
  // global pooling, and more outputs than inputs (overlapping windows).
  const std::vector<std::pair<Shape, Shape>> shapes{{{2, 3, 7, 5}, {2, 3, 3, 2}},
                                                    {{2, 3, 5, 5}, {2, 3, 1, 1}},
                                                    {{2, 2, 3, 3}, {2, 2, 5, 4}},
                                                    {{2, 3, 6, 6}, {2, 3, 4, 4}}};
  for (const auto& [in, out] : shapes) {
    SCOPED_TRACE(std::to_string(in.h) + "x" + std::to_string(in.w) + " -> " +
                 std::to_string(out.h) + "x" + std::to_string(out.w));
    AdaptiveAvgPoolLayer layer(in, out, format);
    auto x = testutil::uniform_vector(in.elements(), 4);
    std::vector<float> expected(static_cast<size_t>(out.elements()));
    for (int nc = 0; nc < in.n * in.c; ++nc)
      for (int oh = 0; oh < out.h; ++oh)
        for (int ow = 0; ow < out.w; ++ow) {
          const int hs = oh * in.h / out.h, he = ((oh + 1) * in.h + out.h - 1) / out.h;
          const int ws = ow * in.w / out.w, we = ((ow + 1) * in.w + out.w - 1) / out.w;
          double sum = 0.0;
          for (int h = hs; h < he; ++h)
            for (int w = ws; w < we; ++w) sum += x[static_cast<size_t>((nc * in.h + h) * in.w + w)];
          expected[static_cast<size_t>((nc * out.h + oh) * out.w + ow)] =
              static_cast<float>(sum / ((he - hs) * (we - ws)));
        }
    auto x_l = testutil::to_layout(x, in, format);
    std::vector<float> y(expected.size());
    layer.forward(x_l.data(), y.data());
    testutil::expect_near_all(testutil::from_layout(y, out, format), expected, 1e-6F,
                              "adaptive forward");

    const auto r = testutil::uniform_vector(out.elements(), 5);
    std::vector<float> dx(x.size());
    layer.backward(r.data(), dx.data());
    const auto objective = [&] {
      layer.forward(x_l.data(), y.data());
      return testutil::dot(y, r);
    };
    testutil::expect_gradient(objective, x_l, dx, "adaptive dx");
  }
}

TEST(PoolLayer, RejectsWrongOutputSize) {
  Context ctx;
  EXPECT_THROW(
      PoolLayer(ctx, pool(kMax, 3, 2, 0, false), {2, 3, 8, 8}, {2, 3, 4, 4}, DataFormat::NHWC),
      std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Layouts, PoolTest, ::testing::Values(DataFormat::NHWC, DataFormat::NCHW),
                         testutil::format_name);

}  // namespace
}  // namespace cnnbench::kernels::cpu
