// kernels/cuda/pool.cu against CPU references of torch.nn.MaxPool2d, AvgPool2d
// and AdaptiveAvgPool2d (forward and backward), on fresh random inputs, in both
// layouts and all storage types.
#include "kernels/cuda/pool.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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
using test_util::to_host;

const DataFormat kFormats[] = {DataFormat::NHWC, DataFormat::NCHW};

struct WindowCase {
  models::Shape in;
  models::PoolAttrs attrs;  // kind is set per test
  const char* name;
};

models::PoolAttrs window(int k, int s, int p, bool ceil_mode, bool include_pad = true) {
  models::PoolAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = include_pad;
  return a;
}

/// The zoo's windows (ResNet's stem, VGG's 2×2, GoogLeNet's ceil-mode pools,
/// Inception's 3×3 stride-1 branch pool) and odd ones (5×5 stride 3 with
/// padding and ceil_mode, 2×2 stride 1 with padding), over channel counts that
/// take the 16-byte path (8, 16, 24, 64), the one-element path (3, 5), and 20,
/// which fp32 vectorises (a multiple of 4) and the 16-bit types do not.
const std::vector<WindowCase> kWindowCases = {
    {{2, 64, 32, 33}, window(3, 2, 1, false), "3x3 s2 p1"},
    {{2, 16, 14, 15}, window(2, 2, 0, false), "2x2 s2"},
    {{2, 24, 15, 16}, window(3, 2, 0, true), "3x3 s2 ceil"},
    {{2, 20, 9, 9}, window(3, 1, 1, true), "3x3 s1 p1 ceil"},
    {{2, 3, 11, 13}, window(5, 3, 2, true, false), "5x5 s3 p2 ceil exclude-pad"},
    {{1, 5, 4, 6}, window(2, 1, 1, true, false), "2x2 s1 p1 ceil exclude-pad"},
    {{3, 8, 7, 7}, window(3, 2, 1, true, false), "3x3 s2 p1 ceil exclude-pad"},
};

/// Window bounds of output (oy, ox) as PyTorch computes them.
struct Window {
  int hs, ws;          // unclamped start (may be negative)
  int h0, w0, h1, w1;  // clamped to the input
  int divisor;         // avg pool divisor
};

Window window_of(const models::Shape& in, const models::PoolAttrs& a, int oy, int ox) {
  Window w{};
  w.hs = oy * a.stride_h - a.pad_h;
  w.ws = ox * a.stride_w - a.pad_w;
  const int he = std::min(w.hs + a.kernel_h, in.h + a.pad_h);
  const int we = std::min(w.ws + a.kernel_w, in.w + a.pad_w);
  const int pool_size = (he - w.hs) * (we - w.ws);
  w.h0 = std::max(w.hs, 0);
  w.w0 = std::max(w.ws, 0);
  w.h1 = std::min(he, in.h);
  w.w1 = std::min(we, in.w);
  w.divisor = a.count_include_pad ? pool_size : (w.h1 - w.h0) * (w.w1 - w.w0);
  return w;
}

template <typename T>
class PoolTest : public ::testing::Test {};
TYPED_TEST_SUITE(PoolTest, test_util::StorageTypes, test_util::StorageTypeNames);

