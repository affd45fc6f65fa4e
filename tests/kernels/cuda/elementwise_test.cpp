// kernels/cuda/elementwise.cu: add, concat, flatten, dropout, casts, channel
// padding and the synthetic batch, against CPU references.
#include "kernels/cuda/elementwise.cuh"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "kernels/cuda/philox.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using test_util::as_double;
using test_util::describe;
using test_util::expect_bitwise_equal;
using test_util::expect_close;
using test_util::from_f;
using test_util::index_of;
using test_util::kRtol;
using test_util::max_abs;
using test_util::poisoned;
using test_util::Rng;
using test_util::to_device;
using test_util::to_f;
using test_util::to_host;

const DataFormat kFormats[] = {DataFormat::NHWC, DataFormat::NCHW};

template <typename T>
class ElementwiseTest : public ::testing::Test {};
TYPED_TEST_SUITE(ElementwiseTest, test_util::StorageTypes, test_util::StorageTypeNames);

TYPED_TEST(ElementwiseTest, AddSumsInputs) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // 2 inputs (residual), 3, and 11 (two launches: 8, then the partial sum + 3).
  for (const int inputs : {2, 3, 11}) {
    for (const int64_t count : {int64_t{5}, int64_t{100003}}) {
      for (const bool in_place : {false, true}) {
        SCOPED_TRACE(std::to_string(inputs) + " inputs, count " + std::to_string(count) +
                     (in_place ? ", y = inputs[0]" : ""));
        std::vector<std::vector<T>> host;
        std::vector<DeviceBuffer> dev;
        std::vector<double> ref(static_cast<size_t>(count), 0.0);
        for (int k = 0; k < inputs; ++k) {
          host.push_back(test_util::random_normal<T>(static_cast<size_t>(count), rng));
          dev.push_back(to_device(host.back()));
          for (size_t i = 0; i < ref.size(); ++i) ref[i] += to_f(host.back()[i]);
        }
        std::vector<const T*> ptrs;
        for (const auto& d : dev) ptrs.push_back(d.as<T>());
        const DeviceBuffer d_y = poisoned<T>(static_cast<size_t>(count));
        T* y = in_place ? dev[0].as<T>() : d_y.as<T>();
        const Stream stream;
        add<T>(ptrs, y, count, stream.get());
        stream.synchronize();
        // fp32 sums of up to 11 values, rounded to T once or twice (11 inputs).
        const std::vector<T> got = to_host<T>(in_place ? dev[0] : d_y, static_cast<size_t>(count));
        expect_close(got, ref, 2 * kRtol<T>, 2 * kRtol<T> * max_abs(ref), "y");
      }
    }
  }
}

TYPED_TEST(ElementwiseTest, ConcatAndItsBackwardAreSliceCopies) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // Inception-like branch widths (multiples of 8: 16-byte path) and odd ones.
  for (const std::vector<int>& channels : {std::vector<int>{64, 96, 32, 32}, std::vector<int>{3, 5, 8},
                                           std::vector<int>{16, 7}}) {
    for (const DataFormat f : kFormats) {
      const int n = 2, h = 5, w = 7;
      int total = 0;
      for (const int c : channels) total += c;
      const models::Shape out{n, total, h, w};
      SCOPED_TRACE(describe(out, f) + ", " + std::to_string(channels.size()) + " inputs");
      std::vector<std::vector<T>> xs;
      std::vector<DeviceBuffer> d_xs, d_dxs;
      std::vector<const T*> x_ptrs;
      std::vector<T*> dx_ptrs;
      std::vector<T> y_ref(static_cast<size_t>(out.elements()));
      int offset = 0;
      for (const int c : channels) {
        const models::Shape in{n, c, h, w};
        xs.push_back(test_util::random_normal<T>(static_cast<size_t>(in.elements()), rng));
        d_xs.push_back(to_device(xs.back()));
        d_dxs.push_back(poisoned<T>(static_cast<size_t>(in.elements())));
        x_ptrs.push_back(d_xs.back().as<T>());
        dx_ptrs.push_back(d_dxs.back().as<T>());
        for (int b = 0; b < n; ++b)
          for (int ch = 0; ch < c; ++ch)
            for (int yy = 0; yy < h; ++yy)
              for (int xx = 0; xx < w; ++xx)
                y_ref[index_of(f, out, b, offset + ch, yy, xx)] = xs.back()[index_of(f, in, b, ch, yy, xx)];
        offset += c;
      }
      const DeviceBuffer d_y = poisoned<T>(y_ref.size());
      const Stream stream;
      concat_channels<T>(x_ptrs, channels, d_y.as<T>(), n, h, w, f, stream.get());
      // Backward of the concat of y itself: must give back the inputs.
      concat_channels_backward<T>(d_y.as<T>(), dx_ptrs, channels, n, h, w, f, stream.get());
      stream.synchronize();
      expect_bitwise_equal(to_host<T>(d_y, y_ref.size()), y_ref, "y");
      for (size_t k = 0; k < channels.size(); ++k)
        expect_bitwise_equal(to_host<T>(d_dxs[k], xs[k].size()), xs[k], "dx[" + std::to_string(k) + "]");
    }
  }
}

