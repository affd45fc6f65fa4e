// The CUDA Executable on its own: CUDA-graph replays against eager steps,
// learning on a fixed batch at fp16 and bf16, on_grad_ready ranges, the padded
// first-layer input, NHWC against NCHW, forward-only executables, every zoo
// model through a few captured steps, memory reports, option errors and the
// out-of-memory message. Each test skips, with the runtime's reason, where no
// CUDA device is usable. Comparisons with the CPU backend are in
// backend_vs_cpu_test.cpp.
#include "kernels/cuda/executable.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/resources.h"
#include "kernels/error.h"
#include "kernels/init.h"
#include "models/graph.h"
#include "models/zoo.h"

namespace cnnbench::kernels::cuda {
namespace {

using models::ConvAttrs;
using models::Graph;
using models::NodeId;

#define SKIP_WITHOUT_CUDA()                                                                 \
  do {                                                                                      \
    if (const auto skip_reason_ = cuda_unavailable_reason()) GTEST_SKIP() << *skip_reason_; \
  } while (0)

ConvAttrs conv(int k, int r, int pad, int stride = 1) {
  ConvAttrs a;
  a.out_channels = k;
  a.kernel_h = a.kernel_w = r;
  a.pad_h = a.pad_w = pad;
  a.stride_h = a.stride_w = stride;
  return a;
}

/// A small residual network: stem conv+BN+ReLU, a strided conv+BN+ReLU, a
/// residual block (BN+add+ReLU fused), global pool, optional dropout, FC.
Graph small_resnet(int classes, bool dropout) {
  Graph g(dropout ? "small_resnet_dropout" : "small_resnet");
  NodeId x = g.add_relu(
      g.add_batchnorm(g.add_conv(g.input(), conv(16, 3, 1), "stem"), {}, "stem_bn"), "stem_relu");
  x = g.add_relu(g.add_batchnorm(g.add_conv(x, conv(32, 3, 1, 2), "down"), {}, "down_bn"),
                 "down_relu");
  const NodeId r =
      g.add_relu(g.add_batchnorm(g.add_conv(x, conv(32, 3, 1), "block.conv1"), {}, "block.bn1"),
                 "block.relu1");
  const NodeId b = g.add_batchnorm(g.add_conv(r, conv(32, 3, 1), "block.conv2"), {}, "block.bn2");
  x = g.add_relu(g.add_add({b, x}, "block.add"), "block.relu2");
  x = g.add_flatten(g.add_global_avg_pool(x, "pool"), "flatten");
  if (dropout) x = g.add_dropout(x, 0.3F, "dropout");
  g.add_softmax_cross_entropy(g.add_fc(x, {.out_features = classes}, "fc"), "loss");
  return g;
}

CompileOptions options(Precision p, int batch = 16, int image = 32) {
  CompileOptions o;
  o.batch = batch;
  o.image_h = o.image_w = image;
  o.precision = p;
  o.format = DataFormat::NHWC;
  o.seed = 7;
  o.cudnn_autotune = false;  // deterministic engine choice: the same plans in every executable
  return o;
}

std::unique_ptr<CudaExecutable> compile(const Graph& g, const CompileOptions& o) {
  return std::make_unique<CudaExecutable>(g, o);
}

std::vector<float> download(const BufferView& v) {
  std::vector<float> host(static_cast<size_t>(v.count));
  if (v.count > 0) {
    CNNBENCH_CHECK_CUDA(cudaMemcpy(host.data(), v.data, host.size() * 4, cudaMemcpyDeviceToHost));
  }
  return host;
}

TEST(CudaExecutable, GraphReplaysGiveTheEagerLosses) {
  SKIP_WITHOUT_CUDA();
  // fp16 with dropout: the loss scale and the dropout step live on the device
  // and must advance inside the replayed graph exactly as in eager steps.
  const Graph g = small_resnet(10, /*dropout=*/true);
  CompileOptions o = options(Precision::Fp16);
  o.cuda_graph = false;
  const auto eager = compile(g, o);
  o.cuda_graph = true;
  const auto graphed = compile(g, o);
  const Batch be = eager->synthetic_batch(3);
  const Batch bg = graphed->synthetic_batch(3);
  for (int step = 1; step <= 5; ++step) {
    eager->train_step(be, {});
    graphed->train_step(bg, {});
    const float le = eager->loss();
    const float lg = graphed->loss();
    ASSERT_TRUE(std::isfinite(le)) << "step " << step;
    // The same plans and kernels; only atomics-based cuDNN engines may sum in
    // another order, which fp16 storage keeps within this bound.
    EXPECT_NEAR(lg, le, 2e-3 * std::abs(le)) << "step " << step;
  }
  EXPECT_EQ(graphed->loss_scale(), eager->loss_scale());
  EXPECT_EQ(eager->graph_captures(), 0);
  EXPECT_EQ(eager->graph_launches(), 0);
  EXPECT_EQ(graphed->graph_captures(), 1);
  EXPECT_EQ(graphed->graph_launches(), 3);  // steps 3 (captured), 4 and 5
}

TEST(CudaExecutable, DropoutMasksChangeFromStepToStepInsideTheGraph) {
  SKIP_WITHOUT_CUDA();
  // With the learning rate at 0 the weights never change, so successive losses
  // differ only through the dropout masks (and BN running statistics, which
  // training-mode BN does not read).
  const Graph g = small_resnet(10, /*dropout=*/true);
  CompileOptions o = options(Precision::Fp32);
  o.optimizer.learning_rate = 0.0F;
  o.optimizer.weight_decay = 0.0F;
  const auto exec = compile(g, o);
  const Batch b = exec->synthetic_batch(5);
  std::vector<float> losses;
  for (int step = 0; step < 5; ++step) {
    exec->train_step(b, {});
    losses.push_back(exec->loss());
  }
  for (size_t i = 1; i < losses.size(); ++i)
    EXPECT_NE(losses[i], losses[i - 1]) << "step " << i + 1;
}

void expect_learns(Precision p, bool autotune) {
  const Graph g = small_resnet(10, /*dropout=*/false);
  CompileOptions o = options(p);
  o.cudnn_autotune = autotune;
  o.optimizer.learning_rate = 0.05F;
  const auto exec = compile(g, o);
  SCOPED_TRACE(exec->description());
  const Batch b = exec->synthetic_batch(11);
  exec->train_step(b, {});
  const float first = exec->loss();
  ASSERT_TRUE(std::isfinite(first));
  float last = first;
  for (int step = 2; step <= 50 && last > first / 2; ++step) {
    exec->train_step(b, {});
    last = exec->loss();
  }
  EXPECT_LT(last, first / 2) << "from " << first;
  const float scale = exec->loss_scale();
  EXPECT_TRUE(std::isfinite(scale));
  if (p == Precision::Fp16) {
    EXPECT_GE(scale, 1.0F);
    EXPECT_LE(scale, 65536.0F);
  } else {
    EXPECT_EQ(scale, 1.0F);
  }
}

TEST(CudaExecutable, LearnsAFixedBatchAtFp16) {
  SKIP_WITHOUT_CUDA();
  expect_learns(Precision::Fp16, /*autotune=*/true);
}

TEST(CudaExecutable, LearnsAFixedBatchAtBf16) {
  SKIP_WITHOUT_CUDA();
  expect_learns(Precision::Bf16, /*autotune=*/false);
}

TEST(CudaExecutable, LearnsAFixedBatchAtTf32) {
  SKIP_WITHOUT_CUDA();
  expect_learns(Precision::Tf32, /*autotune=*/false);
}

TEST(CudaExecutable, GradReadyRangesCoverTheBufferInOrderOncePerCallingStep) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, false);
  for (const bool use_graph : {false, true}) {
    SCOPED_TRACE(use_graph ? "CUDA graph" : "eager");
    CompileOptions o = options(Precision::Fp16);
    o.cuda_graph = use_graph;
    const auto exec = compile(g, o);
    const int64_t total = exec->parameters().count;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    const GradReadyFn record = [&](int64_t offset, int64_t count) {
      ranges.emplace_back(offset, count);
    };
    const Batch b = exec->synthetic_batch(1);
    for (int step = 0; step < 5; ++step) exec->train_step(b, record);
    exec->synchronize();
    // Replays do not call back: eager runs 5 steps, the graph path 3 (two
    // eager and the captured one).
    int64_t expected_offset = 0;
    int coverings = 0;
    for (const auto& [offset, count] : ranges) {
      ASSERT_EQ(offset, expected_offset);
      ASSERT_GT(count, 0);
      expected_offset += count;
      if (expected_offset == total) {
        ++coverings;
        expected_offset = 0;
      }
    }
    EXPECT_EQ(expected_offset, 0) << "a step's ranges stopped short of the buffer's end";
    EXPECT_EQ(coverings, use_graph ? 3 : 5);
  }
}

