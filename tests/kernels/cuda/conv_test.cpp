// (Long on purpose: one test file per layer family, as the sources.)
// cuDNN convolutions (fprop, dgrad, wgrad) against direct fp64 loops on the
// CPU, for a table of shapes × precisions × layouts; the conv layer's bias and
// accumulation; the plan cache and the engine-choice cache; autotuning.
// GPU tests: each skips with the reason when no CUDA device is usable.
#include "kernels/cuda/conv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/plan_cache.h"
#include "tests/kernels/cuda/dnn_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using testing::compare;
using testing::decode;
using testing::download;
using testing::encode;
using testing::fresh_seed;
using testing::random_values;
using testing::round_all;
using testing::Tolerance;
using testing::tolerance;
using testing::upload;

#define CNNBENCH_SKIP_WITHOUT_GPU()                                       \
  do {                                                                    \
    if (const auto why = cuda_unavailable_reason()) GTEST_SKIP() << *why; \
  } while (0)

// ---------------------------------------------------------------------------
// The shapes. `real_c` < shape.c marks the first-layer channel padding: input
// channels and filter channels real_c.. are zero (conv.h's contract).
// ---------------------------------------------------------------------------

struct ConvCase {
  const char* name = "";
  ConvShape shape;
  int64_t real_c = 0;  ///< 0: no padding
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      // ResNet-50's stem: 7×7 stride 2 pad 3 on 3 channels (image 40 keeps the
      // CPU reference quick), unpadded and padded to 4 and 8 channels.
      {.name = "stem7x7s2_c3",
       .shape = {.n = 2,
                 .c = 3,
                 .h = 40,
                 .w = 40,
                 .k = 64,
                 .r = 7,
                 .s = 7,
                 .stride_h = 2,
                 .stride_w = 2,
                 .pad_h = 3,
                 .pad_w = 3}},
      {.name = "stem7x7s2_c3pad4",
       .shape = {.n = 2,
                 .c = 4,
                 .h = 40,
                 .w = 40,
                 .k = 64,
                 .r = 7,
                 .s = 7,
                 .stride_h = 2,
                 .stride_w = 2,
                 .pad_h = 3,
                 .pad_w = 3},
       .real_c = 3},
      {.name = "stem7x7s2_c3pad8",
       .shape = {.n = 2,
                 .c = 8,
                 .h = 40,
                 .w = 40,
                 .k = 64,
                 .r = 7,
                 .s = 7,
                 .stride_h = 2,
                 .stride_w = 2,
                 .pad_h = 3,
                 .pad_w = 3},
       .real_c = 3},
      // Bottleneck 1×1 (expansion) and 3×3 convolutions, stride 1 and 2.
      {.name = "conv1x1", .shape = {.n = 2, .c = 64, .h = 14, .w = 14, .k = 256}},
      {.name = "conv3x3s1",
       .shape =
           {.n = 2, .c = 64, .h = 14, .w = 14, .k = 64, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1}},
      {.name = "conv3x3s2",
       .shape = {.n = 2,
                 .c = 128,
                 .h = 15,
                 .w = 15,
                 .k = 128,
                 .r = 3,
                 .s = 3,
                 .stride_h = 2,
                 .stride_w = 2,
                 .pad_h = 1,
                 .pad_w = 1}},
      // Grouped, and depthwise as in MobileNetV2 (groups = C = K, stride 2).
      {.name = "grouped3x3g4",
       .shape = {.n = 2,
                 .c = 32,
                 .h = 12,
                 .w = 12,
                 .k = 64,
                 .r = 3,
                 .s = 3,
                 .pad_h = 1,
                 .pad_w = 1,
                 .groups = 4}},
      {.name = "depthwise3x3s2",
       .shape = {.n = 2,
                 .c = 32,
                 .h = 13,
                 .w = 13,
                 .k = 32,
                 .r = 3,
                 .s = 3,
                 .stride_h = 2,
                 .stride_w = 2,
                 .pad_h = 1,
                 .pad_w = 1,
                 .groups = 32}},
      // Odd sizes everywhere: channels, image, non-square filter, stride, padding.
      {.name = "odd",
       .shape = {.n = 3,
                 .c = 6,
                 .h = 9,
                 .w = 7,
                 .k = 10,
                 .r = 3,
                 .s = 5,
                 .stride_h = 2,
                 .stride_w = 1,
                 .pad_h = 1,
                 .pad_w = 2}},
  };
  return cases;
}

