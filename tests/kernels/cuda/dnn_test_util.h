// Helpers shared by the cuDNN convolution and cuBLASLt FC tests: random inputs,
// rounding to the storage type, device upload/download, and the comparison
// against fp64 CPU references with per-precision tolerances.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::kernels::cuda::testing {

/// A seed from the system's entropy source, so that every run sees fresh
/// inputs; tests show it with SCOPED_TRACE so that a failure can be replayed.
inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32U) ^ uint64_t { rd() };
}

/// n values uniform in [lo, hi), reproducible from `seed`.
inline std::vector<double> random_values(size_t n, uint64_t seed, double lo = -1.0,
                                         double hi = 1.0) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

/// `v` rounded to nearest-even in `dtype` (what the device will hold).
inline double round_to(DType dtype, double v) {
  const auto f = static_cast<float>(v);
  switch (dtype) {
    case DType::F16: return static_cast<double>(__half2float(__float2half_rn(f)));
    case DType::BF16: return static_cast<double>(__bfloat162float(__float2bfloat16_rn(f)));
    default: return static_cast<double>(f);
  }
}

inline void round_all(DType dtype, std::vector<double>& v) {
  for (auto& x : v) x = round_to(dtype, x);
}

/// Bytes of `dtype` elements: element i of `values` at storage index offset(i).
inline std::vector<unsigned char> encode(DType dtype, const std::vector<double>& values,
                                         const std::function<int64_t(size_t)>& offset,
                                         int64_t storage_elements) {
  const auto esize = static_cast<size_t>(dtype_size(dtype));
  std::vector<unsigned char> bytes(static_cast<size_t>(storage_elements) * esize, 0);
  for (size_t i = 0; i < values.size(); ++i) {
    unsigned char* dst = bytes.data() + static_cast<size_t>(offset(i)) * esize;
    const auto f = static_cast<float>(values[i]);
    if (dtype == DType::F16) {
      const __half h = __float2half_rn(f);
      std::memcpy(dst, &h, 2);
    } else if (dtype == DType::BF16) {
      const __nv_bfloat16 b = __float2bfloat16_rn(f);
      std::memcpy(dst, &b, 2);
    } else {
      std::memcpy(dst, &f, 4);
    }
  }
  return bytes;
}

/// Inverse of encode: logical element i read from storage index offset(i).
inline std::vector<double> decode(DType dtype, const std::vector<unsigned char>& bytes,
                                  size_t count, const std::function<int64_t(size_t)>& offset) {
  const auto esize = static_cast<size_t>(dtype_size(dtype));
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* src = bytes.data() + static_cast<size_t>(offset(i)) * esize;
    if (dtype == DType::F16) {
      __half h;
      std::memcpy(&h, src, 2);
      values[i] = static_cast<double>(__half2float(h));
    } else if (dtype == DType::BF16) {
      __nv_bfloat16 b;
      std::memcpy(&b, src, 2);
      values[i] = static_cast<double>(__bfloat162float(b));
    } else {
      float f = 0.0F;
      std::memcpy(&f, src, 4);
      values[i] = static_cast<double>(f);
    }
  }
  return values;
}

inline std::function<int64_t(size_t)> identity_offset() {
  return [](size_t i) { return static_cast<int64_t>(i); };
}

