// cuBLASLt fully connected layers against fp64 CPU loops: forward with the
// BIAS epilogue, dgrad (overwrite and accumulate), wgrad with the BGRADB bias
// gradient, for each precision; strict fp32 is not TF32.
// GPU tests: each skips with the reason when no CUDA device is usable.
#include "kernels/cuda/fc.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/device.h"
#include "tests/kernels/cuda/dnn_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using testing::compare;
using testing::decode;
using testing::download;
using testing::encode;
using testing::fresh_seed;
using testing::identity_offset;
using testing::random_values;
using testing::round_all;
using testing::Tolerance;
using testing::tolerance;
using testing::upload;

#define CNNBENCH_SKIP_WITHOUT_GPU()                                       \
  do {                                                                    \
    if (const auto why = cuda_unavailable_reason()) GTEST_SKIP() << *why; \
  } while (0)

struct FcCase {
  const char* name = "";
  FcShape shape;
};

const std::vector<FcCase>& fc_cases() {
  static const std::vector<FcCase> cases = {
      // Odd sizes: rows not multiples of 8 elements, so no 16-byte row alignment.
      {.name = "tiny_odd", .shape = {.batch = 3, .in_features = 37, .out_features = 11}},
      // ResNet-50's classifier.
      {.name = "resnet_fc", .shape = {.batch = 16, .in_features = 2048, .out_features = 1000}},
      // MobileNetV2's classifier.
      {.name = "mobilenet_fc", .shape = {.batch = 8, .in_features = 1280, .out_features = 1000}},
  };
  return cases;
}

// Row-major host tensors, rounded to the storage type.
struct FcData {
  std::vector<double> x, w, b, dy;  // [N,in], [out,in], [out], [N,out]
};

FcData make_data(const FcShape& s, DType dtype, uint64_t seed) {
  FcData d;
  d.x = random_values(static_cast<size_t>(s.batch * s.in_features), seed);
  d.w = random_values(static_cast<size_t>(s.out_features * s.in_features), seed + 1);
  d.b = random_values(static_cast<size_t>(s.out_features), seed + 2);
  d.dy = random_values(static_cast<size_t>(s.batch * s.out_features), seed + 3);
  round_all(dtype, d.x);
  round_all(dtype, d.w);
  round_all(dtype, d.b);
  round_all(dtype, d.dy);
  return d;
}

struct Ref {
  std::vector<double> out, abs_sum;
};

Ref ref_forward(const FcShape& s, const FcData& d, bool bias) {
  const auto N = static_cast<size_t>(s.batch), I = static_cast<size_t>(s.in_features),
             O = static_cast<size_t>(s.out_features);
  Ref r{std::vector<double>(N * O, 0.0), std::vector<double>(N * O, 0.0)};
  for (size_t n = 0; n < N; ++n)
    for (size_t o = 0; o < O; ++o) {
      double acc = bias ? d.b[o] : 0.0;
      double abs_acc = bias ? std::abs(d.b[o]) : 0.0;
      for (size_t i = 0; i < I; ++i) {
        const double t = d.x[n * I + i] * d.w[o * I + i];
        acc += t;
        abs_acc += std::abs(t);
      }
      r.out[n * O + o] = acc;
      r.abs_sum[n * O + o] = abs_acc;
    }
  return r;
}

Ref ref_dgrad(const FcShape& s, const FcData& d) {
  const auto N = static_cast<size_t>(s.batch), I = static_cast<size_t>(s.in_features),
             O = static_cast<size_t>(s.out_features);
  Ref r{std::vector<double>(N * I, 0.0), std::vector<double>(N * I, 0.0)};
  for (size_t n = 0; n < N; ++n)
    for (size_t o = 0; o < O; ++o)
      for (size_t i = 0; i < I; ++i) {
        const double t = d.dy[n * O + o] * d.w[o * I + i];
        r.out[n * I + i] += t;
        r.abs_sum[n * I + i] += std::abs(t);
      }
  return r;
}

Ref ref_wgrad(const FcShape& s, const FcData& d) {
  const auto N = static_cast<size_t>(s.batch), I = static_cast<size_t>(s.in_features),
             O = static_cast<size_t>(s.out_features);
  Ref r{std::vector<double>(O * I, 0.0), std::vector<double>(O * I, 0.0)};
  for (size_t n = 0; n < N; ++n)
    for (size_t o = 0; o < O; ++o)
      for (size_t i = 0; i < I; ++i) {
        const double t = d.dy[n * O + o] * d.x[n * I + i];
        r.out[o * I + i] += t;
        r.abs_sum[o * I + i] += std::abs(t);
      }
  return r;
}

