// kernels/cuda/batchnorm.cu against an fp64 CPU reference of torch.nn.BatchNorm2d
// (+ residual add + ReLU), on fresh random inputs, in both layouts and all
// storage types.
#include "kernels/cuda/batchnorm.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using test_util::as_double;
using test_util::channel_of;
using test_util::describe;
using test_util::expect_bitwise_equal;
using test_util::expect_close;
using test_util::expect_close_each;
using test_util::from_f;
using test_util::kRtol;
using test_util::max_abs;
using test_util::poisoned;
using test_util::Rng;
using test_util::to_device;
using test_util::to_f;
using test_util::to_host;

constexpr models::BatchNormAttrs kAttrs{.eps = 1e-5F, .momentum = 0.1F};
/// Statistics are fp32 results whatever T is (the inputs are the same values).
/// Means carry an absolute error of a few fp32 roundings of the data's spread;
/// variances and sums a relative error of about 1e-6 (Welford / pairwise
/// accumulation over up to 1.6M values): 1e-5 leaves a margin of ten.
constexpr double kStatRtol = 1e-5;

/// Shapes covering: odd sizes, channel counts that are not multiples of 8 (the
/// one-element path), several blocks per row of channels (C = 288 splits into
/// 2 × 18 vectors for 16-bit types), many block rows (multi-block reductions),
/// and N·H·W large enough that the reduction hits its cap of 1024 partials.
const std::vector<models::Shape> kShapes = {
    {2, 3, 5, 7},    {1, 8, 1, 2},      {3, 24, 9, 11},    {2, 40, 17, 13},
    {2, 288, 9, 9},  {4, 256, 14, 14},  {16, 64, 56, 56},  {32, 3, 224, 224},
};
const DataFormat kFormats[] = {DataFormat::NHWC, DataFormat::NCHW};

struct Inputs {
  std::vector<float> gamma, beta, running_mean, running_var;
};

Inputs random_params(int c, Rng& rng) {
  Inputs p;
  for (int i = 0; i < c; ++i) {
    p.gamma.push_back(rng.uniform(0.5F, 1.5F));
    p.beta.push_back(rng.uniform(-0.5F, 0.5F));
    p.running_mean.push_back(rng.uniform(-1.0F, 1.0F));
    p.running_var.push_back(rng.uniform(0.5F, 2.0F));
  }
  return p;
}

/// x with a different mean (offset + U(−2, 2)) and spread (U(0.25, 2)) per channel.
template <typename T>
std::vector<T> random_activations(const models::Shape& s, DataFormat f, float offset, Rng& rng) {
  std::vector<float> mean(s.c), spread(s.c);
  for (int c = 0; c < s.c; ++c) {
    mean[c] = offset + rng.uniform(-2.0F, 2.0F);
    spread[c] = rng.uniform(0.25F, 2.0F);
  }
  std::vector<T> x(static_cast<size_t>(s.elements()));
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = channel_of(f, s, static_cast<int64_t>(i));
    x[i] = from_f<T>(mean[c] + spread[c] * rng.normal());
  }
  return x;
}

struct Moments {
  std::vector<double> mean, var;  // biased variance
};

Moments reference_moments(const std::vector<double>& x, const models::Shape& s, DataFormat f) {
  const double m = static_cast<double>(s.n) * s.h * s.w;
  Moments r{std::vector<double>(s.c, 0.0), std::vector<double>(s.c, 0.0)};
  for (size_t i = 0; i < x.size(); ++i) r.mean[channel_of(f, s, static_cast<int64_t>(i))] += x[i];
  for (auto& v : r.mean) v /= m;
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = channel_of(f, s, static_cast<int64_t>(i));
    r.var[c] += (x[i] - r.mean[c]) * (x[i] - r.mean[c]);
  }
  for (auto& v : r.var) v /= m;
  return r;
}

/// y = relu?(gamma·(x − mean)/sqrt(var + eps) + beta [+ z]).
std::vector<double> reference_normalize(const std::vector<double>& x, const std::vector<double>* z,
                                        const models::Shape& s, DataFormat f,
                                        const std::vector<double>& mean,
                                        const std::vector<double>& var, const Inputs& p, bool relu) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = channel_of(f, s, static_cast<int64_t>(i));
    double v = p.gamma[c] * (x[i] - mean[c]) / std::sqrt(var[c] + kAttrs.eps) + p.beta[c];
    if (z != nullptr) v += (*z)[i];
    y[i] = relu ? std::max(v, 0.0) : v;
  }
  return y;
}

