// The parts of the cuDNN convolution and cuBLASLt FC code that need no GPU and
// run in CI: output-size arithmetic, shape validation, tensor and filter
// layouts, cuDNN backend descriptors (attribute types, finalize, error
// messages), plan-cache keys and their hash, the engine filter, and the
// row-/column-major mapping of the FC layer's GEMMs.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/fc.h"
#include "kernels/cuda/plan_cache.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {
namespace {

// ---------------------------------------------------------------------------
// Output sizes: ⌊(in + 2·pad − dil·(k − 1) − 1) / stride⌋ + 1, as torch.nn.Conv2d.
// ---------------------------------------------------------------------------

TEST(ConvOutputSize, ResNetAndOddCases) {
  EXPECT_EQ(conv_output_size(224, 7, 3, 3, 2, 1), 112);  // ResNet stem
  EXPECT_EQ(conv_output_size(56, 3, 1, 1, 1, 1), 56);    // 3×3 same
  EXPECT_EQ(conv_output_size(56, 3, 1, 1, 2, 1), 28);    // 3×3 stride 2 (v1.5)
  EXPECT_EQ(conv_output_size(56, 1, 0, 0, 2, 1), 28);    // 1×1 stride-2 downsample
  EXPECT_EQ(conv_output_size(15, 3, 1, 1, 2, 1), 8);     // odd input, stride 2
  EXPECT_EQ(conv_output_size(224, 11, 2, 2, 4, 1), 55);  // AlexNet conv1
  EXPECT_EQ(conv_output_size(299, 3, 0, 0, 2, 1), 149);  // Inception3 stem
  EXPECT_EQ(conv_output_size(10, 3, 0, 0, 1, 2), 6);     // dilation 2: span 5
  EXPECT_EQ(conv_output_size(7, 3, 2, 1, 2, 1), 4);      // asymmetric padding
  EXPECT_EQ(conv_output_size(2, 5, 0, 0, 1, 1), 0);      // filter larger than input
  EXPECT_EQ(conv_output_size(8, 3, 0, 0, 0, 1), 0);      // invalid stride
}

TEST(ConvShapeTest, PQAndCounts) {
  const ConvShape s{.n = 2,
                    .c = 32,
                    .h = 13,
                    .w = 11,
                    .k = 64,
                    .r = 3,
                    .s = 5,
                    .stride_h = 2,
                    .stride_w = 1,
                    .pad_h = 1,
                    .pad_w = 2,
                    .groups = 4};
  EXPECT_EQ(s.p(), 7);
  EXPECT_EQ(s.q(), 11);
  EXPECT_EQ(s.c_per_group(), 8);
  EXPECT_EQ(s.k_per_group(), 16);
  EXPECT_EQ(s.x_elements(), 2 * 32 * 13 * 11);
  EXPECT_EQ(s.w_elements(), 64 * 8 * 3 * 5);
  EXPECT_EQ(s.y_elements(), 2 * 64 * 7 * 11);
  EXPECT_EQ(s.macs(), s.y_elements() * 8 * 3 * 5);
  EXPECT_NO_THROW(s.validate());
  EXPECT_NE(s.to_string().find("groups 4"), std::string::npos);
}

TEST(ConvShapeTest, ValidateNamesTheProblem) {
  ConvShape s{.n = 1, .c = 6, .h = 8, .w = 8, .k = 8, .r = 3, .s = 3, .groups = 4};
  try {
    s.validate();
    FAIL() << "groups 4 do not divide C 6";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("groups 4"), std::string::npos) << e.what();
  }
  s.groups = 1;
  s.k = 0;
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s.k = 8;
  s.r = 9;  // larger than the 8-pixel input without padding
  EXPECT_THROW(s.validate(), std::invalid_argument);
  s.r = 3;
  s.pad_h = -1;
  EXPECT_THROW(s.validate(), std::invalid_argument);
}