TYPED_TEST(PoolTest, MaxPoolMatchesReference) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const auto& wc : kWindowCases) {
    const models::PoolAttrs a = wc.attrs;
    const models::Shape out = pool_output_shape(wc.in, a);
    for (const DataFormat f : kFormats) {
      SCOPED_TRACE(describe(wc.in, f) + " " + wc.name);
      const auto in_count = static_cast<size_t>(wc.in.elements());
      const auto out_count = static_cast<size_t>(out.elements());
      // Few distinct values so that ties (first maximum wins) occur.
      std::vector<T> x(in_count);
      for (auto& e : x) e = from_f<T>(static_cast<float>(rng.uniform_int(-20, 20)) * 0.25F);
      const std::vector<T> dy = test_util::random_normal<T>(out_count, rng);

      // Reference forward: first maximum in row-major window order.
      std::vector<T> y_ref(out_count);
      std::vector<uint8_t> arg_ref(out_count);
      for (int n = 0; n < out.n; ++n)
        for (int c = 0; c < out.c; ++c)
          for (int oy = 0; oy < out.h; ++oy)
            for (int ox = 0; ox < out.w; ++ox) {
              const Window w = window_of(wc.in, a, oy, ox);
              float best = -std::numeric_limits<float>::infinity();
              int arg = (w.h0 - w.hs) * a.kernel_w + (w.w0 - w.ws);
              for (int iy = w.h0; iy < w.h1; ++iy)
                for (int ix = w.w0; ix < w.w1; ++ix) {
                  const float v = test_util::to_f(x[index_of(f, wc.in, n, c, iy, ix)]);
                  if (v > best) {
                    best = v;
                    arg = (iy - w.hs) * a.kernel_w + (ix - w.ws);
                  }
                }
              const int64_t o = index_of(f, out, n, c, oy, ox);
              y_ref[o] = from_f<T>(best);
              arg_ref[o] = static_cast<uint8_t>(arg);
            }
      // Reference backward from the reference argmax.
      std::vector<double> dx_ref(in_count, 0.0);
      for (int n = 0; n < out.n; ++n)
        for (int c = 0; c < out.c; ++c)
          for (int oy = 0; oy < out.h; ++oy)
            for (int ox = 0; ox < out.w; ++ox) {
              const Window w = window_of(wc.in, a, oy, ox);
              const int64_t o = index_of(f, out, n, c, oy, ox);
              const int iy = w.hs + arg_ref[o] / a.kernel_w, ix = w.ws + arg_ref[o] % a.kernel_w;
              dx_ref[index_of(f, wc.in, n, c, iy, ix)] += test_util::to_f(dy[o]);
            }

      const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(out_count);
      const DeviceBuffer d_arg = poisoned<uint8_t>(out_count);
      const DeviceBuffer d_dy = to_device(dy), d_arg_ref = to_device(arg_ref);
      const DeviceBuffer d_dx = poisoned<T>(in_count);
      const Stream stream;
      maxpool_forward<T>(d_x.as<T>(), d_y.as<T>(), d_arg.as<uint8_t>(), wc.in, a, f, stream.get());
      maxpool_backward<T>(d_dy.as<T>(), d_arg_ref.as<uint8_t>(), d_dx.as<T>(), wc.in, a, f, stream.get());
      stream.synchronize();
      // A maximum is one of the inputs: exact.
      expect_bitwise_equal(to_host<T>(d_y, out_count), y_ref, "y");
      EXPECT_EQ(to_host<uint8_t>(d_arg, out_count), arg_ref) << "argmax";
      // Sums of at most ceil(k/s)² gradients, in fp32, then rounded to T.
      expect_close(to_host<T>(d_dx, in_count), dx_ref, kRtol<T>, kRtol<T> * max_abs(dx_ref), "dx");
    }
  }
}

TYPED_TEST(PoolTest, AvgPoolMatchesReference) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const auto& wc : kWindowCases) {
    for (const bool include_pad : {true, false}) {
      models::PoolAttrs a = wc.attrs;
      a.kind = models::PoolAttrs::Kind::Avg;
      a.count_include_pad = include_pad;
      const models::Shape out = pool_output_shape(wc.in, a);
      for (const DataFormat f : kFormats) {
        SCOPED_TRACE(describe(wc.in, f) + " " + wc.name +
                     (include_pad ? " count_include_pad" : " exclude pad"));
        const auto in_count = static_cast<size_t>(wc.in.elements());
        const auto out_count = static_cast<size_t>(out.elements());
        const std::vector<T> x = test_util::random_normal<T>(in_count, rng);
        const std::vector<T> dy = test_util::random_normal<T>(out_count, rng);
        const std::vector<double> xd = as_double(x), dyd = as_double(dy);
        std::vector<double> y_ref(out_count), dx_ref(in_count, 0.0);
        for (int n = 0; n < out.n; ++n)
          for (int c = 0; c < out.c; ++c)
            for (int oy = 0; oy < out.h; ++oy)
              for (int ox = 0; ox < out.w; ++ox) {
                const Window w = window_of(wc.in, a, oy, ox);
                const int64_t o = index_of(f, out, n, c, oy, ox);
                double sum = 0.0;
                for (int iy = w.h0; iy < w.h1; ++iy)
                  for (int ix = w.w0; ix < w.w1; ++ix) {
                    sum += xd[index_of(f, wc.in, n, c, iy, ix)];
                    dx_ref[index_of(f, wc.in, n, c, iy, ix)] += dyd[o] / w.divisor;
                  }
                y_ref[o] = sum / w.divisor;
              }
        const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(out_count);
        const DeviceBuffer d_dy = to_device(dy), d_dx = poisoned<T>(in_count);
        const Stream stream;
        avgpool_forward<T>(d_x.as<T>(), d_y.as<T>(), wc.in, a, f, stream.get());
        avgpool_backward<T>(d_dy.as<T>(), d_dx.as<T>(), wc.in, a, f, stream.get());
        stream.synchronize();
        // fp32 sums of at most 25 values and one division, rounded to T.
        expect_close(to_host<T>(d_y, out_count), y_ref, kRtol<T>, kRtol<T> * max_abs(y_ref), "y");
        expect_close(to_host<T>(d_dx, in_count), dx_ref, kRtol<T>, kRtol<T> * max_abs(dx_ref), "dx");
      }
    }
  }
}