TYPED_TEST(ElementwiseTest, FlattenTransposesNhwcToTorchOrder) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // VGG's 7×7×512 head, an odd shape crossing tile edges, and H·W = 1 (a copy).
  for (const models::Shape s : {models::Shape{2, 512, 7, 7}, models::Shape{3, 37, 5, 6},
                                models::Shape{4, 2048, 1, 1}}) {
    SCOPED_TRACE(describe(s, DataFormat::NHWC));
    const auto count = static_cast<size_t>(s.elements());
    const std::vector<T> x = test_util::random_normal<T>(count, rng);
    std::vector<T> y_ref(count);
    for (int n = 0; n < s.n; ++n)
      for (int c = 0; c < s.c; ++c)
        for (int h = 0; h < s.h; ++h)
          for (int w = 0; w < s.w; ++w)
            y_ref[index_of(DataFormat::NCHW, s, n, c, h, w)] = x[index_of(DataFormat::NHWC, s, n, c, h, w)];
    const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(count), d_dx = poisoned<T>(count);
    const Stream stream;
    flatten_nhwc<T>(d_x.as<T>(), d_y.as<T>(), s.n, s.c, s.h, s.w, stream.get());
    flatten_nhwc_backward<T>(d_y.as<T>(), d_dx.as<T>(), s.n, s.c, s.h, s.w, stream.get());
    stream.synchronize();
    expect_bitwise_equal(to_host<T>(d_y, count), y_ref, "y");
    expect_bitwise_equal(to_host<T>(d_dx, count), x, "dx (backward of y)");
  }
}

/// The keep decision of element i as elementwise.cuh documents it.
bool host_keep(uint64_t i, const DropoutMask& m, uint64_t step) {
  const Philox4 r = philox4x32_10(static_cast<uint32_t>(i / 4), m.layer_id, static_cast<uint32_t>(step),
                                  static_cast<uint32_t>(step >> 32), static_cast<uint32_t>(m.seed),
                                  static_cast<uint32_t>(m.seed >> 32));
  return philox_uniform(r.v[i % 4]) >= m.p;
}

