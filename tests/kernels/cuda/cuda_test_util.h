// Helpers for the GPU tests of our own kernels: skipping without a device,
// device buffers from host vectors, poisoning outputs, fp16/bf16 conversions on
// the host, fresh random inputs, tolerance checks against fp64 references, and
// the NHWC/NCHW index of a logical element.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/resources.h"
#include "models/graph.h"

/// Skips the current test, with the runtime's reason, when no CUDA device is usable.
#define CNNBENCH_SKIP_WITHOUT_CUDA()                                                \
  do {                                                                              \
    if (const auto cnnbench_reason_ = ::cnnbench::kernels::cuda::cuda_unavailable_reason()) \
      GTEST_SKIP() << *cnnbench_reason_;                                            \
  } while (0)

namespace cnnbench::kernels::cuda::test_util {

using StorageTypes = ::testing::Types<float, __half, __nv_bfloat16>;

/// Names typed tests after their storage type: .../float, .../half, .../bfloat16.
struct StorageTypeNames {
  template <typename T>
  static std::string GetName(int /*index*/) {
    if constexpr (std::is_same_v<T, float>) {
      return "float";
    } else if constexpr (std::is_same_v<T, __half>) {
      return "half";
    } else {
      return "bfloat16";
    }
  }
};

// ---- host conversions ------------------------------------------------------

inline float to_f(float v) { return v; }
inline float to_f(__half v) { return __half2float(v); }
inline float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Rounds to nearest even, as the kernels' stores do.
template <typename T>
T from_f(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>);
    return __float2bfloat16_rn(v);
  }
}

/// The value a double rounds to when stored as T (through fp32, as the kernels do).
template <typename T>
double round_as(double v) {
  return static_cast<double>(to_f(from_f<T>(static_cast<float>(v))));
}

template <typename T>
std::vector<double> as_double(const std::vector<T>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(to_f(v[i]));
  return out;
}

/// Relative tolerance for a result computed in fp32 and stored as T: fp32
/// results allow 1e-5 (fp32 unit roundoff 6e-8 times the accumulation lengths
/// used here, with margin); fp16 and bf16 results are dominated by the final
/// rounding to T (unit roundoff 2^-11 ≈ 4.9e-4 and 2^-8 ≈ 3.9e-3), and fp32
/// differences in the math may move a value across one rounding boundary, so
/// 2e-3 and 1e-2 (about 4 and 2.5 units in the last place).
template <typename T>
constexpr double kRtol = std::is_same_v<T, float> ? 1e-5 : (std::is_same_v<T, __half> ? 2e-3 : 1e-2);

// ---- randomness -------------------------------------------------------------

/// A seed from the system's entropy source: every run sees fresh inputs.
/// Tests print it with SCOPED_TRACE so that a failure can be replayed.
inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) ^ uint64_t{rd()};
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(gen_); }
  float normal() { return std::normal_distribution<float>(0.0F, 1.0F)(gen_); }
  int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen_); }

 private:
  std::mt19937_64 gen_;
};

template <typename T>
std::vector<T> random_uniform(size_t n, Rng& rng, float lo, float hi) {
  std::vector<T> v(n);
  for (auto& e : v) e = from_f<T>(rng.uniform(lo, hi));
  return v;
}

template <typename T>
std::vector<T> random_normal(size_t n, Rng& rng, float mean = 0.0F, float stddev = 1.0F) {
  std::vector<T> v(n);
  for (auto& e : v) e = from_f<T>(mean + stddev * rng.normal());
  return v;
}

// ---- device buffers ------------------------------------------------------------

template <typename T>
DeviceBuffer to_device(const std::vector<T>& host) {
  DeviceBuffer d(static_cast<int64_t>(std::max<size_t>(1, host.size()) * sizeof(T)), "test buffer");
  if (!host.empty())
    CNNBENCH_CHECK_CUDA(cudaMemcpy(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

/// A device buffer of `count` elements of T filled with 0xFF bytes: NaN for
/// float, fp16 and bf16, so any element a kernel fails to write shows as NaN.
template <typename T>
DeviceBuffer poisoned(size_t count) {
  DeviceBuffer d(static_cast<int64_t>(std::max<size_t>(1, count) * sizeof(T)), "test output");
  CNNBENCH_CHECK_CUDA(cudaMemset(d.get(), 0xFF, static_cast<size_t>(d.bytes())));
  return d;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer& d, size_t count) {
  std::vector<T> host(count);
  if (count > 0)
    CNNBENCH_CHECK_CUDA(cudaMemcpy(host.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

// ---- comparisons -----------------------------------------------------------------

inline double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (const double e : v) m = std::max(m, std::abs(e));
  return m;
}

/// Expects |got[i] − ref[i]| <= rtol·|ref[i]| + atol for every i (a NaN in got,
/// such as a poisoned element never written, always fails). Reports how many
/// elements failed and the first few.
template <typename T>
void expect_close(const std::vector<T>& got, const std::vector<double>& ref, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(to_f(got[i]));
    const double tol = rtol * std::abs(ref[i]) + atol;
    if (!(std::abs(g - ref[i]) <= tol)) {
      if (bad < 5) first << "\n  [" << i << "] got " << g << ", expected " << ref[i] << " (tol " << tol << ")";
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0U) << what << ": " << bad << " of " << got.size() << " elements out of tolerance"
                     << first.str();
}

/// Per-element tolerances: |got[i] − ref[i]| <= tol[i].
template <typename T>
void expect_close_each(const std::vector<T>& got, const std::vector<double>& ref,
                       const std::vector<double>& tol, const std::string& what) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  ASSERT_EQ(tol.size(), ref.size()) << what;
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(to_f(got[i]));
    if (!(std::abs(g - ref[i]) <= tol[i])) {
      if (bad < 5) first << "\n  [" << i << "] got " << g << ", expected " << ref[i] << " (tol " << tol[i] << ")";
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0U) << what << ": " << bad << " of " << got.size() << " elements out of tolerance"
                     << first.str();
}

/// Expects bitwise equality of two buffers of T (NaN patterns included).
template <typename T>
void expect_bitwise_equal(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  std::ostringstream first;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      if (bad < 5) first << "\n  [" << i << "] got " << to_f(got[i]) << ", expected " << to_f(want[i]);
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0U) << what << ": " << bad << " of " << got.size() << " elements differ" << first.str();
}

// ---- layouts -------------------------------------------------------------------------

/// Memory index of logical element (n, c, h, w) of a tensor with dims `s`.
inline int64_t index_of(DataFormat f, const models::Shape& s, int n, int c, int h, int w) {
  if (f == DataFormat::NHWC) return ((int64_t{n} * s.h + h) * s.w + w) * s.c + c;
  return ((int64_t{n} * s.c + c) * s.h + h) * s.w + w;
}

/// Channel of the element at memory index i.
inline int channel_of(DataFormat f, const models::Shape& s, int64_t i) {
  if (f == DataFormat::NHWC) return static_cast<int>(i % s.c);
  return static_cast<int>((i / (int64_t{s.h} * s.w)) % s.c);
}

inline std::string describe(const models::Shape& s, DataFormat f) {
  return std::string(f == DataFormat::NHWC ? "NHWC" : "NCHW") + " (N=" + std::to_string(s.n) + ", C=" + std::to_string(s.c) +
         ", H=" + std::to_string(s.h) + ", W=" + std::to_string(s.w) + ")";
}

}  // namespace cnnbench::kernels::cuda::test_util
