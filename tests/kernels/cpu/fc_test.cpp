// FullyConnectedLayer on 4-D inputs (H·W > 1) and flattened ones: forward
// against y = x·Wᵀ + b with PyTorch's (C, H, W) feature order, and gradients
// against finite differences, in NHWC and NCHW.
#include "kernels/cpu/fc.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::FullyConnectedAttrs;
using models::Shape;

class FcTest : public ::testing::TestWithParam<DataFormat> {};

struct FcCase {
  Shape in;
  FullyConnectedAttrs attrs;
};

std::vector<FcCase> cases() {
  return {{{3, 4, 2, 3}, {.out_features = 5, .bias = true}},
          {{2, 6, 1, 1}, {.out_features = 7, .bias = false}},
          {{2, 2, 3, 3}, {.out_features = 4, .bias = true}}};
}

TEST_P(FcTest, ForwardUsesPyTorchFeatureOrder) {
  const DataFormat format = GetParam();
  for (const FcCase& c : cases()) {
    const Shape out{c.in.n, c.attrs.out_features, 1, 1};
    const int64_t features = c.in.per_image();
    const auto x = testutil::uniform_vector(c.in.elements(), 1);  // logical NCHW
    const auto w = testutil::uniform_vector(c.attrs.out_features * features, 2);
    const auto b = testutil::uniform_vector(c.attrs.out_features, 3);
    std::vector<float> expected(static_cast<size_t>(out.elements()));
    for (int n = 0; n < c.in.n; ++n)
      for (int o = 0; o < c.attrs.out_features; ++o) {
        double sum = c.attrs.bias ? b[static_cast<size_t>(o)] : 0.0;
        for (int64_t f = 0; f < features; ++f) {
          sum += static_cast<double>(w[static_cast<size_t>(o * features + f)]) *
                 x[static_cast<size_t>(n * features + f)];
        }
        expected[static_cast<size_t>(n * c.attrs.out_features + o)] = static_cast<float>(sum);
      }
    const auto x_l = testutil::to_layout(x, c.in, format);
    for (const WeightFormat wf :
         {WeightFormat::Auto, WeightFormat::Preferred, WeightFormat::Plain}) {
      Context ctx;
      FullyConnectedLayer layer(ctx, c.attrs, c.in, out, format, true, wf);
      std::vector<float> y(expected.size());
      layer.forward(x_l.data(), w.data(), b.data(), y.data());
      testutil::expect_near_all(y, expected, 1e-5F, "fc forward");
    }
  }
}

TEST_P(FcTest, GradientsMatchFiniteDifferences) {
  const DataFormat format = GetParam();
  for (const FcCase& c : cases()) {
    for (const WeightFormat wf : {WeightFormat::Auto, WeightFormat::Preferred}) {
      const Shape out{c.in.n, c.attrs.out_features, 1, 1};
      Context ctx;
      FullyConnectedLayer layer(ctx, c.attrs, c.in, out, format, true, wf);
      auto x = testutil::uniform_vector(c.in.elements(), 11);
      auto w = testutil::uniform_vector(c.attrs.out_features * c.in.per_image(), 12);
      auto b = testutil::uniform_vector(c.attrs.out_features, 13);
      const auto r = testutil::uniform_vector(out.elements(), 14);
      std::vector<float> y(static_cast<size_t>(out.elements()));
      const auto objective = [&] {
        layer.forward(x.data(), w.data(), b.data(), y.data());
        return testutil::dot(y, r);
      };
      std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
      objective();
      layer.backward_data(r.data(), w.data(), dx.data());
      layer.backward_weights(x.data(), r.data(), dw.data(), db.data());
      testutil::expect_gradient(objective, x, dx, "fc dx");
      testutil::expect_gradient(objective, w, dw, "fc dW");
      if (c.attrs.bias) testutil::expect_gradient(objective, b, db, "fc db");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, FcTest, ::testing::Values(DataFormat::NHWC, DataFormat::NCHW),
                         testutil::format_name);

}  // namespace
}  // namespace cnnbench::kernels::cpu