TYPED_TEST(ElementwiseTest, DropoutMaskIsReproducibleAndHasTheKeepRate) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  const int64_t count = (int64_t{1} << 20) + 3;  // a tail after the groups of four
  const auto n = static_cast<size_t>(count);
  // Nonzero inputs so that a zero output means "dropped".
  std::vector<T> x(n), dy(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = from_f<T>(rng.uniform(0.5F, 2.0F) * (rng.uniform_int(0, 1) != 0 ? 1.0F : -1.0F));
    dy[i] = from_f<T>(rng.uniform(0.5F, 2.0F));
  }
  const DeviceBuffer d_x = to_device(x), d_dy = to_device(dy);
  const DeviceBuffer d_step = to_device(std::vector<uint64_t>{41});
  const Stream stream;
  for (const float p : {0.1F, 0.5F}) {
    for (const int64_t offset : {int64_t{0}, int64_t{1}}) {  // 1: the unaligned path
      SCOPED_TRACE("p " + std::to_string(p) + " offset " + std::to_string(offset));
      const int64_t len = count - offset;
      const DropoutMask mask{.p = p, .seed = seed, .layer_id = 3, .step = d_step.as<uint64_t>()};
      const DeviceBuffer d_y = poisoned<T>(n), d_y2 = poisoned<T>(n), d_dx = poisoned<T>(n);
      dropout_forward<T>(d_x.as<T>() + offset, d_y.as<T>() + offset, len, mask, stream.get());
      dropout_forward<T>(d_x.as<T>() + offset, d_y2.as<T>() + offset, len, mask, stream.get());
      dropout_backward<T>(d_dy.as<T>() + offset, d_dx.as<T>() + offset, len, mask, stream.get());
      stream.synchronize();
      const std::vector<T> y = to_host<T>(d_y, n), y2 = to_host<T>(d_y2, n), dx = to_host<T>(d_dx, n);
      expect_bitwise_equal(y2, y, "same seed and step: same output");
      const float scale = static_cast<float>(1.0 / (1.0 - static_cast<double>(p)));
      size_t kept = 0, wrong = 0;
      for (size_t i = static_cast<size_t>(offset); i < n; ++i) {
        const bool keep = host_keep(i - static_cast<size_t>(offset), mask, 41);
        kept += keep ? 1 : 0;
        // Kept: x·(1/(1 − p)) in fp32, rounded to T; dropped: exactly 0. The
        // backward applies the same mask to dy.
        const T y_want = from_f<T>(keep ? to_f(x[i]) * scale : 0.0F);
        const T dx_want = from_f<T>(keep ? to_f(dy[i]) * scale : 0.0F);
        if (to_f(y[i]) != to_f(y_want) || to_f(dx[i]) != to_f(dx_want)) ++wrong;
      }
      EXPECT_EQ(wrong, 0U) << "elements differing from the documented Philox mask";
      // Keep rate 1 − p within 6 standard deviations of a Bernoulli mean.
      const double rate = static_cast<double>(kept) / static_cast<double>(len);
      const double sigma = std::sqrt(static_cast<double>(p) * (1.0 - p) / static_cast<double>(len));
      EXPECT_NEAR(rate, 1.0 - p, 6.0 * sigma);
    }
  }

  // The next step (advanced on the device) and another layer draw other masks:
  // about 2p(1 − p) of the decisions differ.
  const DropoutMask base{.p = 0.5F, .seed = seed, .layer_id = 3, .step = d_step.as<uint64_t>()};
  const DeviceBuffer d_a = poisoned<T>(n), d_b = poisoned<T>(n), d_c = poisoned<T>(n);
  dropout_forward<T>(d_x.as<T>(), d_a.as<T>(), count, base, stream.get());
  DropoutMask other_layer = base;
  other_layer.layer_id = 4;
  dropout_forward<T>(d_x.as<T>(), d_c.as<T>(), count, other_layer, stream.get());
  dropout_step_advance(d_step.as<uint64_t>(), stream.get());
  dropout_forward<T>(d_x.as<T>(), d_b.as<T>(), count, base, stream.get());
  stream.synchronize();
  EXPECT_EQ(to_host<uint64_t>(d_step, 1)[0], 42U);
  const std::vector<T> a = to_host<T>(d_a, n), b = to_host<T>(d_b, n), c = to_host<T>(d_c, n);
  size_t differ_step = 0, differ_layer = 0;
  for (size_t i = 0; i < n; ++i) {
    differ_step += (to_f(a[i]) == 0.0F) != (to_f(b[i]) == 0.0F) ? 1 : 0;
    differ_layer += (to_f(a[i]) == 0.0F) != (to_f(c[i]) == 0.0F) ? 1 : 0;
  }
  EXPECT_NEAR(static_cast<double>(differ_step) / n, 0.5, 0.01) << "next step";
  EXPECT_NEAR(static_cast<double>(differ_layer) / n, 0.5, 0.01) << "other layer";
}

TYPED_TEST(ElementwiseTest, DropoutExtremes) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  const size_t n = 1001;
  const std::vector<T> x = test_util::random_normal<T>(n, rng);
  const DeviceBuffer d_x = to_device(x), d_step = to_device(std::vector<uint64_t>{0});
  const DeviceBuffer d_keep_all = poisoned<T>(n), d_drop_all = poisoned<T>(n);
  const Stream stream;
  dropout_forward<T>(d_x.as<T>(), d_keep_all.as<T>(), static_cast<int64_t>(n),
                     DropoutMask{.p = 0.0F, .seed = seed, .layer_id = 0, .step = d_step.as<uint64_t>()},
                     stream.get());
  dropout_forward<T>(d_x.as<T>(), d_drop_all.as<T>(), static_cast<int64_t>(n),
                     DropoutMask{.p = 1.0F, .seed = seed, .layer_id = 0, .step = d_step.as<uint64_t>()},
                     stream.get());
  stream.synchronize();
  expect_bitwise_equal(to_host<T>(d_keep_all, n), x, "p = 0 is the identity");
  expect_close(to_host<T>(d_drop_all, n), std::vector<double>(n, 0.0), 0.0, 0.0, "p = 1 gives zeros");
}