TEST(ConvShapeTest, FromGraphAttrsWithChannelPadding) {
  models::ConvAttrs stem;
  stem.out_channels = 64;
  stem.kernel_h = stem.kernel_w = 7;
  stem.stride_h = stem.stride_w = 2;
  stem.pad_h = stem.pad_w = 3;
  const models::Shape input{.n = 32, .c = 3, .h = 224, .w = 224};
  const ConvShape plain = conv_shape(input, stem);
  EXPECT_EQ(plain.c, 3);
  EXPECT_EQ(plain.p(), 112);
  const ConvShape padded = conv_shape(input, stem, 8);
  EXPECT_EQ(padded.c, 8);
  EXPECT_EQ(padded.w_elements(), 64 * 8 * 7 * 7);
  EXPECT_EQ(conv_shape(input, stem, 3).c, 3);  // not more than C: no padding

  models::ConvAttrs grouped = stem;
  grouped.groups = 3;
  grouped.out_channels = 63;
  EXPECT_THROW((void)conv_shape(input, grouped, 8), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Layouts: NHWC/KRSC and NCHW/KCRS strides; offsets are a bijection.
// ---------------------------------------------------------------------------

TEST(ConvLayout, Strides) {
  const ConvShape s{
      .n = 2, .c = 6, .h = 5, .w = 4, .k = 8, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1, .groups = 2};
  EXPECT_EQ(conv_x_layout(s, DataFormat::NHWC).strides, (std::array<int64_t, 4>{120, 1, 24, 6}));
  EXPECT_EQ(conv_x_layout(s, DataFormat::NCHW).strides, (std::array<int64_t, 4>{120, 20, 4, 1}));
  // Filters [K, C/g, R, S] = [8, 3, 3, 3].
  EXPECT_EQ(conv_w_layout(s, DataFormat::NHWC).strides, (std::array<int64_t, 4>{27, 1, 9, 3}));
  EXPECT_EQ(conv_w_layout(s, DataFormat::NCHW).strides, (std::array<int64_t, 4>{27, 9, 3, 1}));
  EXPECT_EQ(conv_y_layout(s, DataFormat::NHWC).dims, (std::array<int64_t, 4>{2, 8, 5, 4}));
}

TEST(ConvLayout, KrscOffsetFromPyTorchIndex) {
  // PyTorch's master weight [K, C/g, R, S] is KCRS; KRSC puts (k, c, r, s) at
  // ((k·R + r)·S + s)·C/g + c (conv.h).
  const ConvShape s{.n = 1, .c = 5, .h = 9, .w = 9, .k = 4, .r = 3, .s = 2};
  const TensorLayout krsc = conv_w_layout(s, DataFormat::NHWC);
  const TensorLayout kcrs = conv_w_layout(s, DataFormat::NCHW);
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t r = 0; r < s.r; ++r)
        for (int64_t q = 0; q < s.s; ++q) {
          EXPECT_EQ(krsc.offset(k, c, r, q), ((k * s.r + r) * s.s + q) * s.c + c);
          EXPECT_EQ(kcrs.offset(k, c, r, q), ((k * s.c + c) * s.r + r) * s.s + q);
        }
}

TEST(ConvLayout, OffsetsAreABijection) {
  for (DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
    const TensorLayout l = packed_layout({3, 5, 4, 7}, f);
    std::set<int64_t> seen;
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 5; ++b)
        for (int64_t c = 0; c < 4; ++c)
          for (int64_t d = 0; d < 7; ++d) {
            const int64_t o = l.offset(a, b, c, d);
            ASSERT_GE(o, 0);
            ASSERT_LT(o, l.elements());
            seen.insert(o);
          }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), l.elements()) << kernels::to_string(f);
  }
}

