// ConvLayer: forward against a direct 7-loop convolution, and dgrad, wgrad and
// bias gradient against finite differences, in NHWC and NCHW.
#include "kernels/cpu/conv.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::ConvAttrs;
using models::Shape;
using testutil::dot;
using testutil::expect_gradient;
using testutil::uniform_vector;

struct ConvCase {
  std::string name;
  Shape in;
  ConvAttrs attrs;
};

Shape output_shape(const ConvCase& c) {
  const auto& a = c.attrs;
  return {c.in.n, a.out_channels, (c.in.h + 2 * a.pad_h - a.kernel_h) / a.stride_h + 1,
          (c.in.w + 2 * a.pad_w - a.kernel_w) / a.stride_w + 1};
}

ConvAttrs conv(int k, int r, int s, int stride, int pad_h, int pad_w, int groups, bool bias) {
  ConvAttrs a;
  a.out_channels = k;
  a.kernel_h = r;
  a.kernel_w = s;
  a.stride_h = a.stride_w = stride;
  a.pad_h = pad_h;
  a.pad_w = pad_w;
  a.groups = groups;
  a.bias = bias;
  return a;
}

std::vector<ConvCase> cases() {
  return {
      {"3x3_pad1_bias", {2, 3, 6, 5}, conv(4, 3, 3, 1, 1, 1, 1, true)},
      {"3x3_stride2_pad1", {2, 3, 7, 7}, conv(4, 3, 3, 2, 1, 1, 1, false)},
      {"7x7_stride2_pad3_stem", {2, 3, 9, 9}, conv(4, 7, 7, 2, 3, 3, 1, false)},
      {"1x1", {2, 6, 4, 4}, conv(5, 1, 1, 1, 0, 0, 1, false)},
      {"1x1_stride2_odd", {2, 6, 5, 5}, conv(5, 1, 1, 2, 0, 0, 1, true)},
      {"grouped", {2, 4, 5, 5}, conv(6, 3, 3, 1, 1, 1, 2, true)},
      {"depthwise", {2, 4, 6, 6}, conv(4, 3, 3, 1, 1, 1, 4, false)},
      {"depthwise_stride2_multiplier2", {2, 4, 7, 7}, conv(8, 3, 3, 2, 1, 1, 4, true)},
      {"1x3_asymmetric_pad", {2, 3, 5, 6}, conv(4, 1, 3, 1, 0, 1, 1, true)},
      {"3x1_no_pad", {2, 3, 6, 5}, conv(4, 3, 1, 1, 0, 0, 1, false)},
  };
}

/// Direct convolution on logical NCHW data, weights [K, C/g, R, S] (torch.nn.Conv2d).
std::vector<float> reference_conv(const ConvCase& c, const std::vector<float>& x,
                                  const std::vector<float>& w, const std::vector<float>& b) {
  const auto& a = c.attrs;
  const Shape in = c.in;
  const Shape out = output_shape(c);
  const int cg = in.c / a.groups;
  const int kg = a.out_channels / a.groups;
  std::vector<float> y(static_cast<size_t>(out.elements()));
  for (int n = 0; n < out.n; ++n)
    for (int k = 0; k < out.c; ++k)
      for (int oh = 0; oh < out.h; ++oh)
        for (int ow = 0; ow < out.w; ++ow) {
          double sum = a.bias ? b[static_cast<size_t>(k)] : 0.0;
          const int g = k / kg;
          for (int ci = 0; ci < cg; ++ci)
            for (int r = 0; r < a.kernel_h; ++r)
              for (int s = 0; s < a.kernel_w; ++s) {
                const int ih = oh * a.stride_h - a.pad_h + r;
                const int iw = ow * a.stride_w - a.pad_w + s;
                if (ih < 0 || ih >= in.h || iw < 0 || iw >= in.w) continue;
                const int ch = g * cg + ci;
                sum += static_cast<double>(
                           x[static_cast<size_t>(((n * in.c + ch) * in.h + ih) * in.w + iw)]) *
                       w[static_cast<size_t>(((k * cg + ci) * a.kernel_h + r) * a.kernel_w + s)];
              }
          y[static_cast<size_t>(((n * out.c + k) * out.h + oh) * out.w + ow)] =
              static_cast<float>(sum);
        }
  return y;
}

