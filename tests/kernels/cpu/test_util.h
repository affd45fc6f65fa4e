// Helpers shared by the CPU backend tests: random tensors, layout conversion,
// and a central finite-difference gradient check.
#pragma once

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/layout.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu::testutil {

using models::Shape;

/// Runs each test binary on one OpenMP thread. The tests make thousands of tiny
/// oneDNN calls; under `ctest -j2` on two cores, two processes with two spinning
/// OpenMP threads each make every parallel region wait for a descheduled thread
/// (a 0.2 s test took 25 s). Executable.ThreadCountDoesNotChangeResults runs two.
class SingleThreadEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { omp_set_num_threads(1); }
};
inline ::testing::Environment* const kSingleThread =
    ::testing::AddGlobalTestEnvironment(new SingleThreadEnvironment);

inline std::vector<float> uniform_vector(int64_t n, uint32_t seed, float lo = -1.0F,
                                         float hi = 1.0F) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

/// Values whose magnitude is at least `gap` (so a finite-difference step smaller
/// than gap/2 never crosses zero, the kink of relu).
inline std::vector<float> away_from_zero(int64_t n, uint32_t seed, float gap, float hi = 1.0F) {
  std::vector<float> v = uniform_vector(n, seed, gap, hi);
  std::mt19937 gen(seed + 1);
  for (auto& x : v) {
    if ((gen() & 1U) != 0U) x = -x;
  }
  return v;
}

/// Distinct values spaced `gap` apart in random order (no ties for max pooling).
inline std::vector<float> distinct_values(int64_t n, uint32_t seed, float gap) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = (static_cast<float>(i) - static_cast<float>(n) / 2) * gap;
  std::mt19937 gen(seed);
  std::shuffle(v.begin(), v.end(), gen);
  return v;
}

/// A logical NCHW tensor rewritten in `format`.
inline std::vector<float> to_layout(const std::vector<float>& nchw, Shape s, DataFormat format) {
  std::vector<float> out(nchw.size());
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int w = 0; w < s.w; ++w) {
          out[static_cast<size_t>(element_offset(s, format, n, c, h, w))] =
              nchw[static_cast<size_t>(element_offset(s, DataFormat::NCHW, n, c, h, w))];
        }
  return out;
}

/// A tensor in `format` rewritten in logical NCHW order.
inline std::vector<float> from_layout(const std::vector<float>& data, Shape s, DataFormat format) {
  std::vector<float> out(data.size());
  for (int n = 0; n < s.n; ++n)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int w = 0; w < s.w; ++w) {
          out[static_cast<size_t>(element_offset(s, DataFormat::NCHW, n, c, h, w))] =
              data[static_cast<size_t>(element_offset(s, format, n, c, h, w))];
        }
  return out;
}

/// Σ a·b accumulated in double: the scalar objective L = Σ out·R of the checks.
inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

inline void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                            float tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const float scale = std::max(1.0F, std::fabs(expected[i]));
    if (!(std::fabs(actual[i] - expected[i]) <= tolerance * scale) && reported++ < 5) {
      ADD_FAILURE() << what << " [" << i << "]: got " << actual[i] << ", expected " << expected[i];
    }
  }
}

/// Central finite differences: step h, and a mismatch is reported when
/// |fd − analytic| > rtol·max(|fd|, |analytic|) + atol·max_i |analytic_i|.
/// The objective is evaluated from fp32 outputs summed in double; with h = 1e-2
/// and O(1) tensors its rounding contributes about 1e-4 to fd, well inside
/// rtol = 1e-2 and atol = 1e-3 (relative to the largest gradient). Ops that are
/// piecewise linear must be given inputs at least 2h from their kinks.
struct FdOptions {
  float step = 1e-2F;
  double rtol = 1e-2;
  double atol = 1e-3;
  /// Check at most this many elements (spread evenly) of a large tensor.
  int64_t max_checks = 400;
};

/// Checks `analytic` = dL/dx against central differences of `objective`
/// (which reads `x`); `x` is restored after each probe.
inline void expect_gradient(const std::function<double()>& objective, std::vector<float>& x,
                            const std::vector<float>& analytic, const std::string& what,
                            FdOptions opt = {}) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double scale = 0.0;
  for (float g : analytic) scale = std::max(scale, static_cast<double>(std::fabs(g)));
  const auto n = static_cast<int64_t>(x.size());
  const int64_t stride = std::max<int64_t>(1, n / opt.max_checks);
  int reported = 0;
  for (int64_t i = 0; i < n; i += stride) {
    const auto k = static_cast<size_t>(i);
    const float saved = x[k];
    x[k] = saved + opt.step;
    const double up = objective();
    x[k] = saved - opt.step;
    const double down = objective();
    x[k] = saved;
    // The actual step is what fp32 could represent: (saved ± h) rounded.
    const double h2 = static_cast<double>(saved + opt.step) - static_cast<double>(saved - opt.step);
    const double fd = (up - down) / h2;
    const double an = analytic[k];
    const double tol = opt.rtol * std::max(std::fabs(fd), std::fabs(an)) + opt.atol * scale;
    if (!(std::fabs(fd - an) <= tol) && reported++ < 5) {
      ADD_FAILURE() << what << " [" << i << "]: finite difference " << fd << ", backward " << an
                    << " (tolerance " << tol << ")";
    }
  }
}

inline const char* format_name(const ::testing::TestParamInfo<DataFormat>& info) {
  return info.param == DataFormat::NHWC ? "NHWC" : "NCHW";
}

}  // namespace cnnbench::kernels::cpu::testutil