// ---------------------------------------------------------------------------
// Host tensors in logical order and the fp64 reference.
// ---------------------------------------------------------------------------

// Logical (row-major N,C,H,W / K,C/g,R,S / N,K,P,Q) index of a TensorLayout's dims.
size_t logical_index(const TensorLayout& l, int64_t a, int64_t b, int64_t c, int64_t d) {
  return static_cast<size_t>(((a * l.dims[1] + b) * l.dims[2] + c) * l.dims[3] + d);
}

// Storage offset of logical element i.
std::function<int64_t(size_t)> storage_offset(const TensorLayout& l) {
  return [l](size_t i) {
    auto rem = static_cast<int64_t>(i);
    const int64_t d = rem % l.dims[3];
    rem /= l.dims[3];
    const int64_t c = rem % l.dims[2];
    rem /= l.dims[2];
    const int64_t b = rem % l.dims[1];
    const int64_t a = rem / l.dims[1];
    return l.offset(a, b, c, d);
  };
}

std::function<std::string(size_t)> name_index(const TensorLayout& l, const char* tensor) {
  return [l, tensor](size_t i) {
    auto rem = static_cast<int64_t>(i);
    const int64_t d = rem % l.dims[3];
    rem /= l.dims[3];
    const int64_t c = rem % l.dims[2];
    rem /= l.dims[2];
    const int64_t b = rem % l.dims[1];
    const int64_t a = rem / l.dims[1];
    return std::string(tensor) + "[" + std::to_string(a) + "," + std::to_string(b) + "," +
           std::to_string(c) + "," + std::to_string(d) + "]";
  };
}

struct Reference {
  std::vector<double> out;
  std::vector<double> abs_sum;  ///< Σ|terms| per output element
};

// Direct convolution loops over (n, k, p, q, c, r, s) with fp64 accumulation.
// x [N,C,H,W], w [K,C/g,R,S], dy [N,K,P,Q] in logical order.
Reference reference(ConvKind kind, const ConvShape& sh, const std::vector<double>& x,
                    const std::vector<double>& w, const std::vector<double>& dy) {
  const TensorLayout xl = conv_x_layout(sh, DataFormat::NCHW);
  const TensorLayout wl = conv_w_layout(sh, DataFormat::NCHW);
  const TensorLayout yl = conv_y_layout(sh, DataFormat::NCHW);
  const size_t out_size = static_cast<size_t>(kind == ConvKind::Fprop   ? yl.elements()
                                              : kind == ConvKind::Dgrad ? xl.elements()
                                                                        : wl.elements());
  Reference ref{std::vector<double>(out_size, 0.0), std::vector<double>(out_size, 0.0)};
  const int64_t cg = sh.c_per_group();
  const int64_t kg = sh.k_per_group();
  const int64_t P = sh.p();
  const int64_t Q = sh.q();
  for (int64_t n = 0; n < sh.n; ++n) {
    for (int64_t k = 0; k < sh.k; ++k) {
      const int64_t g = k / kg;
      for (int64_t p = 0; p < P; ++p) {
        for (int64_t q = 0; q < Q; ++q) {
          const size_t yi = logical_index(yl, n, k, p, q);
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t r = 0; r < sh.r; ++r) {
              const int64_t ih = p * sh.stride_h - sh.pad_h + r * sh.dilation_h;
              if (ih < 0 || ih >= sh.h) continue;
              for (int64_t s = 0; s < sh.s; ++s) {
                const int64_t iw = q * sh.stride_w - sh.pad_w + s * sh.dilation_w;
                if (iw < 0 || iw >= sh.w) continue;
                const size_t xi = logical_index(xl, n, g * cg + c, ih, iw);
                const size_t wi = logical_index(wl, k, c, r, s);
                size_t oi = 0;
                double term = 0.0;
                switch (kind) {
                  case ConvKind::Fprop:
                    oi = yi;
                    term = x[xi] * w[wi];
                    break;
                  case ConvKind::Dgrad:
                    oi = xi;
                    term = dy[yi] * w[wi];
                    break;
                  case ConvKind::Wgrad:
                    oi = wi;
                    term = x[xi] * dy[yi];
                    break;
                }
                ref.out[oi] += term;
                ref.abs_sum[oi] += std::abs(term);
              }
            }
          }
        }
      }
    }
  }
  return ref;
}