TEST(ConvTypes, PrecisionMapping) {
  EXPECT_EQ(storage_dtype(Precision::Fp32), DType::F32);
  EXPECT_EQ(storage_dtype(Precision::Tf32), DType::F32);
  EXPECT_EQ(storage_dtype(Precision::Fp16), DType::F16);
  EXPECT_EQ(storage_dtype(Precision::Bf16), DType::BF16);
  EXPECT_EQ(to_cudnn(DType::F16), CUDNN_DATA_HALF);
  EXPECT_EQ(to_cudnn(DType::BF16), CUDNN_DATA_BFLOAT16);
  EXPECT_EQ(to_cudnn(DType::F32), CUDNN_DATA_FLOAT);
}

// ---------------------------------------------------------------------------
// cuDNN backend descriptors: creating, setting and finalizing tensors,
// convolution descriptors and operations needs the library but no GPU, so
// the attribute types and values are checked here, in CI.
// ---------------------------------------------------------------------------

TEST(BackendDescriptorTest, TensorAttributesRoundTrip) {
  TensorSpec s;
  s.name = "x";
  s.uid = 7;
  s.data_type = CUDNN_DATA_HALF;
  s.dims = {2, 3, 5, 4};
  s.strides = {60, 1, 12, 3};  // NHWC
  s.byte_alignment = 16;
  BackendDescriptor t = make_tensor(s, "round trip");
  EXPECT_TRUE(t.finalized());
  EXPECT_EQ(t.get<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID), 7);
  EXPECT_EQ(t.get<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE), CUDNN_DATA_HALF);
  EXPECT_EQ(t.get_array<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_DIM_MAX), s.dims);
  EXPECT_EQ(t.get_array<int64_t>(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_DIM_MAX), s.strides);

  BackendDescriptor moved = std::move(t);
  EXPECT_TRUE(t.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_FALSE(moved.empty());
  EXPECT_EQ(moved.type(), CUDNN_BACKEND_TENSOR_DESCRIPTOR);
}

TEST(BackendDescriptorTest, ErrorsNameAttributeAndDescriptor) {
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor q of a test graph");
  // UNIQUE_ID is INT64; setting it as INT32 is the classic BAD_PARAM.
  try {
    t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, int32_t{3});
    FAIL() << "cuDNN accepted an INT32 unique id";
  } catch (const CudnnError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDNN_ATTR_TENSOR_UNIQUE_ID [INT32 x1]"), std::string::npos) << what;
    EXPECT_NE(what.find("tensor q of a test graph"), std::string::npos) << what;
    EXPECT_EQ(CUDNN_STATUS_CATEGORY(static_cast<int>(e.status())), CUDNN_STATUS_BAD_PARAM) << what;
  }
  // Finalizing without the required attributes fails and says which descriptor.
  try {
    t.finalize();
    FAIL() << "cuDNN finalized a tensor without dims";
  } catch (const CudnnError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("finalizing TENSOR descriptor for tensor q"), std::string::npos) << what;
  }
  EXPECT_THROW(
      make_tensor(TensorSpec{.name = "bad", .uid = 1, .dims = {1, 2}, .strides = {2}}, "test"),
      BackendError);
}

