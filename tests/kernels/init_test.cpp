// kernels/init: the statistics of every Init kind on large tensors, per-slot
// determinism, and synthetic batches holding the same images in both layouts.
#include "kernels/init.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace cnnbench::kernels {
namespace {

using models::Init;
using models::ParamSlot;

ParamSlot slot(Init::Kind kind, int64_t count, int64_t offset, float std = 0.0F, int64_t fan_in = 0,
               int64_t fan_out = 0) {
  ParamSlot s;
  s.dims = {count};
  s.count = count;
  s.offset = offset;
  s.init = Init{kind, std};
  s.fan_in = fan_in;
  s.fan_out = fan_out;
  return s;
}

struct Moments {
  double mean = 0, std = 0, min = 0, max = 0;
};

Moments moments(const float* x, int64_t n) {
  Moments m{0, 0, x[0], x[0]};
  for (int64_t i = 0; i < n; ++i) {
    m.mean += x[i];
    m.min = std::min(m.min, static_cast<double>(x[i]));
    m.max = std::max(m.max, static_cast<double>(x[i]));
  }
  m.mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) m.std += (x[i] - m.mean) * (x[i] - m.mean);
  m.std = std::sqrt(m.std / static_cast<double>(n - 1));
  return m;
}

constexpr int64_t kN = 200000;

/// Checks mean and standard deviation of n draws: the sample mean's own standard
/// deviation is σ/√n, so 5σ/√n bounds it; the sample std is within 1% for n = 2·10⁵
/// (its relative standard error is ≈ 1/√(2n) ≈ 0.16%).
void expect_moments(const Moments& m, double mean, double std) {
  EXPECT_NEAR(m.mean, mean, 5 * std / std::sqrt(static_cast<double>(kN)));
  EXPECT_NEAR(m.std, std, 0.01 * std);
}

TEST(InitParameters, EveryKindHasItsDistribution) {
  const std::vector<ParamSlot> layout{
      slot(Init::Kind::Zeros, kN, 0),
      slot(Init::Kind::Ones, kN, kN),
      slot(Init::Kind::KaimingNormalFanOut, kN, 2 * kN, 0, 0, 64 * 9),
      slot(Init::Kind::DefaultUniform, kN, 3 * kN, 0, 27),
      slot(Init::Kind::DefaultBiasUniform, kN, 4 * kN, 0, 2048),
      slot(Init::Kind::Normal, kN, 5 * kN, 0.01F),
      slot(Init::Kind::TruncatedNormal, kN, 6 * kN, 0.1F),
      slot(Init::Kind::TruncatedNormal, kN, 7 * kN, 1.5F),
  };
  std::vector<float> flat(8 * kN, -1.0F);
  init_parameters(layout, 1234, flat.data());
  const float* p = flat.data();

  EXPECT_TRUE(std::all_of(p, p + kN, [](float v) { return v == 0.0F; }));
  EXPECT_TRUE(std::all_of(p + kN, p + 2 * kN, [](float v) { return v == 1.0F; }));

  expect_moments(moments(p + 2 * kN, kN), 0.0, std::sqrt(2.0 / (64 * 9)));

  for (const auto& [offset, fan_in] : {std::pair{3 * kN, 27}, std::pair{4 * kN, 2048}}) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
    const Moments m = moments(p + offset, kN);
    expect_moments(m, 0.0, bound / std::sqrt(3.0));  // U(−b, b) has σ = b/√3
    EXPECT_GE(m.min, -bound);
    EXPECT_LE(m.max, bound);
    EXPECT_LT(m.min, -0.999 * bound);  // the whole interval is reached
    EXPECT_GT(m.max, 0.999 * bound);
  }

  expect_moments(moments(p + 5 * kN, kN), 0.0, 0.01);
  expect_moments(moments(p + 6 * kN, kN), 0.0, 0.1);  // truncation at ±20σ changes nothing

  // σ = 1.5 truncated to [−2, 2]: Var = σ²(1 − 2βφ(β)/(2Φ(β) − 1)), β = 2/σ.
  const double beta = 2.0 / 1.5;
  const double phi = std::exp(-beta * beta / 2) / std::sqrt(2 * std::numbers::pi);
  const double mass = std::erf(beta / std::numbers::sqrt2);  // 2Φ(β) − 1
  const Moments t = moments(p + 7 * kN, kN);
  expect_moments(t, 0.0, 1.5 * std::sqrt(1.0 - 2.0 * beta * phi / mass));
  EXPECT_GE(t.min, -2.0);
  EXPECT_LE(t.max, 2.0);
  EXPECT_LT(t.min, -1.99);
}

