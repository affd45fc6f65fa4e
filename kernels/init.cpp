#include "kernels/init.h"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

namespace cnnbench::kernels {
namespace {

using Kind = models::Init::Kind;

/// Uniform double in [0, 1) from the top 53 bits.
double uniform53(uint64_t bits) { return static_cast<double>(bits >> 11U) * 0x1.0p-53; }

/// Box–Muller on uniforms 2·pair and 2·pair + 1: the standard normals of
/// elements 2·pair (cosine) and 2·pair + 1 (sine), as random_normal defines them.
std::pair<double, double> normal_pair(uint64_t key, uint64_t pair) {
  const double u1 = 1.0 - uniform53(random_bits(key, 2 * pair));  // (0, 1]: log(u1) is finite
  const double u2 = uniform53(random_bits(key, 2 * pair + 1));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  return {r * std::cos(theta), r * std::sin(theta)};
}

/// out[i] = scale · random_normal(key, i) for i < n, a pair of elements per
/// Box–Muller evaluation, in parallel where OpenMP is available (the values do
/// not depend on the threads).
void fill_normal(uint64_t key, double scale, int64_t n, float* out) {
  const int64_t pairs = (n + 1) / 2;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
  for (int64_t p = 0; p < pairs; ++p) {
    const auto [a, b] = normal_pair(key, static_cast<uint64_t>(p));
    out[2 * p] = static_cast<float>(scale * a);
    if (2 * p + 1 < n) out[2 * p + 1] = static_cast<float>(scale * b);
  }
}

double fan_bound(const models::ParamSlot& s, int64_t fan, const char* which) {
  if (fan <= 0) {
    throw std::invalid_argument("init_parameters: parameter slot at offset " +
                                std::to_string(s.offset) + " needs a positive " + which + " (got " +
                                std::to_string(fan) + ")");
  }
  return static_cast<double>(fan);
}

void fill_slot(const models::ParamSlot& s, uint64_t key, float* out) {
  const int64_t n = s.count;
  switch (s.init.kind) {
    case Kind::Zeros:
      for (int64_t i = 0; i < n; ++i) out[i] = 0.0F;
      return;
    case Kind::Ones:
      for (int64_t i = 0; i < n; ++i) out[i] = 1.0F;
      return;
    case Kind::KaimingNormalFanOut: {
      fill_normal(key, std::sqrt(2.0 / fan_bound(s, s.fan_out, "fan_out")), n, out);
      return;
    }
    case Kind::DefaultUniform:
    case Kind::DefaultBiasUniform: {
      const double bound = 1.0 / std::sqrt(fan_bound(s, s.fan_in, "fan_in"));
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
      for (int64_t i = 0; i < n; ++i) {
        const double u = uniform53(random_bits(key, static_cast<uint64_t>(i)));
        out[i] = static_cast<float>((2.0 * u - 1.0) * bound);
      }
      return;
    }
    case Kind::Normal:
      fill_normal(key, s.init.std, n, out);
      return;
    case Kind::TruncatedNormal: {
      constexpr double kLow = -2.0, kHigh = 2.0;
      // Acceptance is P(|N(0, std²)| ≤ 2): 1 for torchvision's std ≤ 0.1, and
      // still 0.16 at std = 10, so the attempt limit is never reached in practice.
      constexpr uint64_t kMaxAttempts = 1000;
      const double sigma = s.init.std;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
      for (int64_t i = 0; i < n; ++i) {
        double v = kHigh + 1.0;
        for (uint64_t attempt = 0; attempt < kMaxAttempts && !(v >= kLow && v <= kHigh);
             ++attempt) {
          v = sigma * random_normal(derive_key(key, attempt), static_cast<uint64_t>(i));
        }
        out[i] = static_cast<float>(std::fmin(std::fmax(v, kLow), kHigh));
      }
      return;
    }
  }
  throw std::invalid_argument("init_parameters: unknown Init kind");
}

}  // namespace

double random_normal(uint64_t key, uint64_t index) {
  const auto [even, odd] = normal_pair(key, index / 2);
  return (index & 1U) == 0 ? even : odd;
}

void init_parameters(const std::vector<models::ParamSlot>& layout, uint64_t seed, float* flat) {
  for (size_t k = 0; k < layout.size(); ++k) {
    fill_slot(layout[k], derive_key(seed, k), flat + layout[k].offset);
  }
}

void synthetic_batch(uint64_t seed, int n, int c, int h, int w, DataFormat format, int num_classes,
                     float* images, int32_t* labels) {
  if (n < 1 || c < 1 || h < 1 || w < 1 || num_classes < 1) {
    throw std::invalid_argument(
        "synthetic_batch: sizes and num_classes must be positive (n=" + std::to_string(n) +
        ", c=" + std::to_string(c) + ", h=" + std::to_string(h) + ", w=" + std::to_string(w) +
        ", num_classes=" + std::to_string(num_classes) + ")");
  }
  const uint64_t image_key = derive_key(seed, kImageStream);
  const int64_t hw = int64_t{h} * w;
  const int64_t total = int64_t{n} * c * hw;
  if (format == DataFormat::NCHW) {
    fill_normal(image_key, 1.0, total, images);
  } else {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t logical = 0; logical < total; ++logical) {
      const int64_t b = logical / (c * hw);
      const int64_t ch = logical / hw % c;
      const int64_t p = logical % hw;
      images[(b * hw + p) * c + ch] =
          static_cast<float>(random_normal(image_key, static_cast<uint64_t>(logical)));
    }
  }
  const uint64_t label_key = derive_key(seed, kLabelStream);
  for (int64_t b = 0; b < n; ++b) {
    const uint64_t bits = random_bits(label_key, static_cast<uint64_t>(b)) >> 32U;
    labels[b] = static_cast<int32_t>((bits * static_cast<uint64_t>(num_classes)) >> 32U);
  }
}

}  // namespace cnnbench::kernels