TEST(ElementwiseCastTest, CastsRoundToNearestEven) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const int64_t count : {int64_t{3}, int64_t{100001}}) {
    const auto n = static_cast<size_t>(count);
    std::vector<float> x(n);
    for (auto& e : x) e = rng.normal() * 100.0F;
    const DeviceBuffer d_x = to_device(x);
    const DeviceBuffer d_h = poisoned<__half>(n), d_b = poisoned<__nv_bfloat16>(n);
    const DeviceBuffer d_hf = poisoned<float>(n), d_bf = poisoned<float>(n);
    const Stream stream;
    cast<float, __half>(d_x.as<float>(), d_h.as<__half>(), count, stream.get());
    cast<float, __nv_bfloat16>(d_x.as<float>(), d_b.as<__nv_bfloat16>(), count, stream.get());
    cast<__half, float>(d_h.as<__half>(), d_hf.as<float>(), count, stream.get());
    cast<__nv_bfloat16, float>(d_b.as<__nv_bfloat16>(), d_bf.as<float>(), count, stream.get());
    stream.synchronize();
    std::vector<__half> h_ref(n);
    std::vector<__nv_bfloat16> b_ref(n);
    std::vector<float> hf_ref(n), bf_ref(n);
    for (size_t i = 0; i < n; ++i) {
      h_ref[i] = __float2half_rn(x[i]);
      b_ref[i] = __float2bfloat16_rn(x[i]);
      hf_ref[i] = __half2float(h_ref[i]);
      bf_ref[i] = __bfloat162float(b_ref[i]);
    }
    expect_bitwise_equal(to_host<__half>(d_h, n), h_ref, "fp32 -> fp16");
    expect_bitwise_equal(to_host<__nv_bfloat16>(d_b, n), b_ref, "fp32 -> bf16");
    expect_bitwise_equal(to_host<float>(d_hf, n), hf_ref, "fp16 -> fp32");
    expect_bitwise_equal(to_host<float>(d_bf, n), bf_ref, "bf16 -> fp32");
  }
}

TYPED_TEST(ElementwiseTest, PadChannelsAppendsZeros) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  const int64_t rows = 2 * 31 * 33;
  for (const int padded : {4, 8}) {
    SCOPED_TRACE("3 -> " + std::to_string(padded) + " channels");
    const std::vector<T> x = test_util::random_normal<T>(static_cast<size_t>(rows) * 3, rng);
    std::vector<T> y_ref(static_cast<size_t>(rows) * padded, from_f<T>(0.0F));
    for (int64_t r = 0; r < rows; ++r)
      for (int c = 0; c < 3; ++c) y_ref[r * padded + c] = x[r * 3 + c];
    const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(y_ref.size());
    const Stream stream;
    pad_channels_nhwc<T>(d_x.as<T>(), d_y.as<T>(), rows, 3, padded, stream.get());
    stream.synchronize();
    expect_bitwise_equal(to_host<T>(d_y, y_ref.size()), y_ref, "y");
  }
}