// Every pass × precision × layout of grouped, strided, odd and padded-stem
// shapes yields finalized cuDNN descriptors with the dims and strides of
// conv_{x,w,y}_layout (the graph ConvPlan hands to the heuristics).
TEST(ConvDescriptorsTest, FinalizeForEveryPassPrecisionLayout) {
  const std::vector<ConvShape> shapes = {
      {.n = 2,
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
      {.n = 2,
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
       .groups = 32},
      {.n = 3,
       .c = 6,
       .h = 9,
       .w = 7,
       .k = 10,
       .r = 3,
       .s = 5,
       .stride_h = 2,
       .stride_w = 1,
       .pad_h = 1,
       .pad_w = 2},
  };
  for (const ConvShape& shape : shapes)
    for (ConvKind kind : {ConvKind::Fprop, ConvKind::Dgrad, ConvKind::Wgrad})
      for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16})
        for (DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
          ConvConfig cfg;
          cfg.shape = shape;
          cfg.kind = kind;
          cfg.precision = p;
          cfg.format = f;
          cfg.beta = kind == ConvKind::Dgrad ? 1.0F : 0.0F;
          const ConvDescriptors d = make_conv_descriptors(cfg);
          ASSERT_TRUE(d.operation.finalized()) << cfg.describe();
          ASSERT_EQ(d.tensors_and_conv.size(), 4U);
          const std::array<TensorLayout, 3> layouts{
              conv_x_layout(shape, f), conv_w_layout(shape, f), conv_y_layout(shape, f)};
          for (size_t i = 0; i < 3; ++i) {
            const BackendDescriptor& t = d.tensors_and_conv[i];
            EXPECT_EQ(t.get<int64_t>(CUDNN_ATTR_TENSOR_UNIQUE_ID), static_cast<int64_t>(i + 1));
            EXPECT_EQ(t.get<cudnnDataType_t>(CUDNN_ATTR_TENSOR_DATA_TYPE),
                      to_cudnn(storage_dtype(p)));
            const auto dims = t.get_array<int64_t>(CUDNN_ATTR_TENSOR_DIMENSIONS, 4);
            const auto strides = t.get_array<int64_t>(CUDNN_ATTR_TENSOR_STRIDES, 4);
            EXPECT_EQ(dims, std::vector<int64_t>(layouts[i].dims.begin(), layouts[i].dims.end()))
                << cfg.describe();
            EXPECT_EQ(strides,
                      std::vector<int64_t>(layouts[i].strides.begin(), layouts[i].strides.end()))
                << cfg.describe();
          }
        }
  ConvConfig bad;
  bad.shape = {.n = 1, .c = 6, .h = 8, .w = 8, .k = 8, .r = 3, .s = 3, .groups = 4};
  EXPECT_THROW((void)make_conv_descriptors(bad), std::invalid_argument);
}

TEST(VariantPackTest, FinalizesWithoutDevice) {
  const std::array<int64_t, 3> uids{1, 2, 3};
  const std::array<void*, 3> ptrs{reinterpret_cast<void*>(256), reinterpret_cast<void*>(512),
                                  reinterpret_cast<void*>(768)};
  const VariantPack pack(uids, ptrs, nullptr, "test");
  EXPECT_TRUE(pack.descriptor().finalized());
  const std::array<int64_t, 2> fewer{1, 2};
  EXPECT_THROW(VariantPack(fewer, ptrs, nullptr, "test"), BackendError);
}

// ---------------------------------------------------------------------------
// Engine filter.
// ---------------------------------------------------------------------------