template <typename T>
void check_forward_training(const models::Shape& s, DataFormat f, bool add, bool relu, float offset,
                            Rng& rng) {
  SCOPED_TRACE(describe(s, f) + (add ? " with z" : "") + (relu ? " relu" : "") +
               " offset " + std::to_string(offset));
  const auto count = static_cast<size_t>(s.elements());
  const std::vector<T> x = random_activations<T>(s, f, offset, rng);
  const std::vector<T> z = add ? test_util::random_normal<T>(count, rng) : std::vector<T>{};
  const Inputs p = random_params(s.c, rng);

  const DeviceBuffer d_x = to_device(x), d_z = to_device(z);
  const DeviceBuffer d_gamma = to_device(p.gamma), d_beta = to_device(p.beta);
  const DeviceBuffer d_rm = to_device(p.running_mean), d_rv = to_device(p.running_var);
  const DeviceBuffer d_y = poisoned<T>(count);
  const DeviceBuffer d_mean = poisoned<float>(s.c), d_invstd = poisoned<float>(s.c);
  const DeviceBuffer d_scratch = poisoned<unsigned char>(static_cast<size_t>(batchnorm_scratch_bytes(s)));
  const Stream stream;
  batchnorm_forward_training<T>(d_x.as<T>(), add ? d_z.as<T>() : nullptr, d_y.as<T>(),
                                d_gamma.as<float>(), d_beta.as<float>(), d_rm.as<float>(),
                                d_rv.as<float>(), d_mean.as<float>(), d_invstd.as<float>(),
                                d_scratch.get(), d_scratch.bytes(), s, f, kAttrs, relu, stream.get());
  stream.synchronize();

  const std::vector<double> xd = as_double(x), zd = as_double(z);
  const Moments mo = reference_moments(xd, s, f);
  const std::vector<double> y_ref = reference_normalize(xd, add ? &zd : nullptr, s, f, mo.mean, mo.var, p, relu);
  const double m = static_cast<double>(s.n) * s.h * s.w;
  std::vector<double> invstd_ref(s.c), rm_ref(s.c), rv_ref(s.c), mean_tol(s.c), invstd_tol(s.c),
      rm_tol(s.c), rv_tol(s.c);
  for (int c = 0; c < s.c; ++c) {
    invstd_ref[c] = 1.0 / std::sqrt(mo.var[c] + kAttrs.eps);
    rm_ref[c] = (1.0 - kAttrs.momentum) * p.running_mean[c] + kAttrs.momentum * mo.mean[c];
    rv_ref[c] = (1.0 - kAttrs.momentum) * p.running_var[c] + kAttrs.momentum * mo.var[c] * m / (m - 1.0);
    // The mean's error scales with the data's magnitude and spread.
    mean_tol[c] = kStatRtol * (std::abs(mo.mean[c]) + std::sqrt(mo.var[c]));
    invstd_tol[c] = kStatRtol * invstd_ref[c];
    rm_tol[c] = kStatRtol * (std::abs(rm_ref[c]) + std::sqrt(mo.var[c]));
    rv_tol[c] = kStatRtol * rv_ref[c];
  }
  expect_close_each(to_host<float>(d_mean, s.c), mo.mean, mean_tol, "save_mean");
  expect_close_each(to_host<float>(d_invstd, s.c), invstd_ref, invstd_tol, "save_invstd");
  expect_close_each(to_host<float>(d_rm, s.c), rm_ref, rm_tol, "running_mean");
  expect_close_each(to_host<float>(d_rv, s.c), rv_ref, rv_tol, "running_var");
  // Outputs: relative to each value and, for values near zero (and ReLU's
  // clamp), to the tensor's scale.
  expect_close(to_host<T>(d_y, count), y_ref, kRtol<T>, kRtol<T> * max_abs(y_ref), "y");
}