TEST(CudaExecutable, ForkedStreamThatJoinsBackIsCapturedAndReplayed) {
  SKIP_WITHOUT_CUDA();
  // The on_grad_ready contract: fork a side stream from the compute stream by
  // an event, work there, join back before the last range returns. The side
  // work here copies every range into a mirror buffer; after replays the
  // mirror must equal the gradients of the last step.
  const Graph g = small_resnet(10, false);
  const auto exec = compile(g, options(Precision::Fp32));
  const int64_t total = exec->gradients().count;
  DeviceBuffer mirror(total * 4, "gradient mirror");
  Stream side;
  Event forked(true), joined(true);
  const GradReadyFn copy = [&](int64_t offset, int64_t count) {
    forked.record(exec->stream());
    CNNBENCH_CHECK_CUDA(cudaStreamWaitEvent(side.get(), forked.get(), 0));
    CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(
        mirror.as<float>() + offset, static_cast<const float*>(exec->gradients().data) + offset,
        static_cast<size_t>(count) * 4, cudaMemcpyDeviceToDevice, side.get()));
    if (offset + count == total) {
      joined.record(side.get());
      CNNBENCH_CHECK_CUDA(cudaStreamWaitEvent(exec->stream(), joined.get(), 0));
    }
  };
  const Batch b = exec->synthetic_batch(2);
  for (int step = 0; step < 5; ++step) exec->train_step(b, copy);
  exec->synchronize();
  EXPECT_EQ(exec->graph_launches(), 3);
  EXPECT_EQ(download({mirror.get(), total, DType::F32}), download(exec->gradients()));
}