Ref ref_bias_grad(const FcShape& s, const FcData& d) {
  const auto N = static_cast<size_t>(s.batch), O = static_cast<size_t>(s.out_features);
  Ref r{std::vector<double>(O, 0.0), std::vector<double>(O, 0.0)};
  for (size_t n = 0; n < N; ++n)
    for (size_t o = 0; o < O; ++o) {
      r.out[o] += d.dy[n * O + o];
      r.abs_sum[o] += std::abs(d.dy[n * O + o]);
    }
  return r;
}

std::function<std::string(size_t)> matrix_index(const char* name, int64_t cols) {
  return [name, cols](size_t i) {
    const auto c = static_cast<int64_t>(i);
    return std::string(name) + "[" + std::to_string(c / cols) + "," + std::to_string(c % cols) +
           "]";
  };
}

DeviceBuffer to_device(DType dtype, const std::vector<double>& v, const char* what) {
  return upload(encode(dtype, v, identity_offset(), static_cast<int64_t>(v.size())), what);
}

std::vector<double> from_device(DType dtype, const DeviceBuffer& b, size_t count) {
  return decode(dtype, download(b), count, identity_offset());
}

// ---------------------------------------------------------------------------
// The table: shape × precision × bias.
// ---------------------------------------------------------------------------

using FcParam = std::tuple<size_t, Precision, bool>;

class FcLayerTest : public ::testing::TestWithParam<FcParam> {
 protected:
  void SetUp() override { CNNBENCH_SKIP_WITHOUT_GPU(); }
};

