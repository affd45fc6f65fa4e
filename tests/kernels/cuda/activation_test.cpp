// kernels/cuda/activation.cu: ReLU and ReLU6 forward and backward against
// their definitions, exactly (both are selections, no rounding).
#include "kernels/cuda/activation.cuh"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/kernels/cuda/cuda_test_util.h"

namespace cnnbench::kernels::cuda {
namespace {

using Kind = models::ActivationAttrs::Kind;
using test_util::expect_bitwise_equal;
using test_util::from_f;
using test_util::poisoned;
using test_util::Rng;
using test_util::to_device;
using test_util::to_f;
using test_util::to_host;

template <typename T>
class ActivationTest : public ::testing::Test {};
TYPED_TEST_SUITE(ActivationTest, test_util::StorageTypes, test_util::StorageTypeNames);

TYPED_TEST(ActivationTest, ForwardAndBackwardMatchDefinitions) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const uint64_t seed = test_util::fresh_seed();
  SCOPED_TRACE("random seed " + std::to_string(seed));
  Rng rng(seed);
  // Counts below, at and beyond a block, with remainders modulo the 16-byte
  // pack; offset 1 moves the pointers off 16-byte alignment (one-element path).
  for (const int64_t count : {int64_t{1}, int64_t{7}, int64_t{256}, int64_t{4099}, int64_t{(1 << 20) + 5}}) {
    for (const int64_t offset : {int64_t{0}, int64_t{1}}) {
      for (const Kind kind : {Kind::Relu, Kind::Relu6}) {
        const float cap = kind == Kind::Relu6 ? 6.0F : INFINITY;
        SCOPED_TRACE("count " + std::to_string(count) + " offset " + std::to_string(offset) +
                     (kind == Kind::Relu6 ? " relu6" : " relu"));
        const auto total = static_cast<size_t>(count + offset);
        // Values across both kinks, including exactly 0 and 6.
        std::vector<T> x(total), dy = test_util::random_normal<T>(total, rng);
        for (auto& e : x) {
          const int r = rng.uniform_int(0, 9);
          e = from_f<T>(r == 0 ? 0.0F : (r == 1 ? 6.0F : rng.uniform(-8.0F, 8.0F)));
        }
        std::vector<T> y_ref(x), dx_ref(total);
        for (size_t i = static_cast<size_t>(offset); i < total; ++i) {
          const float v = to_f(x[i]);
          y_ref[i] = from_f<T>(v < 0.0F ? 0.0F : (v > cap ? cap : v));
          // The backward takes the forward output: the gradient passes where
          // 0 < y < cap.
          const float y = to_f(y_ref[i]);
          dx_ref[i] = (y <= 0.0F || y >= cap) ? from_f<T>(0.0F) : dy[i];
        }
        const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(total);
        const DeviceBuffer d_dy = to_device(dy), d_dx = poisoned<T>(total);
        const Stream stream;
        activation_forward<T>(d_x.as<T>() + offset, d_y.as<T>() + offset, count, kind, stream.get());
        activation_backward<T>(d_y.as<T>() + offset, d_dy.as<T>() + offset, d_dx.as<T>() + offset,
                               count, kind, stream.get());
        // In place: forward over x itself, backward over dy itself.
        activation_forward<T>(d_x.as<T>() + offset, d_x.as<T>() + offset, count, kind, stream.get());
        activation_backward<T>(d_x.as<T>() + offset, d_dy.as<T>() + offset, d_dy.as<T>() + offset,
                               count, kind, stream.get());
        stream.synchronize();
        std::vector<T> y = to_host<T>(d_y, total), dx = to_host<T>(d_dx, total);
        std::vector<T> y_inplace = to_host<T>(d_x, total), dx_inplace = to_host<T>(d_dy, total);
        // Compare from `offset` on (the elements before it were not passed in).
        auto tail = [&](const std::vector<T>& v) { return std::vector<T>(v.begin() + offset, v.end()); };
        expect_bitwise_equal(tail(y), tail(y_ref), "y");
        expect_bitwise_equal(tail(dx), tail(dx_ref), "dx");
        expect_bitwise_equal(tail(y_inplace), tail(y_ref), "y in place");
        expect_bitwise_equal(tail(dx_inplace), tail(dx_ref), "dx in place");
      }
    }
  }
}

TYPED_TEST(ActivationTest, NaNPropagatesLikeTorch) {
  CNNBENCH_SKIP_WITHOUT_CUDA();
  using T = TypeParam;
  const std::vector<T> x = {from_f<T>(NAN), from_f<T>(-1.0F), from_f<T>(7.0F)};
  const std::vector<T> dy = {from_f<T>(2.0F), from_f<T>(3.0F), from_f<T>(4.0F)};
  const DeviceBuffer d_x = to_device(x), d_y = poisoned<T>(3), d_dy = to_device(dy), d_dx = poisoned<T>(3);
  const Stream stream;
  for (const Kind kind : {Kind::Relu, Kind::Relu6}) {
    activation_forward<T>(d_x.as<T>(), d_y.as<T>(), 3, kind, stream.get());
    activation_backward<T>(d_x.as<T>(), d_dy.as<T>(), d_dx.as<T>(), 3, kind, stream.get());
    stream.synchronize();
    const std::vector<T> y = to_host<T>(d_y, 3), dx = to_host<T>(d_dx, 3);
    EXPECT_TRUE(std::isnan(to_f(y[0])));                          // torch.relu(nan) = nan
    EXPECT_EQ(to_f(y[1]), 0.0F);
    EXPECT_EQ(to_f(y[2]), kind == Kind::Relu6 ? 6.0F : 7.0F);
    EXPECT_EQ(to_f(dx[0]), 2.0F);                                  // threshold_backward passes NaN's grad
    EXPECT_EQ(to_f(dx[1]), 0.0F);                                  // y = -1 <= 0
    EXPECT_EQ(to_f(dx[2]), kind == Kind::Relu6 ? 0.0F : 4.0F);    // 7 >= 6 for relu6
  }
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