// Random logical tensors for a case, rounded to the storage type; padded
// channels of x and w are zero.
struct Inputs {
  std::vector<double> x, w, dy;
};

Inputs make_inputs(const ConvCase& cc, DType dtype, uint64_t seed) {
  const ConvShape& sh = cc.shape;
  Inputs in;
  in.x = random_values(static_cast<size_t>(sh.x_elements()), seed);
  in.w = random_values(static_cast<size_t>(sh.w_elements()), seed + 1);
  in.dy = random_values(static_cast<size_t>(sh.y_elements()), seed + 2);
  if (cc.real_c > 0) {
    const TensorLayout xl = conv_x_layout(sh, DataFormat::NCHW);
    const TensorLayout wl = conv_w_layout(sh, DataFormat::NCHW);
    for (int64_t n = 0; n < sh.n; ++n)
      for (int64_t c = cc.real_c; c < sh.c; ++c)
        for (int64_t h = 0; h < sh.h; ++h)
          for (int64_t w = 0; w < sh.w; ++w) in.x[logical_index(xl, n, c, h, w)] = 0.0;
    for (int64_t k = 0; k < sh.k; ++k)
      for (int64_t c = cc.real_c; c < sh.c; ++c)
        for (int64_t r = 0; r < sh.r; ++r)
          for (int64_t s = 0; s < sh.s; ++s) in.w[logical_index(wl, k, c, r, s)] = 0.0;
  }
  round_all(dtype, in.x);
  round_all(dtype, in.w);
  round_all(dtype, in.dy);
  return in;
}

// Device copies of x, w, y (or dx, dw, dy) in `format`.
struct DeviceTensors {
  DeviceBuffer x, w, y;
};

DeviceTensors to_device(const ConvShape& sh, DataFormat format, DType dtype, const Inputs& in) {
  const TensorLayout xl = conv_x_layout(sh, format);
  const TensorLayout wl = conv_w_layout(sh, format);
  const TensorLayout yl = conv_y_layout(sh, format);
  DeviceTensors d;
  d.x = upload(encode(dtype, in.x, storage_offset(xl), xl.elements()), "test x");
  d.w = upload(encode(dtype, in.w, storage_offset(wl), wl.elements()), "test w");
  d.y = upload(encode(dtype, in.dy, storage_offset(yl), yl.elements()), "test y/dy");
  return d;
}

// Runs one pass with `plan` and returns the output in logical order.
std::vector<double> run_pass(const DeviceContext& ctx, const ConvPlan& plan, DeviceTensors& d) {
  const ConvConfig& cfg = plan.config();
  const DType dtype = storage_dtype(cfg.precision);
  const ConvShape& sh = cfg.shape;
  switch (cfg.kind) {
    case ConvKind::Fprop: {
      plan.fprop(ctx, d.x.get(), d.w.get(), d.y.get());
      ctx.stream.synchronize();
      const TensorLayout yl = conv_y_layout(sh, cfg.format);
      return decode(dtype, download(d.y), static_cast<size_t>(yl.elements()), storage_offset(yl));
    }
    case ConvKind::Dgrad: {
      plan.dgrad(ctx, d.y.get(), d.w.get(), d.x.get());
      ctx.stream.synchronize();
      const TensorLayout xl = conv_x_layout(sh, cfg.format);
      return decode(dtype, download(d.x), static_cast<size_t>(xl.elements()), storage_offset(xl));
    }
    case ConvKind::Wgrad: {
      plan.wgrad(ctx, d.x.get(), d.y.get(), d.w.get());
      ctx.stream.synchronize();
      const TensorLayout wl = conv_w_layout(sh, cfg.format);
      return decode(dtype, download(d.w), static_cast<size_t>(wl.elements()), storage_offset(wl));
    }
  }
  return {};
}

const TensorLayout& pick(ConvKind kind, const TensorLayout& x, const TensorLayout& w,
                         const TensorLayout& y) {
  return kind == ConvKind::Fprop ? y : kind == ConvKind::Dgrad ? x : w;
}

