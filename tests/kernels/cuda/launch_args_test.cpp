// Host-side behaviour of our CUDA kernels' launchers that needs no GPU: output
// sizes, scratch sizes, and std::invalid_argument for violated preconditions
// (thrown before anything is launched; the pointers passed are never read).
#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/batchnorm.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/optimizer.cuh"
#include "kernels/cuda/pool.cuh"

namespace cnnbench::kernels::cuda {
namespace {

models::PoolAttrs window(int k, int s, int p, bool ceil_mode) {
  models::PoolAttrs a;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.ceil_mode = ceil_mode;
  return a;
}

TEST(PoolOutputShapeTest, MatchesPyTorch) {
  // torch.nn.MaxPool2d / AvgPool2d output sizes.
  const models::Shape resnet_stem = pool_output_shape({8, 64, 112, 112}, window(3, 2, 1, false));
  EXPECT_EQ(resnet_stem, (models::Shape{8, 64, 56, 56}));
  EXPECT_EQ(pool_output_shape({1, 64, 224, 224}, window(2, 2, 0, false)).h, 112);   // VGG
  EXPECT_EQ(pool_output_shape({1, 64, 112, 112}, window(3, 2, 0, true)).h, 56);     // GoogLeNet, ceil
  EXPECT_EQ(pool_output_shape({1, 64, 112, 112}, window(3, 2, 0, false)).h, 55);    // same, floor
  EXPECT_EQ(pool_output_shape({1, 64, 147, 147}, window(3, 2, 0, false)).h, 73);    // Inception3
  EXPECT_EQ(pool_output_shape({1, 8, 7, 7}, window(3, 1, 1, true)).h, 7);
  // ceil_mode would start the last window in the padding: dropped (5 → 3, not 4).
  EXPECT_EQ(pool_output_shape({1, 1, 5, 5}, window(2, 2, 1, true)).h, 3);
  EXPECT_EQ(pool_output_shape({1, 1, 6, 6}, window(3, 2, 0, true)).h, 3);
}

TEST(PoolOutputShapeTest, RejectsWhatPyTorchRejects) {
  EXPECT_THROW(pool_output_shape({1, 1, 8, 8}, window(3, 1, 2, false)), std::invalid_argument);  // pad > k/2
  EXPECT_THROW(pool_output_shape({1, 1, 2, 2}, window(5, 1, 0, false)), std::invalid_argument);  // too small
  EXPECT_THROW(pool_output_shape({1, 1, 8, 8}, window(0, 1, 0, false)), std::invalid_argument);
  EXPECT_THROW(pool_output_shape({1, 1, 8, 8}, window(2, 0, 0, false)), std::invalid_argument);
}

TEST(ScratchSizeTest, BatchNormScratchCoversPartialsAndCoefficients) {
  for (const models::Shape s : {models::Shape{2, 3, 5, 7}, models::Shape{256, 64, 56, 56},
                                models::Shape{256, 2048, 7, 7}, models::Shape{1, 1, 1, 2}}) {
    const int64_t bytes = batchnorm_scratch_bytes(s);
    const int64_t c = s.c;
    EXPECT_GE(bytes, (3 * c + (2 * c + 1)) * 4) << "at least one block row of partials";
    EXPECT_LE(bytes, (3 * c + 1024 * (2 * c + 1)) * 4) << "at most 1024 block rows";
  }
  EXPECT_EQ(softmax_cross_entropy_scratch_bytes(256), 1024);
}

TEST(LauncherArgumentsTest, ViolatedPreconditionsThrowBeforeLaunching) {
  // Host arrays stand in for device pointers: every call below fails its
  // checks before it could use them.
  std::array<float, 64> f{};
  std::array<__half, 64> h{};
  std::array<int32_t, 4> i32{};
  float* fp = f.data();
  __half* hp = h.data();
  const models::Shape shape{2, 8, 4, 4};
  const models::BatchNormAttrs bn{};

  // BatchNorm: too little scratch; a single value per channel in training;
  // ReLU backward without the forward output.
  EXPECT_THROW(batchnorm_forward_training<__half>(hp, nullptr, hp, fp, fp, fp, fp, fp, fp, fp,
                                                  batchnorm_scratch_bytes(shape) - 4, shape,
                                                  DataFormat::NHWC, bn, true, nullptr),
               std::invalid_argument);
  EXPECT_THROW(batchnorm_forward_training<float>(fp, nullptr, fp, fp, fp, fp, fp, fp, fp, fp, 1 << 20,
                                                 models::Shape{1, 8, 1, 1}, DataFormat::NCHW, bn,
                                                 false, nullptr),
               std::invalid_argument);
  EXPECT_THROW(batchnorm_backward<float>(fp, nullptr, fp, fp + 1, nullptr, fp, fp, fp, fp, fp, fp,
                                         1 << 20, shape, DataFormat::NHWC, true, nullptr),
               std::invalid_argument);
  EXPECT_THROW(batchnorm_backward<float>(fp, fp, fp, fp + 1, fp + 1, fp, fp, fp, fp, fp, fp, 1 << 20,
                                         shape, DataFormat::NHWC, true, nullptr),
               std::invalid_argument)
      << "dz may not alias dx";

  // Pooling: a one-byte argmax cannot index a 17×17 window.
  EXPECT_THROW(maxpool_forward<float>(fp, fp, reinterpret_cast<uint8_t*>(fp), {1, 1, 32, 32},
                                      window(17, 1, 0, false), DataFormat::NCHW, nullptr),
               std::invalid_argument);

  // Loss: empty batch, too little scratch.
  EXPECT_THROW(softmax_cross_entropy<float>(fp, i32.data(), fp, fp, nullptr, fp, 64, 0, 10, nullptr),
               std::invalid_argument);
  EXPECT_THROW(softmax_cross_entropy<float>(fp, i32.data(), fp, fp, nullptr, fp, 4, 4, 10, nullptr),
               std::invalid_argument);

  // Optimizer and loss scaling.
  EXPECT_THROW((sgd_momentum_update<float, float>(fp, fp, fp, nullptr, -1, OptimizerConfig{}, nullptr,
                                                  nullptr, nullptr)),
               std::invalid_argument);
  EXPECT_THROW(loss_scale_update(reinterpret_cast<LossScalerState*>(fp), 0, nullptr), std::invalid_argument);
  EXPECT_THROW(loss_scaler_init(reinterpret_cast<LossScalerState*>(fp), 0.0F, nullptr), std::invalid_argument);

  // Element-wise: one input to add; mismatched concat channel list; dropout p
  // outside [0, 1] or without a step counter.
  const std::vector<const float*> one = {fp};
  EXPECT_THROW(add<float>(one, fp, 4, nullptr), std::invalid_argument);
  const std::vector<const float*> two = {fp, fp};
  const std::vector<int> three_channels = {1, 2, 3};
  EXPECT_THROW(concat_channels<float>(two, three_channels, fp, 1, 2, 2, DataFormat::NHWC, nullptr),
               std::invalid_argument);
  uint64_t step = 0;
  EXPECT_THROW(dropout_forward<float>(fp, fp, 4, DropoutMask{.p = 1.5F, .step = &step}, nullptr),
               std::invalid_argument);
  EXPECT_THROW(dropout_forward<float>(fp, fp, 4, DropoutMask{.p = 0.5F}, nullptr), std::invalid_argument);
  EXPECT_THROW(activation_forward<float>(fp, fp, -1, models::ActivationAttrs::Kind::Relu, nullptr),
               std::invalid_argument);
  EXPECT_THROW(pad_channels_nhwc<float>(fp, fp, 4, 3, 2, nullptr), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