TEST(EngineFilterTest, PrecisionRules) {
  ConvConfig fp32;
  fp32.precision = Precision::Fp32;
  ConvConfig tf32 = fp32;
  tf32.precision = Precision::Tf32;
  EngineConfigInfo tensor_core;
  tensor_core.numerical_notes = {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
  EngineConfigInfo down_convert;
  down_convert.numerical_notes = {CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS};
  EngineConfigInfo plain;
  plain.numerical_notes = {CUDNN_NUMERICAL_NOTE_WINOGRAD};
  EngineConfigInfo reduced;
  reduced.numerical_notes = {CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION};
  EngineConfigInfo nondet;
  nondet.numerical_notes = {CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC};

  EXPECT_NE(fp32.engine_filter().reject_reason(tensor_core), "");
  EXPECT_NE(fp32.engine_filter().reject_reason(down_convert), "");
  EXPECT_EQ(fp32.engine_filter().reject_reason(plain), "");
  EXPECT_EQ(tf32.engine_filter().reject_reason(tensor_core), "");
  EXPECT_NE(tf32.engine_filter().reject_reason(down_convert), "");  // never, for any precision
  EXPECT_EQ(tf32.engine_filter().reject_reason(reduced), "");
  EXPECT_EQ(tf32.engine_filter().reject_reason(nondet), "");
  EngineFilter no_reduced;
  no_reduced.allow_reduced_precision_reduction = false;
  EXPECT_NE(no_reduced.reject_reason(reduced), "");
  ConvConfig det = tf32;
  det.deterministic = true;
  EXPECT_NE(det.engine_filter().reject_reason(nondet), "");
  EXPECT_NE(fp32.engine_filter().bits(), tf32.engine_filter().bits());
  EXPECT_NE(det.engine_filter().bits(), tf32.engine_filter().bits());
}

// ---------------------------------------------------------------------------
// Plan-cache keys.
// ---------------------------------------------------------------------------

ConvConfig base_config() {
  ConvConfig c;
  c.shape = {.n = 32, .c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  c.kind = ConvKind::Fprop;
  c.precision = Precision::Fp16;
  c.format = DataFormat::NHWC;
  return c;
}

TEST(PlanKeyTest, EqualConfigsGiveEqualKeys) {
  const PlanKey a = conv_plan_key(base_config(), 91900, 0);
  const PlanKey b = conv_plan_key(base_config(), 91900, 0);
  EXPECT_EQ(a, b);
  EXPECT_EQ(PlanKeyHash{}(a), PlanKeyHash{}(b));
  ConvConfig neg_zero = base_config();
  neg_zero.beta = -0.0F;
  const PlanKey c = conv_plan_key(neg_zero, 91900, 0);
  EXPECT_EQ(a, c);
  EXPECT_EQ(PlanKeyHash{}(a), PlanKeyHash{}(c));
  EXPECT_NE(a.to_string().find("conv_fprop"), std::string::npos);
}

TEST(PlanKeyTest, EveryFieldMatters) {
  const PlanKey base = conv_plan_key(base_config(), 91900, 0);
  std::vector<std::pair<const char*, ConvConfig>> variants;
  auto add = [&](const char* what, auto change) {
    ConvConfig c = base_config();
    change(c);
    variants.emplace_back(what, c);
  };
  add("kind", [](ConvConfig& c) { c.kind = ConvKind::Dgrad; });
  add("precision", [](ConvConfig& c) { c.precision = Precision::Bf16; });
  add("fp32 vs tf32 filter", [](ConvConfig& c) { c.precision = Precision::Fp32; });
  add("layout", [](ConvConfig& c) { c.format = DataFormat::NCHW; });
  add("batch", [](ConvConfig& c) { c.shape.n = 16; });
  add("channels", [](ConvConfig& c) { c.shape.c = 128; });
  add("height", [](ConvConfig& c) { c.shape.h = 28; });
  add("filters", [](ConvConfig& c) { c.shape.k = 128; });
  add("stride", [](ConvConfig& c) { c.shape.stride_h = c.shape.stride_w = 2; });
  add("padding", [](ConvConfig& c) { c.shape.pad_w = 0; });
  add("dilation", [](ConvConfig& c) { c.shape.dilation_h = 2; });
  add("groups", [](ConvConfig& c) { c.shape.groups = 2; });
  add("alignment", [](ConvConfig& c) { c.alignment = 8; });
  add("beta", [](ConvConfig& c) { c.beta = 1.0F; });
  add("alpha", [](ConvConfig& c) { c.alpha = 2.0F; });
  add("deterministic", [](ConvConfig& c) { c.deterministic = true; });
  for (const auto& [what, cfg] : variants) {
    const PlanKey k = conv_plan_key(cfg, 91900, 0);
    EXPECT_NE(k, base) << what;
    EXPECT_NE(PlanKeyHash{}(k), PlanKeyHash{}(base)) << what;
  }
  EXPECT_NE(conv_plan_key(base_config(), 91000, 0), base) << "cuDNN version";
  EXPECT_NE(conv_plan_key(base_config(), 91900, 1), base) << "device";
  // The pair (precision fp32, tf32) shares tensors and differs only by the filter.
  ConvConfig f32 = base_config();
  f32.precision = Precision::Fp32;
  ConvConfig t32 = f32;
  t32.precision = Precision::Tf32;
  EXPECT_NE(conv_plan_key(f32, 91900, 0), conv_plan_key(t32, 91900, 0));
}

TEST(EngineChoiceCacheTest, InsertFindReplace) {
  EngineChoiceCache cache;
  const PlanKey key = conv_plan_key(base_config(), 91900, 0);
  EXPECT_EQ(cache.find(key), nullptr);
  EngineChoice choice;
  choice.global_index = 42;
  choice.knobs = {{CUDNN_KNOB_TYPE_TILE_SIZE, 3}, {CUDNN_KNOB_TYPE_STAGES, 2}};
  cache.insert(key, choice);
  ASSERT_NE(cache.find(key), nullptr);
  EXPECT_EQ(*cache.find(key), choice);
  EXPECT_EQ(cache.find(key)->to_string(), "eng42 k2=3 k14=2");
  choice.global_index = 7;
  cache.insert(key, choice);
  EXPECT_EQ(cache.find(key)->global_index, 7);
  EXPECT_EQ(cache.size(), 1U);
  EXPECT_EQ(cache.entries().size(), 1U);
  EXPECT_EQ(cache.entries().front().first, key);
}

// ---------------------------------------------------------------------------
// FC: the column-major GEMMs reproduce the row-major formulas.
// ---------------------------------------------------------------------------

// D (m×n, column-major, ld) = op(A)·op(B), exactly as cuBLASLt defines it.
std::vector<double> lt_gemm(const FcGemm& g, const std::vector<double>& a,
                            const std::vector<double>& b) {
  std::vector<double> d(static_cast<size_t>(g.d.ld * g.d.cols), 0.0);
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0.0;
      for (int64_t l = 0; l < g.k; ++l) {
        const double av = g.trans_a ? a[static_cast<size_t>(l + i * g.a.ld)]
                                    : a[static_cast<size_t>(i + l * g.a.ld)];
        const double bv = g.trans_b ? b[static_cast<size_t>(j + l * g.b.ld)]
                                    : b[static_cast<size_t>(l + j * g.b.ld)];
        acc += av * bv;
      }
      d[static_cast<size_t>(i + j * g.d.ld)] = acc;
    }
  return d;
}

// BGRADB: Σ over the k dimension of op(B), one value per column of D.
std::vector<double> lt_bgradb(const FcGemm& g, const std::vector<double>& b) {
  std::vector<double> out(static_cast<size_t>(g.n), 0.0);
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t l = 0; l < g.k; ++l)
      out[static_cast<size_t>(j)] += g.trans_b ? b[static_cast<size_t>(j + l * g.b.ld)]
                                               : b[static_cast<size_t>(l + j * g.b.ld)];
  return out;
}