// The reference itself, without a GPU: dgrad and wgrad are the adjoints of
// fprop, ⟨fprop(x, w), dy⟩ = ⟨x, dgrad(dy, w)⟩ = ⟨w, wgrad(x, dy)⟩, and the
// storage packing round-trips in both layouts.
TEST(ConvReferenceTest, AdjointIdentityAndPacking) {
  for (const ConvCase& cc : conv_cases()) {
    const Inputs in = make_inputs(cc, DType::F32, fresh_seed());
    const Reference y = reference(ConvKind::Fprop, cc.shape, in.x, in.w, in.dy);
    const Reference dx = reference(ConvKind::Dgrad, cc.shape, in.x, in.w, in.dy);
    const Reference dw = reference(ConvKind::Wgrad, cc.shape, in.x, in.w, in.dy);
    auto dot = [](const std::vector<double>& a, const std::vector<double>& b) {
      double s = 0.0;
      for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
      return s;
    };
    const double a = dot(y.out, in.dy);
    EXPECT_NEAR(dot(in.x, dx.out), a, 1e-9 * (1.0 + std::abs(a))) << cc.name;
    EXPECT_NEAR(dot(in.w, dw.out), a, 1e-9 * (1.0 + std::abs(a))) << cc.name;
    for (DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
      const TensorLayout wl = conv_w_layout(cc.shape, f);
      const auto bytes = encode(DType::F32, in.w, storage_offset(wl), wl.elements());
      EXPECT_EQ(decode(DType::F32, bytes, in.w.size(), storage_offset(wl)), in.w) << cc.name;
    }
  }
}

// ---------------------------------------------------------------------------
// The table: every case × pass × precision × layout (padded stems: NHWC fp16/bf16 only).
// ---------------------------------------------------------------------------

struct ConvParam {
  size_t case_index = 0;
  ConvKind kind = ConvKind::Fprop;
  Precision precision = Precision::Fp32;
  DataFormat format = DataFormat::NHWC;
};

std::vector<ConvParam> all_params() {
  std::vector<ConvParam> out;
  const auto& cases = conv_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    for (ConvKind kind : {ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad}) {
      for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16}) {
        for (DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
          if (cases[i].real_c > 0 &&
              (f != DataFormat::NHWC || (p != Precision::Fp16 && p != Precision::Bf16))) {
            continue;
          }
          out.push_back({i, kind, p, f});
        }
      }
    }
  }
  return out;
}

std::string param_name(const ::testing::TestParamInfo<ConvParam>& info) {
  const ConvParam& p = info.param;
  return std::string(conv_cases()[p.case_index].name) + "_" + to_string(p.kind) + "_" +
         kernels::to_string(p.precision) + "_" + kernels::to_string(p.format);
}

class ConvPassTest : public ::testing::TestWithParam<ConvParam> {
 protected:
  void SetUp() override { CNNBENCH_SKIP_WITHOUT_GPU(); }
};