TEST_P(FcLayerTest, AllPassesMatchLoops) {
  const auto [case_index, precision, bias] = GetParam();
  const FcShape& s = fc_cases()[case_index].shape;
  DeviceContext ctx(0);
  FcConfig cfg;
  cfg.shape = s;
  cfg.precision = precision;
  cfg.bias = bias;
  const FcLayer layer(ctx, cfg);
  ctx.reserve_workspace(layer.workspace_bytes());
  if (precision == Precision::Fp32) {
    EXPECT_NE(layer.compute_type(), CUBLAS_COMPUTE_32F_FAST_TF32);
  }

  const DType dtype = storage_dtype(precision);
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const FcData d = make_data(s, dtype, seed);
  DeviceBuffer x = to_device(dtype, d.x, "x");
  DeviceBuffer w = to_device(dtype, d.w, "w");
  DeviceBuffer b = to_device(dtype, d.b, "b");
  DeviceBuffer dy = to_device(dtype, d.dy, "dy");
  DeviceBuffer y(s.batch * s.out_features * dtype_size(dtype), "y");
  DeviceBuffer dx(s.batch * s.in_features * dtype_size(dtype), "dx");
  DeviceBuffer dw(s.out_features * s.in_features * dtype_size(dtype), "dw");
  DeviceBuffer db(s.out_features * dtype_size(dtype), "db");

  layer.forward(ctx, x.get(), w.get(), bias ? b.get() : nullptr, y.get());
  layer.backward_data(ctx, dy.get(), w.get(), dx.get());
  layer.backward_filter(ctx, x.get(), dy.get(), dw.get(), bias ? db.get() : nullptr);
  ctx.stream.synchronize();

  const Tolerance tol = tolerance(precision);
  const Ref fwd = ref_forward(s, d, bias);
  EXPECT_TRUE(compare(from_device(dtype, y, fwd.out.size()), fwd.out, fwd.abs_sum, tol,
                      matrix_index("y", s.out_features)))
      << layer.describe(FcPass::Forward);
  const Ref dg = ref_dgrad(s, d);
  EXPECT_TRUE(compare(from_device(dtype, dx, dg.out.size()), dg.out, dg.abs_sum, tol,
                      matrix_index("dx", s.in_features)))
      << layer.describe(FcPass::BackwardData);
  const Ref wg = ref_wgrad(s, d);
  EXPECT_TRUE(compare(from_device(dtype, dw, wg.out.size()), wg.out, wg.abs_sum, tol,
                      matrix_index("dw", s.in_features)))
      << layer.describe(FcPass::BackwardFilter);
  if (bias) {
    const Ref bg = ref_bias_grad(s, d);
    EXPECT_TRUE(compare(from_device(dtype, db, bg.out.size()), bg.out, bg.abs_sum, tol,
                        matrix_index("db", s.out_features)))
        << layer.describe(FcPass::BackwardFilter) << " bias gradient (BGRADB)";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, FcLayerTest,
                         ::testing::Combine(::testing::Values(size_t{0}, size_t{1}, size_t{2}),
                                            ::testing::Values(Precision::Fp32, Precision::Tf32,
                                                              Precision::Fp16, Precision::Bf16),
                                            ::testing::Bool()),
                         [](const ::testing::TestParamInfo<FcParam>& param_info) {
                           return std::string(fc_cases()[std::get<0>(param_info.param)].name) +
                                  "_" + kernels::to_string(std::get<1>(param_info.param)) +
                                  (std::get<2>(param_info.param) ? "_bias" : "_nobias");
                         });

// fp16/bf16 inputs with fp32 dW and db (wgrad_dtype = F32), and dgrad
// accumulating onto the previous dx (dgrad_beta = 1); db by cuBLASLt's BGRADB
// epilogue where it has an algorithm, and by the fallback (DEFAULT epilogue
// plus our reduction), forced by the test hook.
class FcMixedTest : public ::testing::TestWithParam<std::tuple<Precision, bool>> {
 protected:
  void SetUp() override { CNNBENCH_SKIP_WITHOUT_GPU(); }
};

TEST_P(FcMixedTest, Fp32WeightGradientAndAccumulatingDgrad) {
  const Precision precision = std::get<0>(GetParam());
  const bool force_fallback = std::get<1>(GetParam());
  const FcShape s{.batch = 16, .in_features = 512, .out_features = 100};
  DeviceContext ctx(0);
  FcConfig cfg;
  cfg.shape = s;
  cfg.precision = precision;
  cfg.wgrad_dtype = DType::F32;
  cfg.dgrad_beta = 1.0F;
  cfg.force_bias_grad_fallback = force_fallback;
  const FcLayer layer(ctx, cfg);
  if (force_fallback) {
    EXPECT_EQ(layer.bias_grad_path(), FcBiasGradPath::Fallback);
  } else {
    // Either is correct; which one this GPU and cuBLASLt give is printed.
    std::printf("%s: bias gradient by %s\n", layer.describe(FcPass::BackwardFilter).c_str(),
                to_string(layer.bias_grad_path()));
    EXPECT_NE(layer.bias_grad_path(), FcBiasGradPath::None);
  }
  ctx.reserve_workspace(layer.workspace_bytes());
  const DType dtype = storage_dtype(precision);
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const FcData d = make_data(s, dtype, seed);
  std::vector<double> dx0 = random_values(static_cast<size_t>(s.batch * s.in_features), seed + 10);
  round_all(dtype, dx0);
  DeviceBuffer x = to_device(dtype, d.x, "x");
  DeviceBuffer w = to_device(dtype, d.w, "w");
  DeviceBuffer dy = to_device(dtype, d.dy, "dy");
  DeviceBuffer dx = to_device(dtype, dx0, "dx");
  DeviceBuffer dw(s.out_features * s.in_features * 4, "dw f32");
  DeviceBuffer db(s.out_features * 4, "db f32");
  layer.backward_data(ctx, dy.get(), w.get(), dx.get());
  layer.backward_filter(ctx, x.get(), dy.get(), dw.get(), db.get());
  ctx.stream.synchronize();

  Ref dg = ref_dgrad(s, d);
  for (size_t i = 0; i < dg.out.size(); ++i) {
    dg.out[i] += dx0[i];
    dg.abs_sum[i] += std::abs(dx0[i]);
  }
  const Tolerance tol = tolerance(precision);
  EXPECT_TRUE(compare(from_device(dtype, dx, dg.out.size()), dg.out, dg.abs_sum, tol,
                      matrix_index("dx", s.in_features)))
      << "dgrad beta 1";
  // fp32 outputs: only fp32 accumulation error remains.
  const Ref wg = ref_wgrad(s, d);
  EXPECT_TRUE(compare(from_device(DType::F32, dw, wg.out.size()), wg.out, wg.abs_sum,
                      tolerance(Precision::Fp32), matrix_index("dw", s.in_features)))
      << "fp32 dW from " << kernels::to_string(precision) << " inputs";
  const Ref bg = ref_bias_grad(s, d);
  EXPECT_TRUE(compare(from_device(DType::F32, db, bg.out.size()), bg.out, bg.abs_sum,
                      tolerance(Precision::Fp32), matrix_index("db", s.out_features)))
      << "fp32 db from " << kernels::to_string(precision) << " inputs";
}

INSTANTIATE_TEST_SUITE_P(LowPrecision, FcMixedTest,
                         ::testing::Combine(::testing::Values(Precision::Fp16, Precision::Bf16),
                                            ::testing::Bool()),
                         [](const auto& param_info) {
                           return std::string(kernels::to_string(std::get<0>(param_info.param))) +
                                  (std::get<1>(param_info.param) ? "_fallback" : "_preferred");
                         });

// Strict fp32 is not TF32: x = 1 + 2⁻¹¹ (exact in fp32, 1 in TF32) times
// w = 1 sums exactly in fp32 (≤ 21 significant bits per partial sum), so the
// result is exact up to 1e-6 relative; TF32 would lose 2⁻¹¹ ≈ 4.9e-4.
TEST(FcStrictFp32Test, DoesNotRoundInputsToTf32) {
  CNNBENCH_SKIP_WITHOUT_GPU();
  const FcShape s{.batch = 4, .in_features = 1024, .out_features = 64};
  DeviceContext ctx(0);
  FcConfig cfg;
  cfg.shape = s;
  cfg.precision = Precision::Fp32;
  cfg.bias = false;
  cfg.training = false;
  const FcLayer layer(ctx, cfg);
  ctx.reserve_workspace(layer.workspace_bytes());
  const double odd = 1.0 + std::ldexp(1.0, -11);
  const std::vector<double> xv(static_cast<size_t>(s.batch * s.in_features), odd);
  const std::vector<double> wv(static_cast<size_t>(s.out_features * s.in_features), 1.0);
  DeviceBuffer x = to_device(DType::F32, xv, "x");
  DeviceBuffer w = to_device(DType::F32, wv, "w");
  DeviceBuffer y(s.batch * s.out_features * 4, "y");
  layer.forward(ctx, x.get(), w.get(), nullptr, y.get());
  ctx.stream.synchronize();
  const auto got = from_device(DType::F32, y, static_cast<size_t>(s.batch * s.out_features));
  const double want = static_cast<double>(s.in_features) * odd;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want, 1e-6 * want)
        << "y element " << i << " of " << layer.describe(FcPass::Forward)
        << ": TF32 rounding would give " << s.in_features;
  }
}