inline DeviceBuffer upload(const std::vector<unsigned char>& bytes, const std::string& what) {
  DeviceBuffer buf(static_cast<int64_t>(bytes.size()), what);
  CNNBENCH_CHECK_CUDA(cudaMemcpy(buf.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  return buf;
}

inline std::vector<unsigned char> download(const DeviceBuffer& buf) {
  std::vector<unsigned char> bytes(static_cast<size_t>(buf.bytes()));
  CNNBENCH_CHECK_CUDA(cudaMemcpy(bytes.data(), buf.get(), bytes.size(), cudaMemcpyDeviceToHost));
  return bytes;
}

/// Tolerances against an fp64 reference computed from the already-rounded
/// inputs, so input rounding is not an error source; what remains is the
/// engine's arithmetic and the rounding of the output.
///  - `elementwise`: bound on |got − ref| / Σ|aᵢ·bᵢ| per output, where Σ|aᵢ·bᵢ| is
///    the sum of the absolute products that make the output. For a
///    dot product this bounds every summation order.
///  - `l2`: bound on ‖got − ref‖₂ / ‖ref‖₂ over the tensor, which also catches
///    one missing or extra term per output (its size is ≈ 1/√terms of the norm).
struct Tolerance {
  double elementwise = 0.0;
  double l2 = 0.0;
};

/// fp32: FLOAT math accumulates with unit roundoff 2⁻²⁴ ≈ 6e-8, so even FFT or
///   Winograd engines stay far below 1e-4 per output and 1e-5 overall; TF32
///   (2⁻¹¹ per input) would exceed the dedicated TF32 checks.
/// tf32: inputs rounded or truncated to 10 mantissa bits: ≤ 2·2⁻¹⁰ ≈ 2e-3 per
///   product, so 5e-3 per output (margin for Winograd transforms) and 2e-3 overall.
/// fp16: FLOAT accumulation (split-K partial sums may be added in fp16, as
///   engines with REDUCED_PRECISION_REDUCTION do), output rounded to 11
///   significant bits (2⁻¹¹ ≈ 4.9e-4 relative); 1e-2 per output leaves room for
///   those partial sums and for transforms held in fp16, 2e-3 overall.
/// bf16: output rounded to 8 significant bits (2⁻⁸ ≈ 3.9e-3 relative), so 1e-2
///   per output and 1e-2 overall.
inline Tolerance tolerance(Precision p) {
  switch (p) {
    case Precision::Fp32: return {1e-4, 1e-5};
    case Precision::Tf32: return {5e-3, 2e-3};
    case Precision::Fp16: return {1e-2, 2e-3};
    case Precision::Bf16: return {1e-2, 1e-2};
  }
  return {};
}

/// Compares `got` with `want` under `tol`; `where(i)` names element i (its
/// logical index) in the failure message.
inline ::testing::AssertionResult compare(const std::vector<double>& got,
                                          const std::vector<double>& want,
                                          const std::vector<double>& abs_sum, Tolerance tol,
                                          const std::function<std::string(size_t)>& where) {
  if (got.size() != want.size() || abs_sum.size() != want.size()) {
    return ::testing::AssertionFailure()
           << "size mismatch: got " << got.size() << ", want " << want.size();
  }
  double worst = 0.0;
  size_t worst_i = 0;
  double err2 = 0.0;
  double ref2 = 0.0;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    if (!std::isfinite(got[i])) {
      return ::testing::AssertionFailure()
             << "non-finite result " << got[i] << " at " << where(i) << " (want " << want[i] << ")";
    }
    const double scale = abs_sum[i] > 0.0 ? abs_sum[i] : 1e-30;
    const double ratio = err / scale;
    if (err > tol.elementwise * abs_sum[i] + 1e-30) ++bad;
    if (ratio > worst) {
      worst = ratio;
      worst_i = i;
    }
    err2 += err * err;
    ref2 += want[i] * want[i];
  }
  const double l2 = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (bad > 0 || l2 > tol.l2) {
    return ::testing::AssertionFailure()
           << bad << " of " << got.size() << " elements beyond " << tol.elementwise
           << " x sum|terms|; worst " << where(worst_i) << ": got " << got[worst_i] << ", want "
           << want[worst_i] << ", sum|terms| " << abs_sum[worst_i] << " (ratio " << worst
           << "); relative L2 error " << l2 << " (limit " << tol.l2 << ")";
  }
  return ::testing::AssertionSuccess() << "worst ratio " << worst << ", relative L2 " << l2;
}

}  // namespace cnnbench::kernels::cuda::testing