TEST_P(ConvPassTest, MatchesDirectLoops) {
  const ConvParam& prm = GetParam();
  const ConvCase& cc = conv_cases()[prm.case_index];
  DeviceContext ctx(0);
  ConvConfig cfg;
  cfg.shape = cc.shape;
  cfg.kind = prm.kind;
  cfg.precision = prm.precision;
  cfg.format = prm.format;
  const ConvPlan plan(ctx, cfg);
  ctx.reserve_workspace(plan.workspace_bytes());

  const DType dtype = storage_dtype(prm.precision);
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Inputs in = make_inputs(cc, dtype, seed);
  DeviceTensors d = to_device(cc.shape, prm.format, dtype, in);
  const std::vector<double> got = run_pass(ctx, plan, d);
  const Reference ref = reference(prm.kind, cc.shape, in.x, in.w, in.dy);

  const TensorLayout xl = conv_x_layout(cc.shape, DataFormat::NCHW);
  const TensorLayout wl = conv_w_layout(cc.shape, DataFormat::NCHW);
  const TensorLayout yl = conv_y_layout(cc.shape, DataFormat::NCHW);
  const char* tensor = prm.kind == ConvKind::Fprop   ? "y"
                       : prm.kind == ConvKind::Dgrad ? "dx"
                                                     : "dw";
  EXPECT_TRUE(compare(got, ref.out, ref.abs_sum, tolerance(prm.precision),
                      name_index(pick(prm.kind, xl, wl, yl), tensor)))
      << cfg.describe() << " with engine " << plan.engine().to_string();

  if (cc.real_c > 0 && prm.kind == ConvKind::Wgrad) {
    // The padded filter channels get exactly zero gradient (x is zero there).
    for (int64_t k = 0; k < cc.shape.k; ++k)
      for (int64_t c = cc.real_c; c < cc.shape.c; ++c)
        for (int64_t r = 0; r < cc.shape.r; ++r)
          for (int64_t s = 0; s < cc.shape.s; ++s)
            ASSERT_EQ(got[logical_index(wl, k, c, r, s)], 0.0)
                << "dw[" << k << "," << c << "," << r << "," << s << "] of a padded channel";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ConvPassTest, ::testing::ValuesIn(all_params()), param_name);

// ---------------------------------------------------------------------------
// Strict fp32 is not TF32: x = 1 + 2⁻¹¹ is exact in fp32 but rounds (or
// truncates) to 1 in TF32's 10-bit mantissa. With w = 1 and dy = 1 every
// partial sum needs ≤ 21 significant bits, so a direct fp32 sum is exact in
// any order, while TF32 would make every output 2⁻¹¹ ≈ 4.9e-4 too small
// (relative). Winograd or FFT engines (allowed in fp32) round their
// transforms, so the check allows 1e-5 relative: 50 times below TF32's error.
// ---------------------------------------------------------------------------

class ConvStrictFp32Test : public ::testing::TestWithParam<std::tuple<ConvKind, DataFormat>> {
 protected:
  void SetUp() override { CNNBENCH_SKIP_WITHOUT_GPU(); }
};

TEST_P(ConvStrictFp32Test, DoesNotRoundInputsToTf32) {
  const auto [kind, format] = GetParam();
  const ConvShape sh{.n = 2, .c = 64, .h = 10, .w = 10, .k = 32, .r = 3, .s = 3};
  DeviceContext ctx(0);
  ConvConfig cfg;
  cfg.shape = sh;
  cfg.kind = kind;
  cfg.precision = Precision::Fp32;
  cfg.format = format;
  const ConvPlan plan(ctx, cfg);
  ctx.reserve_workspace(plan.workspace_bytes());
  const double odd = 1.0 + std::ldexp(1.0, -11);
  Inputs in;
  in.x.assign(static_cast<size_t>(sh.x_elements()), kind == ConvKind::Dgrad ? 1.0 : odd);
  in.w.assign(static_cast<size_t>(sh.w_elements()), 1.0);
  in.dy.assign(static_cast<size_t>(sh.y_elements()), kind == ConvKind::Dgrad ? odd : 1.0);
  DeviceTensors d = to_device(sh, format, DType::F32, in);
  const std::vector<double> got = run_pass(ctx, plan, d);
  const Reference ref = reference(kind, sh, in.x, in.w, in.dy);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], ref.out[i], 1e-5 * std::abs(ref.out[i]))
        << "element " << i << " of " << cfg.describe() << " (engine " << plan.engine().to_string()
        << "): an error near 4.9e-4 relative means TF32 inputs";
  }
  EXPECT_FALSE(plan.engine().has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE));
  EXPECT_FALSE(plan.engine().has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS));
}

INSTANTIATE_TEST_SUITE_P(Passes, ConvStrictFp32Test,
                         ::testing::Combine(::testing::Values(ConvKind::Fprop, ConvKind::Dgrad,
                                                              ConvKind::Wgrad),
                                            ::testing::Values(DataFormat::NHWC, DataFormat::NCHW)),
                         [](const auto& param_info) {
                           return std::string(to_string(std::get<0>(param_info.param))) + "_" +
                                  kernels::to_string(std::get<1>(param_info.param));
                         });

// ---------------------------------------------------------------------------
// ConvLayer: bias forward and backward, dgrad accumulation, the plan cache.
// ---------------------------------------------------------------------------

class ConvLayerTest : public ::testing::TestWithParam<std::tuple<Precision, DataFormat>> {
 protected:
  void SetUp() override { CNNBENCH_SKIP_WITHOUT_GPU(); }
};