struct AdaptiveCase {
  models::Shape in;
  int out_h, out_w;
};

/// Global pooling (ResNet's 7×7×2048 head, channel counts on both paths), the
/// VGG/AlexNet-style identity and downsizing cases, overlapping odd cells, and
/// an output larger than the input.
const std::vector<AdaptiveCase> kAdaptiveCases = {
    {{4, 2048, 7, 7}, 1, 1}, {{2, 64, 7, 7}, 1, 1}, {{3, 5, 9, 1}, 1, 1},   {{2, 24, 8, 8}, 1, 1},
    {{2, 3, 7, 7}, 7, 7},    {{2, 20, 13, 13}, 6, 6}, {{2, 8, 5, 7}, 3, 2}, {{1, 16, 3, 3}, 4, 4},
};

TYPED_TEST(PoolTest, AdaptiveAvgPoolMatchesReference) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  for (const auto& ac : kAdaptiveCases) {
    const models::AdaptiveAvgPoolAttrs a{ac.out_h, ac.out_w};
    const models::Shape out{ac.in.n, ac.in.c, ac.out_h, ac.out_w};
    for (const DataFormat f : kFormats) {
      SCOPED_TRACE(describe(ac.in, f) + " to " + std::to_string(ac.out_h) + "x" + std::to_string(ac.out_w));
      const auto in_count = static_cast<size_t>(ac.in.elements());
      const auto out_count = static_cast<size_t>(out.elements());
      const std::vector<T> x = test_util::random_normal<T>(in_count, rng, 0.5F);
      const std::vector<T> dy = test_util::random_normal<T>(out_count, rng);
      const std::vector<double> xd = as_double(x), dyd = as_double(dy);
      std::vector<double> y_ref(out_count), dx_ref(in_count, 0.0);
      for (int n = 0; n < out.n; ++n)
        for (int c = 0; c < out.c; ++c)
          for (int oy = 0; oy < out.h; ++oy)
            for (int ox = 0; ox < out.w; ++ox) {
              // Cell [floor(i·H/oh), ceil((i+1)·H/oh)), written with floating point
              // here to be independent of the kernel's integer form.
              const int h0 = static_cast<int>(std::floor(static_cast<double>(oy) * ac.in.h / out.h));
              const int h1 = static_cast<int>(std::ceil(static_cast<double>(oy + 1) * ac.in.h / out.h));
              const int w0 = static_cast<int>(std::floor(static_cast<double>(ox) * ac.in.w / out.w));
              const int w1 = static_cast<int>(std::ceil(static_cast<double>(ox + 1) * ac.in.w / out.w));
              const double size = static_cast<double>((h1 - h0) * (w1 - w0));
              const int64_t o = index_of(f, out, n, c, oy, ox);
              double sum = 0.0;
              for (int iy = h0; iy < h1; ++iy)
                for (int ix = w0; ix < w1; ++ix) {
                  sum += xd[index_of(f, ac.in, n, c, iy, ix)];
                  dx_ref[index_of(f, ac.in, n, c, iy, ix)] += dyd[o] / size;
                }
              y_ref[o] = sum / size;
            }
      const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(out_count);
      const DeviceBuffer d_dy = to_device(dy), d_dx = poisoned<T>(in_count);
      const Stream stream;
      adaptive_avgpool_forward<T>(d_x.as<T>(), d_y.as<T>(), ac.in, a, f, stream.get());
      adaptive_avgpool_backward<T>(d_dy.as<T>(), d_dx.as<T>(), ac.in, a, f, stream.get());
      stream.synchronize();
      // fp32 sums of at most 81 values (global 9×1 and 7×7 cases), one
      // division, rounded to T.
      expect_close(to_host<T>(d_y, out_count), y_ref, kRtol<T>, kRtol<T> * max_abs(y_ref), "y");
      expect_close(to_host<T>(d_dx, in_count), dx_ref, kRtol<T>, kRtol<T> * max_abs(dx_ref), "dx");
    }
  }
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