template <typename T>
void check_backward(const models::Shape& s, DataFormat f, bool add, bool relu, Rng& rng) {
  SCOPED_TRACE(describe(s, f) + (add ? " with dz" : "") + (relu ? " relu" : ""));
  const auto count = static_cast<size_t>(s.elements());
  const std::vector<T> x = random_activations<T>(s, f, 0.0F, rng);
  // The kernel takes the ReLU mask from y alone: a forward output with exact
  // zeros where the ReLU clamped.
  std::vector<T> y;
  if (relu) {
    y.resize(count);
    for (auto& e : y) e = from_f<T>(std::max(rng.normal(), 0.0F));
  }
  const std::vector<T> dy = test_util::random_normal<T>(count, rng);
  const Inputs p = random_params(s.c, rng);
  const std::vector<double> xd = as_double(x), yd = as_double(y), dyd = as_double(dy);
  const Moments mo = reference_moments(xd, s, f);
  std::vector<float> mean(s.c), invstd(s.c);
  for (int c = 0; c < s.c; ++c) {
    mean[c] = static_cast<float>(mo.mean[c]);
    invstd[c] = static_cast<float>(1.0 / std::sqrt(mo.var[c] + kAttrs.eps));
  }

  const DeviceBuffer d_x = to_device(x), d_y = to_device(y), d_dy = to_device(dy);
  const DeviceBuffer d_gamma = to_device(p.gamma), d_mean = to_device(mean), d_invstd = to_device(invstd);
  const DeviceBuffer d_dx = poisoned<T>(count), d_dz = poisoned<T>(add ? count : 0);
  const DeviceBuffer d_dgamma = poisoned<float>(s.c), d_dbeta = poisoned<float>(s.c);
  const DeviceBuffer d_scratch = poisoned<unsigned char>(static_cast<size_t>(batchnorm_scratch_bytes(s)));
  const Stream stream;
  batchnorm_backward<T>(d_x.as<T>(), relu ? d_y.as<T>() : nullptr, d_dy.as<T>(), d_dx.as<T>(),
                        add ? d_dz.as<T>() : nullptr, d_gamma.as<float>(), d_mean.as<float>(),
                        d_invstd.as<float>(), d_dgamma.as<float>(), d_dbeta.as<float>(),
                        d_scratch.get(), d_scratch.bytes(), s, f, relu, stream.get());
  stream.synchronize();

  // Reference, from the same fp32 mean and invstd the kernel received.
  const double m = static_cast<double>(s.n) * s.h * s.w;
  std::vector<double> g(count), dbeta(s.c, 0.0), dgamma(s.c, 0.0), dbeta_abs(s.c, 0.0), dgamma_abs(s.c, 0.0);
  for (size_t i = 0; i < count; ++i) {
    const int c = channel_of(f, s, static_cast<int64_t>(i));
    g[i] = (relu && yd[i] <= 0.0) ? 0.0 : dyd[i];
    const double xhat = (xd[i] - mean[c]) * invstd[c];
    dbeta[c] += g[i];
    dgamma[c] += g[i] * xhat;
    dbeta_abs[c] += std::abs(g[i]);
    dgamma_abs[c] += std::abs(g[i] * xhat);
  }
  // dx = a·(g − Σg/M − x̂·Σ(g·x̂)/M) cancels heavily (to exactly 0 for M = 2),
  // so its error is relative to the size of the terms, not of the result: the
  // terms themselves, and the fp32 sums behind Σg/M and Σ(g·x̂)/M, whose errors
  // scale with the sums of magnitudes.
  std::vector<double> dx_ref(count), dx_tol(count);
  for (size_t i = 0; i < count; ++i) {
    const int c = channel_of(f, s, static_cast<int64_t>(i));
    const double xhat = (xd[i] - mean[c]) * invstd[c];
    const double a = p.gamma[c] * invstd[c];
    dx_ref[i] = a * (g[i] - dbeta[c] / m - xhat * dgamma[c] / m);
    const double terms = a * (std::abs(g[i]) + std::abs(dbeta[c]) / m + std::abs(xhat * dgamma[c]) / m);
    const double sums = a * (dbeta_abs[c] / m + std::abs(xhat) * dgamma_abs[c] / m);
    dx_tol[i] = kRtol<T> * (std::abs(dx_ref[i]) + terms + sums);
  }
  // Sums: the error of an fp32 sum is relative to the sum of magnitudes, not to
  // the (possibly cancelling) result.
  std::vector<double> dbeta_tol(s.c), dgamma_tol(s.c);
  for (int c = 0; c < s.c; ++c) {
    dbeta_tol[c] = kStatRtol * dbeta_abs[c] + 1e-30;
    dgamma_tol[c] = kStatRtol * dgamma_abs[c] + 1e-30;
  }
  expect_close_each(to_host<float>(d_dbeta, s.c), dbeta, dbeta_tol, "dbeta");
  expect_close_each(to_host<float>(d_dgamma, s.c), dgamma, dgamma_tol, "dgamma");
  expect_close_each(to_host<T>(d_dx, count), dx_ref, dx_tol, "dx");
  if (add) {
    // dz is dy with the ReLU mask applied: exact.
    std::vector<T> dz_ref(count);
    for (size_t i = 0; i < count; ++i) dz_ref[i] = (relu && yd[i] <= 0.0) ? from_f<T>(0.0F) : dy[i];
    expect_bitwise_equal(to_host<T>(d_dz, count), dz_ref, "dz");
  }
}