// A VGG-like 3×3 conv with bias: y = conv(x, w) + b; db = Σ_{n,p,q} dy;
// dx accumulated onto its previous contents with dgrad_beta = 1.
TEST_P(ConvLayerTest, BiasAndAccumulation) {
  const auto [precision, format] = GetParam();
  const ConvCase cc{
      .name = "vgg3x3",
      .shape = {
          .n = 2, .c = 16, .h = 11, .w = 11, .k = 24, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1}};
  const ConvShape& sh = cc.shape;
  DeviceContext ctx(0);
  PlanCache cache;
  ConvLayerConfig lc;
  lc.shape = sh;
  lc.precision = precision;
  lc.format = format;
  lc.bias = true;
  lc.dgrad_beta = 1.0F;
  const ConvLayer layer(cache, ctx, lc);
  ctx.reserve_workspace(layer.workspace_bytes());
  EXPECT_GE(layer.workspace_bytes(),
            conv_bias_backward_workspace_bytes(format, sh.n, sh.k, sh.p() * sh.q()));

  const DType dtype = storage_dtype(precision);
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Inputs in = make_inputs(cc, dtype, seed);
  std::vector<double> bias = random_values(static_cast<size_t>(sh.k), seed + 10);
  round_all(dtype, bias);
  std::vector<double> dx0 = random_values(static_cast<size_t>(sh.x_elements()), seed + 11);
  round_all(dtype, dx0);
  const TensorLayout xl = conv_x_layout(sh, format);
  const TensorLayout yl = conv_y_layout(sh, format);
  DeviceTensors d = to_device(sh, format, dtype, in);
  DeviceBuffer y(yl.elements() * dtype_size(dtype), "test y");
  DeviceBuffer dx = upload(encode(dtype, dx0, storage_offset(xl), xl.elements()), "test dx");
  DeviceBuffer b = upload(encode(dtype, bias, testing::identity_offset(), sh.k), "test bias");
  DeviceBuffer db(sh.k * dtype_size(dtype), "test db");

  layer.forward(ctx, d.x.get(), d.w.get(), b.get(), y.get());
  layer.backward_data(ctx, d.y.get(), d.w.get(), dx.get());
  layer.backward_bias(ctx, d.y.get(), db.get());
  ctx.stream.synchronize();

  const TensorLayout xn = conv_x_layout(sh, DataFormat::NCHW);
  const TensorLayout yn = conv_y_layout(sh, DataFormat::NCHW);
  const Tolerance tol = tolerance(precision);

  // Forward with bias: the bias is one more term of each output.
  Reference fwd = reference(ConvKind::Fprop, sh, in.x, in.w, in.dy);
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t k = 0; k < sh.k; ++k)
      for (int64_t p = 0; p < sh.p(); ++p)
        for (int64_t q = 0; q < sh.q(); ++q) {
          const size_t i = logical_index(yn, n, k, p, q);
          fwd.out[i] += bias[static_cast<size_t>(k)];
          fwd.abs_sum[i] += std::abs(bias[static_cast<size_t>(k)]);
        }
  const auto y_got =
      decode(dtype, download(y), static_cast<size_t>(yl.elements()), storage_offset(yl));
  EXPECT_TRUE(compare(y_got, fwd.out, fwd.abs_sum, tol, name_index(yn, "y")))
      << "forward with bias";

  // dgrad with beta = 1: the previous dx is one more term.
  Reference bwd = reference(ConvKind::Dgrad, sh, in.x, in.w, in.dy);
  for (size_t i = 0; i < bwd.out.size(); ++i) {
    bwd.out[i] += dx0[i];
    bwd.abs_sum[i] += std::abs(dx0[i]);
  }
  const auto dx_got =
      decode(dtype, download(dx), static_cast<size_t>(xl.elements()), storage_offset(xl));
  EXPECT_TRUE(compare(dx_got, bwd.out, bwd.abs_sum, tol, name_index(xn, "dx"))) << "dgrad beta 1";

  // db[k] = Σ dy[n, k, p, q].
  std::vector<double> db_want(static_cast<size_t>(sh.k), 0.0);
  std::vector<double> db_abs(static_cast<size_t>(sh.k), 0.0);
  for (int64_t n = 0; n < sh.n; ++n)
    for (int64_t k = 0; k < sh.k; ++k)
      for (int64_t p = 0; p < sh.p(); ++p)
        for (int64_t q = 0; q < sh.q(); ++q) {
          const double v = in.dy[logical_index(yn, n, k, p, q)];
          db_want[static_cast<size_t>(k)] += v;
          db_abs[static_cast<size_t>(k)] += std::abs(v);
        }
  const auto db_got =
      decode(dtype, download(db), static_cast<size_t>(sh.k), testing::identity_offset());
  EXPECT_TRUE(compare(db_got, db_want, db_abs, tol, [](size_t i) {
    return "db[" + std::to_string(i) + "]";
  })) << "bias gradient";
}