TEST(CudaExecutable, UnjoinedForkedStreamFailsTheCaptureWithAClearError) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, false);
  const auto exec = compile(g, options(Precision::Fp32));
  Stream side;
  Event forked(true);
  const GradReadyFn leaky = [&](int64_t, int64_t) {
    forked.record(exec->stream());
    CNNBENCH_CHECK_CUDA(cudaStreamWaitEvent(side.get(), forked.get(), 0));
  };
  const Batch b = exec->synthetic_batch(2);
  exec->train_step(b, leaky);
  exec->train_step(b, leaky);
  try {
    exec->train_step(b, leaky);  // captured
    FAIL() << "capture with an unjoined stream succeeded";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("Unjoined"), std::string::npos) << e.what();
  }
  side.synchronize();
}

TEST(CudaExecutable, PaddedInputFromSyntheticAndExternalBatchesAgree) {
  SKIP_WITHOUT_CUDA();
  // fp16 NHWC pads the 3-channel images to 8: synthetic_batch writes the padded
  // form; an external (N, H, W, 3) batch is padded at the start of each step.
  const Graph g = small_resnet(10, false);
  const CompileOptions o = options(Precision::Fp16, 8, 16);
  const auto a = compile(g, o);
  const auto b = compile(g, o);
  ASSERT_EQ(a->stored_input_channels(), 8);
  const Batch padded = a->synthetic_batch(4);
  a->synchronize();
  const size_t pixels = size_t(8) * 16 * 16;
  std::vector<uint16_t> stored(pixels * 8);
  CNNBENCH_CHECK_CUDA(
      cudaMemcpy(stored.data(), padded.images, stored.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<uint16_t> plain(pixels * 3);
  for (size_t p = 0; p < pixels; ++p) {
    for (size_t c = 0; c < 8; ++c) {
      if (c < 3) {
        plain[p * 3 + c] = stored[p * 8 + c];
      } else {
        ASSERT_EQ(stored[p * 8 + c], 0) << "padding channel " << c << " of pixel " << p;
      }
    }
  }
  DeviceBuffer images(int64_t(plain.size() * 2), "external images");
  DeviceBuffer labels(8 * 4, "external labels");
  CNNBENCH_CHECK_CUDA(
      cudaMemcpy(images.get(), plain.data(), plain.size() * 2, cudaMemcpyHostToDevice));
  CNNBENCH_CHECK_CUDA(cudaMemcpy(labels.get(), padded.labels, 8 * 4, cudaMemcpyDeviceToDevice));
  CNNBENCH_CHECK_CUDA(cudaDeviceSynchronize());
  const Batch external{images.get(), labels.as<int32_t>(), 8};
  for (int step = 0; step < 4; ++step) {
    a->train_step(padded, {});
    b->train_step(external, {});
    EXPECT_NEAR(b->loss(), a->loss(), 2e-3 * std::abs(a->loss())) << "step " << step + 1;
  }
}

TEST(CudaExecutable, NhwcAndNchwAgreeAtFp32) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, false);
  CompileOptions o = options(Precision::Fp32, 4, 16);
  std::vector<std::vector<float>> losses(2);
  std::vector<std::vector<float>> grads(2);
  for (const DataFormat f : {DataFormat::NHWC, DataFormat::NCHW}) {
    o.format = f;
    const auto exec = compile(g, o);
    const size_t k = f == DataFormat::NHWC ? 0 : 1;
    // fp32 NHWC pads the images to 4 channels (16-byte pixels); NCHW does not:
    // the comparison below therefore also checks the padded fp32 stem.
    ASSERT_EQ(exec->stored_input_channels(), f == DataFormat::NHWC ? 4 : 3);
    // The same logical images in each layout (init.h's generator).
    std::vector<float> images(size_t(4) * 3 * 16 * 16);
    std::vector<int32_t> labels(4);
    synthetic_batch(21, 4, 3, 16, 16, f, 10, images.data(), labels.data());
    DeviceBuffer d_images(int64_t(images.size() * 4), "images");
    DeviceBuffer d_labels(16, "labels");
    CNNBENCH_CHECK_CUDA(
        cudaMemcpy(d_images.get(), images.data(), images.size() * 4, cudaMemcpyHostToDevice));
    CNNBENCH_CHECK_CUDA(cudaMemcpy(d_labels.get(), labels.data(), 16, cudaMemcpyHostToDevice));
    CNNBENCH_CHECK_CUDA(cudaDeviceSynchronize());
    const Batch b{d_images.get(), d_labels.as<int32_t>(), 4};
    for (int step = 0; step < 3; ++step) {
      exec->train_step(b, {});
      losses[k].push_back(exec->loss());
    }
    grads[k] = download(exec->gradients());
  }
  for (size_t i = 0; i < losses[0].size(); ++i) {
    EXPECT_NEAR(losses[1][i], losses[0][i], 1e-4 * std::abs(losses[0][i])) << "step " << i + 1;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < grads[0].size(); ++i) {
    num += (double(grads[1][i]) - grads[0][i]) * (double(grads[1][i]) - grads[0][i]);
    den += double(grads[0][i]) * grads[0][i];
  }
  EXPECT_LE(std::sqrt(num), 1e-4 * std::sqrt(den));
}