template <typename T>
class BatchNormTest : public ::testing::Test {};
TYPED_TEST_SUITE(BatchNormTest, test_util::StorageTypes, test_util::StorageTypeNames);

TYPED_TEST(BatchNormTest, TrainingForwardMatchesReference) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const auto& s : kShapes) {
    for (const DataFormat f : kFormats) {
      const bool small = s.elements() < 100000;
      // Every combination of the fused add and ReLU on small shapes; the full
      // fusion (the ResNet block's) on the large ones.
      for (int flags = small ? 0 : 3; flags < 4; ++flags)
        check_forward_training<TypeParam>(s, f, (flags & 1) != 0, (flags & 2) != 0, 0.0F, rng);
    }
  }
}

TYPED_TEST(BatchNormTest, TrainingForwardIsStableForLargeMeans) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  if (!std::is_same_v<TypeParam, float>)
    GTEST_SKIP() << "16-bit storage quantises data with a large mean too coarsely for this check";
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // Means around 32 with spreads around 1 over 50176 values per channel: the
  // textbook E[x²] − E[x]² in fp32 would lose about three of the five digits
  // checked. (A larger mean would make the fp32 rounding of the saved mean
  // itself, half an ulp, the dominant error of y.)
  for (const DataFormat f : kFormats)
    check_forward_training<TypeParam>({16, 64, 56, 56}, f, false, false, 32.0F, rng);
}

TYPED_TEST(BatchNormTest, BackwardMatchesReference) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const auto& s : kShapes) {
    for (const DataFormat f : kFormats) {
      const bool small = s.elements() < 100000;
      for (int flags = small ? 0 : 3; flags < 4; ++flags)
        check_backward<TypeParam>(s, f, (flags & 1) != 0, (flags & 2) != 0, rng);
    }
  }
}

TYPED_TEST(BatchNormTest, InferenceForwardUsesRunningStatistics) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const auto& s : {models::Shape{2, 3, 5, 7}, models::Shape{3, 24, 9, 11}, models::Shape{4, 256, 14, 14}}) {
    for (const DataFormat f : kFormats) {
      for (int flags = 0; flags < 4; ++flags) {
        const bool add = (flags & 1) != 0, relu = (flags & 2) != 0;
        SCOPED_TRACE(describe(s, f) + (add ? " with z" : "") + (relu ? " relu" : ""));
        const auto count = static_cast<size_t>(s.elements());
        const std::vector<T> x = random_activations<T>(s, f, 0.0F, rng);
        const std::vector<T> z = add ? test_util::random_normal<T>(count, rng) : std::vector<T>{};
        const Inputs p = random_params(s.c, rng);
        const DeviceBuffer d_x = to_device(x), d_z = to_device(z), d_y = poisoned<T>(count);
        const DeviceBuffer d_gamma = to_device(p.gamma), d_beta = to_device(p.beta);
        const DeviceBuffer d_rm = to_device(p.running_mean), d_rv = to_device(p.running_var);
        const Stream stream;
        batchnorm_forward_inference<T>(d_x.as<T>(), add ? d_z.as<T>() : nullptr, d_y.as<T>(),
                                       d_gamma.as<float>(), d_beta.as<float>(), d_rm.as<float>(),
                                       d_rv.as<float>(), s, f, kAttrs, relu, stream.get());
        stream.synchronize();
        const std::vector<double> zd = as_double(z);
        const std::vector<double> rm(p.running_mean.begin(), p.running_mean.end());
        const std::vector<double> rv(p.running_var.begin(), p.running_var.end());
        const std::vector<double> y_ref =
            reference_normalize(as_double(x), add ? &zd : nullptr, s, f, rm, rv, p, relu);
        expect_close(to_host<T>(d_y, count), y_ref, kRtol<T>, kRtol<T> * max_abs(y_ref), "y");
      }
    }
  }
}