INSTANTIATE_TEST_SUITE_P(Precisions, ConvLayerTest,
                         ::testing::Combine(::testing::Values(Precision::Fp32, Precision::Fp16,
                                                              Precision::Bf16),
                                            ::testing::Values(DataFormat::NHWC, DataFormat::NCHW)),
                         [](const auto& param_info) {
                           return std::string(kernels::to_string(std::get<0>(param_info.param))) +
                                  "_" + kernels::to_string(std::get<1>(param_info.param));
                         });

// The bias gradient's two-pass reduction with many slices (N·P·Q > 4096 per
// channel) against a sum in fp64.
TEST(ConvBiasKernelTest, LargeReductionBothLayouts) {
  CNNBENCH_SKIP_WITHOUT_GPU();
  const int64_t n = 8, k = 40, pq = 33 * 35;  // 9240 elements per channel: 3 slices
  for (DataFormat format : {DataFormat::NHWC, DataFormat::NCHW}) {
    const TensorLayout l = packed_layout({n, k, 33, 35}, format);
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<double> dy = random_values(static_cast<size_t>(l.elements()), seed);
    round_all(DType::F32, dy);
    DeviceContext ctx(0, conv_bias_backward_workspace_bytes(format, n, k, pq));
    DeviceBuffer d_dy = upload(encode(DType::F32, dy, storage_offset(l), l.elements()), "dy");
    DeviceBuffer d_db(k * 4, "db");
    launch_conv_bias_backward(d_db.get(), d_dy.get(), DType::F32, format, n, k, pq,
                              ctx.workspace_ptr(), ctx.workspace_bytes(), ctx.stream.get());
    ctx.stream.synchronize();
    const auto got =
        decode(DType::F32, download(d_db), static_cast<size_t>(k), testing::identity_offset());
    const TensorLayout ln = packed_layout({n, k, 33, 35}, DataFormat::NCHW);
    std::vector<double> want(static_cast<size_t>(k), 0.0);
    std::vector<double> abs_sum(static_cast<size_t>(k), 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t c = 0; c < k; ++c)
        for (int64_t h = 0; h < 33; ++h)
          for (int64_t w = 0; w < 35; ++w) {
            const double v = dy[logical_index(ln, b, c, h, w)];
            want[static_cast<size_t>(c)] += v;
            abs_sum[static_cast<size_t>(c)] += std::abs(v);
          }
    EXPECT_TRUE(compare(got, want, abs_sum, tolerance(Precision::Fp32), [](size_t i) {
      return "db[" + std::to_string(i) + "]";
    })) << kernels::to_string(format);
  }
}