TEST(InitParameters, DeterministicPerSlotAndSeed) {
  std::vector<ParamSlot> layout{slot(Init::Kind::KaimingNormalFanOut, 1000, 0, 0, 0, 10),
                                slot(Init::Kind::DefaultUniform, 500, 1000, 0, 10)};
  std::vector<float> a(1500), b(1500), c(1500);
  init_parameters(layout, 7, a.data());
  init_parameters(layout, 7, b.data());
  init_parameters(layout, 8, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);

  // Slot 1's values depend only on (seed, 1): a different slot 0 leaves them unchanged.
  std::vector<ParamSlot> other{slot(Init::Kind::Normal, 300, 0, 0.5F),
                               slot(Init::Kind::DefaultUniform, 500, 300, 0, 10)};
  std::vector<float> d(800);
  init_parameters(other, 7, d.data());
  EXPECT_TRUE(std::equal(d.begin() + 300, d.end(), a.begin() + 1000));
}

TEST(InitParameters, RejectsMissingFan) {
  const std::vector<ParamSlot> layout{slot(Init::Kind::DefaultUniform, 10, 0)};
  std::vector<float> flat(10);
  EXPECT_THROW(init_parameters(layout, 1, flat.data()), std::invalid_argument);
}

TEST(RandomNormal, ConsecutiveElementsAreIndependentStandardNormals) {
  const uint64_t key = derive_key(99, 1);
  std::vector<float> x(kN);
  for (int64_t i = 0; i < kN; ++i)
    x[static_cast<size_t>(i)] = static_cast<float>(random_normal(key, static_cast<uint64_t>(i)));
  expect_moments(moments(x.data(), kN), 0.0, 1.0);
  // Correlation of the cosine/sine pair (2k, 2k+1) and of neighbouring pairs.
  double pair = 0, next = 0;
  for (int64_t i = 0; i + 2 < kN; i += 2) {
    pair += static_cast<double>(x[static_cast<size_t>(i)]) * x[static_cast<size_t>(i + 1)];
    next += static_cast<double>(x[static_cast<size_t>(i)]) * x[static_cast<size_t>(i + 2)];
  }
  EXPECT_NEAR(pair / (kN / 2.0), 0.0, 5 / std::sqrt(kN / 2.0));
  EXPECT_NEAR(next / (kN / 2.0), 0.0, 5 / std::sqrt(kN / 2.0));
}

TEST(SyntheticBatch, SameImagesInBothLayouts) {
  const int n = 3, c = 3, h = 5, w = 7, classes = 10;
  std::vector<float> nchw(n * c * h * w), nhwc(nchw.size());
  std::vector<int32_t> l1(n), l2(n);
  synthetic_batch(5, n, c, h, w, DataFormat::NCHW, classes, nchw.data(), l1.data());
  synthetic_batch(5, n, c, h, w, DataFormat::NHWC, classes, nhwc.data(), l2.data());
  EXPECT_EQ(l1, l2);
  for (int b = 0; b < n; ++b)
    for (int ch = 0; ch < c; ++ch)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          ASSERT_EQ(nchw[static_cast<size_t>(((b * c + ch) * h + y) * w + x)],
                    nhwc[static_cast<size_t>(((b * h + y) * w + x) * c + ch)]);
        }
  std::vector<float> again(nchw.size());
  synthetic_batch(5, n, c, h, w, DataFormat::NCHW, classes, again.data(), l2.data());
  EXPECT_EQ(again, nchw);
  synthetic_batch(6, n, c, h, w, DataFormat::NCHW, classes, again.data(), l2.data());
  EXPECT_NE(again, nchw);
}

TEST(SyntheticBatch, ImagesAreStandardNormalAndLabelsUniform) {
  const int n = 4000, c = 1, h = 5, w = 10, classes = 10;
  std::vector<float> images(static_cast<size_t>(n) * c * h * w);
  std::vector<int32_t> labels(n);
  synthetic_batch(11, n, c, h, w, DataFormat::NHWC, classes, images.data(), labels.data());
  const Moments m = moments(images.data(), kN);
  expect_moments(m, 0.0, 1.0);
  std::vector<int> histogram(classes);
  for (int32_t l : labels) {
    ASSERT_GE(l, 0);
    ASSERT_LT(l, classes);
    ++histogram[static_cast<size_t>(l)];
  }
  // 4000 draws over 10 classes: 400 ± 19 (binomial σ) per class; ±5σ.
  for (int count : histogram) EXPECT_NEAR(count, 400, 95);
  EXPECT_THROW(
      synthetic_batch(1, 0, c, h, w, DataFormat::NHWC, classes, images.data(), labels.data()),
      std::invalid_argument);
  EXPECT_THROW(synthetic_batch(1, n, c, h, w, DataFormat::NHWC, 0, images.data(), labels.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::kernels