TEST(FcLayerMisuseTest, RejectsBadConfigsAndPointers) {
  CNNBENCH_SKIP_WITHOUT_GPU();
  DeviceContext ctx(0);
  FcConfig cfg;
  cfg.shape = {.batch = 4, .in_features = 16, .out_features = 8};
  cfg.precision = Precision::Fp16;
  FcConfig bad = cfg;
  bad.shape.in_features = 0;
  EXPECT_THROW((void)FcLayer(ctx, bad), std::invalid_argument);
  bad = cfg;
  bad.dgrad_beta = 0.5F;
  EXPECT_THROW((void)FcLayer(ctx, bad), std::invalid_argument);
  bad = cfg;
  bad.wgrad_dtype = DType::BF16;  // neither the storage type nor f32
  EXPECT_THROW((void)FcLayer(ctx, bad), std::invalid_argument);

  const FcLayer layer(ctx, cfg);
  ctx.reserve_workspace(layer.workspace_bytes());
  DeviceBuffer buf(4096, "buffer");
  auto* p = static_cast<char*>(buf.get());
  EXPECT_THROW(layer.forward(ctx, p + 2, p, p, p), std::invalid_argument);    // misaligned x
  EXPECT_THROW(layer.forward(ctx, p, p, nullptr, p), std::invalid_argument);  // bias missing

  FcConfig inference = cfg;
  inference.training = false;
  const FcLayer fwd_only(ctx, inference);
  EXPECT_THROW(fwd_only.backward_data(ctx, p, p, p), std::logic_error);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