/// The reductions run in a fixed order: repeated runs agree bit for bit; and the
/// documented aliasing (y = x in the forward, dz = dy in the backward) gives the
/// same results as separate buffers.
TYPED_TEST(BatchNormTest, DeterministicAndInPlace) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  const models::Shape s{16, 64, 56, 56};
  const auto count = static_cast<size_t>(s.elements());
  for (const DataFormat f : kFormats) {
    SCOPED_TRACE(describe(s, f));
    const std::vector<T> x = random_activations<T>(s, f, 0.0F, rng);
    const std::vector<T> z = test_util::random_normal<T>(count, rng);
    const std::vector<T> dy = test_util::random_normal<T>(count, rng);
    const Inputs p = random_params(s.c, rng);
    const DeviceBuffer d_x = to_device(x), d_z = to_device(z), d_gamma = to_device(p.gamma),
                       d_beta = to_device(p.beta);
    const DeviceBuffer d_scratch(batchnorm_scratch_bytes(s), "scratch");
    const Stream stream;

    struct Run {
      std::vector<T> y, dx, dz;
      std::vector<float> mean, invstd, dgamma, dbeta;
    };
    auto run = [&](bool in_place) {
      const DeviceBuffer d_rm = to_device(p.running_mean), d_rv = to_device(p.running_var);
      const DeviceBuffer d_mean = poisoned<float>(s.c), d_invstd = poisoned<float>(s.c);
      const DeviceBuffer d_y = in_place ? to_device(x) : poisoned<T>(count);
      const T* x_in = in_place ? d_y.as<T>() : d_x.as<T>();
      batchnorm_forward_training<T>(x_in, d_z.as<T>(), d_y.as<T>(), d_gamma.as<float>(),
                                    d_beta.as<float>(), d_rm.as<float>(), d_rv.as<float>(),
                                    d_mean.as<float>(), d_invstd.as<float>(), d_scratch.get(),
                                    d_scratch.bytes(), s, f, kAttrs, true, stream.get());
      const DeviceBuffer d_dy = to_device(dy);
      const DeviceBuffer d_dx = poisoned<T>(count), d_dz_own = poisoned<T>(count);
      T* dz = in_place ? d_dy.as<T>() : d_dz_own.as<T>();
      const DeviceBuffer d_dgamma = poisoned<float>(s.c), d_dbeta = poisoned<float>(s.c);
      batchnorm_backward<T>(d_x.as<T>(), d_y.as<T>(), d_dy.as<T>(), d_dx.as<T>(), dz,
                            d_gamma.as<float>(), d_mean.as<float>(), d_invstd.as<float>(),
                            d_dgamma.as<float>(), d_dbeta.as<float>(), d_scratch.get(),
                            d_scratch.bytes(), s, f, true, stream.get());
      stream.synchronize();
      return Run{to_host<T>(d_y, count),
                 to_host<T>(d_dx, count),
                 in_place ? to_host<T>(d_dy, count) : to_host<T>(d_dz_own, count),
                 to_host<float>(d_mean, s.c),
                 to_host<float>(d_invstd, s.c),
                 to_host<float>(d_dgamma, s.c),
                 to_host<float>(d_dbeta, s.c)};
    };
    const Run a = run(false), b = run(false), c = run(true);
    for (const Run* other : {&b, &c}) {
      const std::string what = other == &b ? "repeat: " : "in place: ";
      expect_bitwise_equal(other->y, a.y, what + "y");
      expect_bitwise_equal(other->mean, a.mean, what + "save_mean");
      expect_bitwise_equal(other->invstd, a.invstd, what + "save_invstd");
      expect_bitwise_equal(other->dx, a.dx, what + "dx");
      expect_bitwise_equal(other->dz, a.dz, what + "dz");
      expect_bitwise_equal(other->dgamma, a.dgamma, what + "dgamma");
      expect_bitwise_equal(other->dbeta, a.dbeta, what + "dbeta");
    }
  }
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