TYPED_TEST(ElementwiseTest, SyntheticImagesAreStandardNormalInAnyLayout) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  const models::Shape s{8, 3, 61, 67};  // 98088 values; odd H and W
  const Stream stream;
  std::array<std::vector<T>, 2> stored;  // NHWC padded to 4 channels, NCHW unpadded
  const int stored_c[2] = {4, 3};
  for (int k = 0; k < 2; ++k) {
    const models::Shape st{s.n, stored_c[k], s.h, s.w};
    const DeviceBuffer d = poisoned<T>(static_cast<size_t>(st.elements()));
    synthetic_images<T>(d.as<T>(), s, stored_c[k], kFormats[k], seed, stream.get());
    stream.synchronize();
    stored[k] = to_host<T>(d, static_cast<size_t>(st.elements()));
  }
  const models::Shape padded{s.n, 4, s.h, s.w};
  // Reference: the Box–Muller normal of each logical NCHW index from the same
  // Philox words, in fp64 (the kernel's fp32 log/sqrt/sincos differ by a few ulp).
  std::vector<double> ref(static_cast<size_t>(s.elements()));
  for (size_t i = 0; i < ref.size(); ++i) {
    const Philox4 r = philox4x32_10(static_cast<uint32_t>(i / 4), static_cast<uint32_t>(uint64_t{i / 4} >> 32),
                                    0x494D4147U, 0U, static_cast<uint32_t>(seed),
                                    static_cast<uint32_t>(seed >> 32));
    const size_t pair = (i % 4) & 2U;
    const double u1 = (static_cast<double>(r.v[pair] >> 9) + 0.5) / 8388608.0;
    const double u2 = static_cast<double>(r.v[pair + 1] >> 8) / 16777216.0;
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    ref[i] = radius * (((i % 4) & 1U) != 0 ? std::sin(angle) : std::cos(angle));
  }
  std::vector<T> nhwc_as_nchw(ref.size());
  double sum = 0.0, sum_sq = 0.0;
  size_t pad_nonzero = 0;
  for (int n = 0; n < s.n; ++n)
    for (int h = 0; h < s.h; ++h)
      for (int w = 0; w < s.w; ++w) {
        for (int c = 0; c < s.c; ++c) {
          nhwc_as_nchw[index_of(DataFormat::NCHW, s, n, c, h, w)] =
              stored[0][index_of(DataFormat::NHWC, padded, n, c, h, w)];
          const double v = to_f(stored[1][index_of(DataFormat::NCHW, s, n, c, h, w)]);
          sum += v;
          sum_sq += v * v;
        }
        pad_nonzero += to_f(stored[0][index_of(DataFormat::NHWC, padded, n, 3, h, w)]) != 0.0F ? 1 : 0;
      }
  EXPECT_EQ(pad_nonzero, 0U) << "padding channel must be zero";
  expect_bitwise_equal(nhwc_as_nchw, stored[1], "NHWC and NCHW hold the same images");
  // The fp32 transcendental functions against fp64: a few ulp of values below ~6.
  expect_close(stored[1], ref, kRtol<T>, std::is_same_v<T, float> ? 1e-5 : kRtol<T>, "images");
  const double count = static_cast<double>(ref.size());
  const double mean = sum / count, var = sum_sq / count - mean * mean;
  // Standard errors: 1/sqrt(n) ≈ 0.0032 for the mean, sqrt(2/n) ≈ 0.0045 for
  // the variance; 6 of each.
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);

  // Another seed gives other images; the same seed the same ones.
  const DeviceBuffer d_again = poisoned<T>(ref.size()), d_other = poisoned<T>(ref.size());
  synthetic_images<T>(d_again.as<T>(), s, 3, DataFormat::NCHW, seed, stream.get());
  synthetic_images<T>(d_other.as<T>(), s, 3, DataFormat::NCHW, seed + 1, stream.get());
  stream.synchronize();
  expect_bitwise_equal(to_host<T>(d_again, ref.size()), stored[1], "same seed");
  const std::vector<T> other = to_host<T>(d_other, ref.size());
  size_t same = 0;
  for (size_t i = 0; i < ref.size(); ++i) same += to_f(other[i]) == to_f(stored[1][i]) ? 1 : 0;
  EXPECT_LT(same, ref.size() / 20) << "another seed should give other values";
}

TEST(ElementwiseSyntheticTest, LabelsAreUniformAndReproducible) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  const int n = 100003, classes = 10;
  const DeviceBuffer d_a = poisoned<int32_t>(n), d_b = poisoned<int32_t>(n);
  const Stream stream;
  synthetic_labels(d_a.as<int32_t>(), n, classes, seed, stream.get());
  synthetic_labels(d_b.as<int32_t>(), n, classes, seed, stream.get());
  stream.synchronize();
  const std::vector<int32_t> a = to_host<int32_t>(d_a, n), b = to_host<int32_t>(d_b, n);
  EXPECT_EQ(a, b);
  std::vector<int> histogram(classes, 0);
  size_t mismatch = 0;
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(a[i], 0);
    ASSERT_LT(a[i], classes);
    ++histogram[a[i]];
    const Philox4 r = philox4x32_10(static_cast<uint32_t>(i / 4), 0U, 0x4C41424CU, 0U,
                                    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    const auto want = static_cast<int32_t>((uint64_t{r.v[i % 4]} * classes) >> 32);
    mismatch += a[i] != want ? 1 : 0;
  }
  EXPECT_EQ(mismatch, 0U) << "labels differ from the documented Philox mapping";
  // Each class expects n/10 ≈ 10000 with a standard deviation of about 95.
  for (int c = 0; c < classes; ++c) EXPECT_NEAR(histogram[c], n / classes, 600) << "class " << c;
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