TEST(ConvPlanCacheTest, RepeatedShapeBuildsOnce) {
  CNNBENCH_SKIP_WITHOUT_GPU();
  DeviceContext ctx(0);
  PlanCache cache;
  ConvLayerConfig lc;
  lc.shape = {.n = 4, .c = 64, .h = 14, .w = 14, .k = 64, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  lc.precision = Precision::Fp16;
  const ConvLayer first(cache, ctx, lc);
  EXPECT_EQ(cache.stats().builds, 3);  // fprop, dgrad, wgrad
  EXPECT_EQ(cache.stats().hits, 0);
  const ConvLayer second(cache, ctx, lc);  // e.g. layer1.1.conv2 after layer1.0.conv2
  EXPECT_EQ(cache.stats().builds, 3);
  EXPECT_EQ(cache.stats().hits, 3);
  EXPECT_EQ(&first.plan(ConvKind::Fprop), &second.plan(ConvKind::Fprop));
  EXPECT_EQ(cache.size(), 3U);
  EXPECT_EQ(cache.engine_choices().size(), 3U);

  ConvLayerConfig accumulate = lc;
  accumulate.dgrad_beta = 1.0F;  // beta is baked into the plan: one more dgrad plan
  const ConvLayer third(cache, ctx, accumulate);
  EXPECT_EQ(cache.stats().builds, 4);
  EXPECT_EQ(cache.stats().hits, 5);

  ConvLayerConfig first_layer = lc;
  first_layer.compute_dgrad = false;
  const ConvLayer fourth(cache, ctx, first_layer);
  EXPECT_FALSE(fourth.has_plan(ConvKind::Dgrad));
  EXPECT_THROW((void)fourth.plan(ConvKind::Dgrad), std::logic_error);
  EXPECT_EQ(cache.stats().builds, 4);
  EXPECT_EQ(cache.stats().hits, 7);
  EXPECT_GE(cache.max_workspace_bytes(), 0);
}

// Autotuning picks one of the candidates and records it; a second cache fed
// with the first one's engine choices rebuilds the same engines without search.
TEST(ConvAutotuneTest, ChoosesAndReusesEngine) {
  CNNBENCH_SKIP_WITHOUT_GPU();
  DeviceContext ctx(0);
  PlanCache tuned;
  ConvBuildOptions opts;
  opts.autotune = true;
  opts.max_candidates = 4;
  ConvLayerConfig lc;
  lc.shape = {.n = 8,
              .c = 64,
              .h = 28,
              .w = 28,
              .k = 128,
              .r = 3,
              .s = 3,
              .stride_h = 2,
              .stride_w = 2,
              .pad_h = 1,
              .pad_w = 1};
  lc.precision = Precision::Fp16;
  const ConvLayer layer(tuned, ctx, lc, opts);
  for (ConvKind kind : {ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad}) {
    const ConvPlan& p = layer.plan(kind);
    EXPECT_GE(p.candidates(), 1) << to_string(kind);
    EXPECT_LE(p.candidates(), 4) << to_string(kind);
    if (p.candidates() > 1) {
      EXPECT_GT(p.autotuned_ms(), 0.0F) << to_string(kind);
    }
    EXPECT_GE(p.engine().choice.global_index, 0);
  }

  PlanCache replay;
  for (const auto& [key, choice] : tuned.engine_choices().entries()) {
    replay.engine_choices().insert(key, choice);
  }
  const ConvLayer again(replay, ctx, lc);
  EXPECT_EQ(replay.stats().engine_choice_reuses, 3);
  for (ConvKind kind : {ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad}) {
    EXPECT_TRUE(again.plan(kind).from_preferred_choice()) << to_string(kind);
    EXPECT_EQ(again.plan(kind).engine().choice, layer.plan(kind).engine().choice)
        << to_string(kind);
  }

  // The tuned plan still computes the right thing.
  ctx.reserve_workspace(layer.workspace_bytes());
  const ConvCase cc{.name = "tuned", .shape = lc.shape};
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const Inputs in = make_inputs(cc, DType::F16, seed);
  DeviceTensors d = to_device(lc.shape, DataFormat::NHWC, DType::F16, in);
  const auto got = run_pass(ctx, layer.plan(ConvKind::Fprop), d);
  const Reference ref = reference(ConvKind::Fprop, lc.shape, in.x, in.w, in.dy);
  EXPECT_TRUE(compare(got, ref.out, ref.abs_sum, tolerance(Precision::Fp16),
                      name_index(conv_y_layout(lc.shape, DataFormat::NCHW), "y")));
}

TEST(ConvPlanTest, RejectsMisuse) {
  CNNBENCH_SKIP_WITHOUT_GPU();
  DeviceContext ctx(0);
  ConvConfig cfg;
  cfg.shape = {.n = 1, .c = 8, .h = 8, .w = 8, .k = 8, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  cfg.precision = Precision::Fp16;
  const ConvPlan plan(ctx, cfg);
  ctx.reserve_workspace(plan.workspace_bytes());
  DeviceBuffer buf(4096, "test buffer");
  auto* base = static_cast<char*>(buf.get());
  // Wrong pass.
  EXPECT_THROW(plan.dgrad(ctx, base, base, base), std::logic_error);
  // A pointer below the promised 16-byte alignment.
  EXPECT_THROW(plan.fprop(ctx, base + 2, base, base), std::invalid_argument);
  // Null pointer.
  EXPECT_THROW(plan.fprop(ctx, nullptr, base, base), std::invalid_argument);
  // Bad shape.
  ConvConfig bad = cfg;
  bad.shape.groups = 3;
  EXPECT_THROW((void)ConvPlan(ctx, bad), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