class ConvTest : public ::testing::TestWithParam<DataFormat> {};

TEST_P(ConvTest, ForwardMatchesDirectConvolution) {
  const DataFormat format = GetParam();
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Shape out = output_shape(c);
    const int64_t wcount = int64_t{c.attrs.out_channels} * (c.in.c / c.attrs.groups) *
                           c.attrs.kernel_h * c.attrs.kernel_w;
    const auto x = uniform_vector(c.in.elements(), 1);
    const auto w = uniform_vector(wcount, 2);
    const auto b = uniform_vector(c.attrs.out_channels, 3);
    for (const WeightFormat wf : {WeightFormat::Preferred, WeightFormat::Plain}) {
      Context ctx;
      ConvLayer layer(ctx, c.attrs, c.in, out, format, true, wf);
      const auto x_l = testutil::to_layout(x, c.in, format);
      std::vector<float> y(static_cast<size_t>(out.elements()));
      layer.forward(x_l.data(), w.data(), b.data(), y.data());
      testutil::expect_near_all(testutil::from_layout(y, out, format), reference_conv(c, x, w, b),
                                1e-5F, c.name);
    }
  }
}

TEST_P(ConvTest, GradientsMatchFiniteDifferences) {
  const DataFormat format = GetParam();
  for (const ConvCase& c : cases()) {
    SCOPED_TRACE(c.name);
    const Shape out = output_shape(c);
    const int64_t wcount = int64_t{c.attrs.out_channels} * (c.in.c / c.attrs.groups) *
                           c.attrs.kernel_h * c.attrs.kernel_w;
    Context ctx;
    ConvLayer layer(ctx, c.attrs, c.in, out, format);
    auto x = uniform_vector(c.in.elements(), 11);
    auto w = uniform_vector(wcount, 12);
    auto b = uniform_vector(c.attrs.out_channels, 13);
    const auto r = uniform_vector(out.elements(), 14);  // dL/dy for L = Σ y·R
    std::vector<float> y(static_cast<size_t>(out.elements()));
    const auto objective = [&] {
      layer.forward(x.data(), w.data(), b.data(), y.data());
      return dot(y, r);
    };
    std::vector<float> dx(x.size()), dw(w.size()), db(b.size(), -7.0F);
    layer.forward(x.data(), w.data(), b.data(), y.data());
    layer.backward_data(r.data(), w.data(), dx.data());
    layer.backward_weights(x.data(), r.data(), dw.data(), c.attrs.bias ? db.data() : nullptr);
    // 150 probes per tensor (spread evenly) keep the ten cases under a second.
    const testutil::FdOptions opt{.max_checks = 150};
    expect_gradient(objective, x, dx, "dgrad", opt);
    expect_gradient(objective, w, dw, "wgrad", opt);
    if (c.attrs.bias) expect_gradient(objective, b, db, "bias gradient", opt);
  }
}

TEST(ConvLayer, RejectsInconsistentShapes) {
  Context ctx;
  const ConvAttrs a = conv(4, 3, 3, 1, 1, 1, 1, false);
  EXPECT_THROW(ConvLayer(ctx, a, {2, 3, 6, 6}, {2, 4, 5, 6}, DataFormat::NHWC),
               std::invalid_argument);
  EXPECT_THROW(ConvLayer(ctx, conv(4, 3, 3, 1, 1, 1, 2, false), {2, 3, 6, 6}, {2, 4, 6, 6},
                         DataFormat::NHWC),
               std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ConvTest, ::testing::Values(DataFormat::NHWC, DataFormat::NCHW),
                         testutil::format_name);

}  // namespace
}  // namespace cnnbench::kernels::cpu