TEST(CudaExecutable, ForwardOnlyExecutableHasNoTrainingState) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, true);
  CompileOptions o = options(Precision::Bf16);
  o.training = false;
  const auto exec = compile(g, o);
  const Batch b = exec->synthetic_batch(8);
  for (int i = 0; i < 4; ++i) exec->forward_only(b);  // two eager, captured, replayed
  const float l1 = exec->loss();
  exec->forward_only(b);
  EXPECT_TRUE(std::isfinite(l1));
  EXPECT_EQ(exec->loss(), l1) << "inference is deterministic: running statistics, no dropout";
  EXPECT_EQ(exec->memory().gradients, 0);
  EXPECT_EQ(exec->gradients().count, 0);
  EXPECT_THROW(exec->train_step(b, {}), std::logic_error);
}

TEST(CudaExecutable, ForwardOnlyAfterTrainingUsesRunningStatistics) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, true);
  const auto exec = compile(g, options(Precision::Fp16));
  const Batch b = exec->synthetic_batch(8);
  for (int i = 0; i < 3; ++i) exec->train_step(b, {});
  exec->forward_only(b);
  const float l1 = exec->loss();
  exec->forward_only(b);
  EXPECT_TRUE(std::isfinite(l1));
  EXPECT_EQ(exec->loss(), l1);
}