TEST(FcGemmMapping, MatchesRowMajorFormulas) {
  const FcShape s{.batch = 5, .in_features = 7, .out_features = 3};
  const auto N = static_cast<size_t>(s.batch), I = static_cast<size_t>(s.in_features),
             O = static_cast<size_t>(s.out_features);
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> dist(-4, 4);  // small integers: exact sums
  auto fill = [&](size_t n) {
    std::vector<double> v(n);
    for (auto& e : v) e = dist(gen);
    return v;
  };
  const auto x = fill(N * I), w = fill(O * I), dy = fill(N * O);
  auto buffer = [&](FcOperand op) -> const std::vector<double>& {
    switch (op) {
      case FcOperand::X: return x;
      case FcOperand::W: return w;
      case FcOperand::Dy: return dy;
      default: throw std::logic_error(std::string("not an input: ") + to_string(op));
    }
  };

  // Forward: y[n, o] = Σ_i x[n, i]·w[o, i].
  const FcGemm f = fc_gemm(FcPass::Forward, s);
  EXPECT_EQ(f.d.operand, FcOperand::Y);
  EXPECT_EQ(f.d.rows, s.out_features);  // the BIAS epilogue's vector runs along D's rows
  const auto y = lt_gemm(f, buffer(f.a.operand), buffer(f.b.operand));
  for (size_t n = 0; n < N; ++n)
    for (size_t o = 0; o < O; ++o) {
      double want = 0.0;
      for (size_t i = 0; i < I; ++i) want += x[n * I + i] * w[o * I + i];
      EXPECT_EQ(y[n * O + o], want) << "y[" << n << "," << o << "]";  // row-major [N, out]
    }

  // dgrad: dx[n, i] = Σ_o dy[n, o]·w[o, i].
  const FcGemm dg = fc_gemm(FcPass::BackwardData, s);
  EXPECT_EQ(dg.d.operand, FcOperand::Dx);
  const auto dx = lt_gemm(dg, buffer(dg.a.operand), buffer(dg.b.operand));
  for (size_t n = 0; n < N; ++n)
    for (size_t i = 0; i < I; ++i) {
      double want = 0.0;
      for (size_t o = 0; o < O; ++o) want += dy[n * O + o] * w[o * I + i];
      EXPECT_EQ(dx[n * I + i], want) << "dx[" << n << "," << i << "]";
    }

  // wgrad: dw[o, i] = Σ_n dy[n, o]·x[n, i]; BGRADB: db[o] = Σ_n dy[n, o].
  const FcGemm wg = fc_gemm(FcPass::BackwardFilter, s);
  EXPECT_EQ(wg.d.operand, FcOperand::Dw);
  EXPECT_EQ(wg.b.operand, FcOperand::Dy);
  const auto dw = lt_gemm(wg, buffer(wg.a.operand), buffer(wg.b.operand));
  for (size_t o = 0; o < O; ++o)
    for (size_t i = 0; i < I; ++i) {
      double want = 0.0;
      for (size_t n = 0; n < N; ++n) want += dy[n * O + o] * x[n * I + i];
      EXPECT_EQ(dw[o * I + i], want) << "dw[" << o << "," << i << "]";  // row-major [out, in]
    }
  const auto db = lt_bgradb(wg, buffer(wg.b.operand));
  ASSERT_EQ(db.size(), O);
  for (size_t o = 0; o < O; ++o) {
    double want = 0.0;
    for (size_t n = 0; n < N; ++n) want += dy[n * O + o];
    EXPECT_EQ(db[o], want) << "db[" << o << "]";
  }
}

TEST(FcGemmMapping, ShapesAndLeadingDimensions) {
  const FcShape s{.batch = 32, .in_features = 2048, .out_features = 1000};
  const FcGemm f = fc_gemm(FcPass::Forward, s);
  EXPECT_TRUE(f.trans_a);
  EXPECT_FALSE(f.trans_b);
  EXPECT_EQ(f.m, 1000);
  EXPECT_EQ(f.n, 32);
  EXPECT_EQ(f.k, 2048);
  EXPECT_EQ(f.a, (LtMatrix{FcOperand::W, 2048, 1000, 2048}));
  EXPECT_EQ(f.b, (LtMatrix{FcOperand::X, 2048, 32, 2048}));
  EXPECT_EQ(f.d, (LtMatrix{FcOperand::Y, 1000, 32, 1000}));
  const FcGemm w = fc_gemm(FcPass::BackwardFilter, s);
  EXPECT_FALSE(w.trans_a);
  EXPECT_TRUE(w.trans_b);
  EXPECT_EQ(w.k, 32);  // BGRADB reduces over the batch
  EXPECT_THROW(
      (void)fc_gemm(FcPass::Forward, FcShape{.batch = 0, .in_features = 1, .out_features = 1}),
      std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