TEST(CudaExecutable, RejectsBadOptionsNamingThem) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, false);
  CompileOptions o = options(Precision::Fp16);
  o.batch = 0;
  try {
    compile(g, o);
    FAIL() << "batch 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("batch size 0"), std::string::npos) << e.what();
  }
  o = options(Precision::Fp16);
  o.device = 1000;
  try {
    compile(g, o);
    FAIL() << "device 1000 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("device 1000"), std::string::npos) << e.what();
  }
  Graph no_loss("no_loss");
  no_loss.add_relu(no_loss.input(), "relu");
  EXPECT_THROW(compile(no_loss, options(Precision::Fp16)), std::invalid_argument);
  const auto exec = compile(g, options(Precision::Fp16));
  Batch b = exec->synthetic_batch(1);
  b.n = 3;
  EXPECT_THROW(exec->train_step(b, {}), std::invalid_argument);
}

TEST(CudaExecutable, AbsurdBatchIsAnOutOfMemoryErrorWithAFittingBatch) {
  SKIP_WITHOUT_CUDA();
  const Graph g = models::build_model("resnet50", 1000);
  CompileOptions o = options(Precision::Fp16, 1 << 20, 224);
  try {
    compile(g, o);
    FAIL() << "a batch of 2^20 ResNet-50 images fitted";
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("batch size 1048576"), std::string::npos) << what;
    EXPECT_NE(what.find("should fit"), std::string::npos) << what;
    EXPECT_NE(what.find("per image"), std::string::npos) << what;
    EXPECT_FALSE(e.allocation().empty());
    EXPECT_GT(e.bytes(), int64_t{1} << 40);
  }
}

TEST(CudaExecutable, DescriptionAndMemoryReport) {
  SKIP_WITHOUT_CUDA();
  const Graph g = small_resnet(10, false);
  const auto exec = compile(g, options(Precision::Fp16));
  const std::string d = exec->description();
  EXPECT_NE(d.find("cuDNN 9."), std::string::npos) << d;
  EXPECT_NE(d.find("cuBLASLt"), std::string::npos) << d;
  EXPECT_NE(d.find("NHWC fp16"), std::string::npos) << d;
  EXPECT_NE(d.find("CUDA graph on"), std::string::npos) << d;
  EXPECT_NE(d.find("cuDNN plans"), std::string::npos) << d;
  const MemoryReport m = exec->memory();
  const int64_t p = exec->parameters().count;
  EXPECT_GE(m.parameters, 2 * 4 * p);  // masters and momentum
  EXPECT_GE(m.gradients, 4 * p);
  EXPECT_GT(m.activations, 0);
  EXPECT_GT(m.data, 0);
  EXPECT_EQ(exec->gradients().dtype, DType::F32);
}

/// Every zoo model at its default image size, batch 2, three fp16 steps (the
/// third captured) and a forward-only pass: every op at its real shapes.
class ZooOnCuda : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooOnCuda, ThreeCapturedStepsGiveFiniteLosses) {
  SKIP_WITHOUT_CUDA();
  const std::string name = GetParam();
  const Graph g = models::build_model(name, 1000);
  CompileOptions o = options(Precision::Fp16, 2, models::model_info(name).default_image_size);
  const auto exec = compile(g, o);
  SCOPED_TRACE(name + ": " + exec->description());
  const Batch b = exec->synthetic_batch(17);
  for (int step = 1; step <= 3; ++step) {
    exec->train_step(b, {});
    EXPECT_TRUE(std::isfinite(exec->loss())) << "step " << step;
  }
  exec->forward_only(b);
  EXPECT_TRUE(std::isfinite(exec->loss()));
  EXPECT_EQ(exec->graph_captures(), 1);
}

std::string model_test_name(const ::testing::TestParamInfo<std::string>& p) { return p.param; }

INSTANTIATE_TEST_SUITE_P(Models, ZooOnCuda,
                         ::testing::Values("resnet50", "resnet101", "vgg16", "alexnet", "googlenet",
                                           "inception3", "mobilenet_v2", "trivial"),
                         model_test_name);

}  // namespace
}  // namespace cnnbench::kernels::cuda
