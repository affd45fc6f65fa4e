// The CUDA backend against the CPU (oneDNN) backend at strict fp32: small
// graphs that exercise each op type, forward and backward (conv with bias and
// stride, conv+BN+ReLU fused, residual blocks with BN+add+ReLU fused and a
// tensor read twice, max/avg/adaptive pooling, FC with and without an explicit
// flatten, concat, depthwise conv with ReLU6 and BN+add fused without ReLU,
// unfused add, a standalone BatchNorm whose output is read twice), and one
// whole ResNet-50 step at a small size. Both backends start from the same
// weights (kernels/init.h) and train on the same host-generated batch; the
// CUDA executable runs its first two steps eagerly and the later ones from its
// captured CUDA graph, so the comparison covers graph replays too.
//
// Tolerances: strict fp32 on both sides (cuDNN engines with the TENSOR_CORE
// note excluded, cuBLASLt without tensor ops; conv.h, fc.h), so differences
// come only from summation order: the loss and every parameter slot's
// gradient agree to 1e-4 in relative (norm-wise) error, as the task of the
// backend asks. The whole ResNet-50 allows 1e-3 on gradients: 53 layers of
// differently ordered fp32 sums compound, and BatchNorm over 8 values per
// channel in the last stage amplifies them. TF32 keeps 10 mantissa bits (unit
// roundoff 2^-11, so about 1e-3 after accumulation), fp16 storage the same and
// bf16 7 bits (about 1e-2): those precisions cannot meet these tolerances and
// are tested for learning in executable_test instead.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
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
using models::PoolAttrs;

ConvAttrs conv(int k, int r, int pad, bool bias = false, int stride = 1, int groups = 1) {
  ConvAttrs a;
  a.out_channels = k;
  a.kernel_h = a.kernel_w = r;
  a.pad_h = a.pad_w = pad;
  a.stride_h = a.stride_w = stride;
  a.groups = groups;
  a.bias = bias;
  // PyTorch's default init gives every layer weights of similar scale, so no
  // gradient slot is tiny against the others.
  a.weight_init = models::Init{models::Init::Kind::DefaultUniform};
  a.bias_init = models::Init{models::Init::Kind::DefaultBiasUniform};
  return a;
}

PoolAttrs pool(PoolAttrs::Kind kind, int k, int s, int p, bool ceil_mode = false,
               bool count_include_pad = true) {
  PoolAttrs a;
  a.kind = kind;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = count_include_pad;
  return a;
}

NodeId head(Graph& g, NodeId x, int classes) {
  const NodeId gp = g.add_global_avg_pool(x, "head.pool");
  const NodeId fc =
      g.add_fc(g.add_flatten(gp, "head.flatten"), {.out_features = classes}, "head.fc");
  return g.add_softmax_cross_entropy(fc, "loss");
}

/// conv (bias, stride 2) → flatten (a transpose in NHWC) → fc.
Graph conv_fc() {
  Graph g("conv_fc");
  const NodeId c = g.add_conv(g.input(), conv(8, 3, 1, true, 2), "conv");
  const NodeId fc = g.add_fc(g.add_flatten(c, "flatten"), {.out_features = 5}, "fc");
  g.add_softmax_cross_entropy(fc, "loss");
  return g;
}

/// conv → BN → ReLU (fused) → global pool → fc.
Graph conv_bn_relu() {
  Graph g("conv_bn_relu");
  const NodeId c = g.add_conv(g.input(), conv(16, 3, 1), "conv");
  head(g, g.add_relu(g.add_batchnorm(c, {}, "bn"), "relu"), 7);
  return g;
}

/// A residual block: relu1 feeds conv2 and the add (its gradient sums two
/// consumers); BN+add+ReLU fused; a projection branch (BN+add without ReLU
/// fusion on the other input); max pool at the end.
Graph residual() {
  Graph g("residual");
  const NodeId c1 = g.add_conv(g.input(), conv(8, 3, 1), "conv1");
  const NodeId r1 = g.add_relu(g.add_batchnorm(c1, {}, "bn1"), "relu1");
  const NodeId b2 = g.add_batchnorm(g.add_conv(r1, conv(8, 3, 1), "conv2"), {}, "bn2");
  const NodeId r2 = g.add_relu(g.add_add({b2, r1}, "add"), "relu2");
  const NodeId b3 = g.add_batchnorm(g.add_conv(r2, conv(16, 3, 1, false, 2), "conv3"), {}, "bn3");
  const NodeId proj =
      g.add_batchnorm(g.add_conv(r2, conv(16, 1, 0, false, 2), "proj"), {}, "proj_bn");
  const NodeId r3 = g.add_relu(g.add_add({b3, proj}, "add2"), "relu3");
  head(g, g.add_pool(r3, pool(PoolAttrs::Kind::Max, 3, 2, 1), "maxpool"), 6);
  return g;
}

/// Max pool, average pools (ceil_mode, count_include_pad both ways), adaptive
/// average pool to 2×2 and an FC straight on the [N, C, 2, 2] map (no flatten
/// node: the FC flattens in NHWC itself).
Graph pools() {
  Graph g("pools");
  const NodeId c = g.add_relu(g.add_conv(g.input(), conv(6, 3, 1, true), "conv"), "relu");
  const NodeId m = g.add_pool(c, pool(PoolAttrs::Kind::Max, 3, 2, 1), "maxpool");
  const NodeId a = g.add_pool(m, pool(PoolAttrs::Kind::Avg, 3, 2, 1, true, false), "avgpool_ceil");
  const NodeId b = g.add_pool(a, pool(PoolAttrs::Kind::Avg, 2, 1, 1), "avgpool_pad");
  const NodeId ad = g.add_adaptive_avg_pool(b, 2, 2, "adaptive");
  g.add_softmax_cross_entropy(g.add_fc(ad, {.out_features = 4}, "fc"), "loss");
  return g;
}

/// Inception-like branches joined by concat, adaptive pooling to 2×2 and a
/// flatten that reorders in NHWC.
Graph inception() {
  Graph g("inception");
  const NodeId stem = g.add_relu(g.add_conv(g.input(), conv(6, 3, 1, true), "stem"), "stem_relu");
  const NodeId a = g.add_conv(stem, conv(4, 1, 0, true), "branch1x1");
  const NodeId b = g.add_relu(g.add_conv(stem, conv(4, 3, 1, true), "branch3x3"), "branch3x3_relu");
  const NodeId c = g.add_pool(stem, pool(PoolAttrs::Kind::Avg, 3, 1, 1), "branch_pool");
  const NodeId cat = g.add_relu(g.add_concat({a, b, c}, "concat"), "concat_relu");
  const NodeId flat = g.add_flatten(g.add_adaptive_avg_pool(cat, 2, 2, "adaptive"), "flatten");
  g.add_softmax_cross_entropy(g.add_fc(flat, {.out_features = 5}, "fc"), "loss");
  return g;
}

/// A MobileNetV2 inverted residual: 1×1 expand + BN + ReLU6, depthwise 3×3 +
/// BN + ReLU6, 1×1 project + BN fused with the skip add (no ReLU).
Graph mobile() {
  Graph g("mobile");
  const NodeId stem = g.add_relu6(
      g.add_batchnorm(g.add_conv(g.input(), conv(8, 3, 1), "stem"), {}, "stem_bn"), "stem_relu6");
  const NodeId e = g.add_relu6(
      g.add_batchnorm(g.add_conv(stem, conv(16, 1, 0), "expand"), {}, "expand_bn"), "expand_relu6");
  const NodeId d = g.add_relu6(
      g.add_batchnorm(g.add_conv(e, conv(16, 3, 1, false, 1, 16), "depthwise"), {}, "depthwise_bn"),
      "depthwise_relu6");
  const NodeId p = g.add_batchnorm(g.add_conv(d, conv(8, 1, 0), "project"), {}, "project_bn");
  head(g, g.add_add({stem, p}, "add"), 3);
  return g;
}

/// Adds the BN-free way: two conv branches summed, ReLU on the sum (in place),
/// then two FC layers with a ReLU between them.
Graph plain_add() {
  Graph g("plain_add");
  const NodeId a = g.add_conv(g.input(), conv(6, 3, 1, true), "a");
  const NodeId b = g.add_conv(g.input(), conv(6, 1, 0, true), "b");
  const NodeId r = g.add_relu(g.add_add({a, b}, "add"), "relu");
  const NodeId p = g.add_pool(r, pool(PoolAttrs::Kind::Max, 2, 2, 0), "pool");
  const NodeId f1 =
      g.add_relu(g.add_fc(g.add_flatten(p, "flatten"), {.out_features = 12}, "fc1"), "fc1_relu");
  g.add_softmax_cross_entropy(g.add_fc(f1, {.out_features = 4}, "fc2"), "loss");
  return g;
}

/// A BatchNorm whose output has two readers (no fusion; the gradient of the
/// BN output sums a ReLU's and an add's), and a ReLU that cannot run in place.
Graph shared_bn() {
  Graph g("shared_bn");
  const NodeId b = g.add_batchnorm(g.add_conv(g.input(), conv(8, 3, 1), "conv"), {}, "bn");
  const NodeId r = g.add_relu(b, "relu");
  head(g, g.add_add({r, b}, "add"), 5);
  return g;
}

/// Host view of a flat fp32 device buffer.
std::vector<float> download(const BufferView& v) {
  std::vector<float> host(static_cast<size_t>(v.count));
  if (v.count > 0) {
    CNNBENCH_CHECK_CUDA(cudaMemcpy(host.data(), v.data, host.size() * 4, cudaMemcpyDeviceToHost));
  }
  return host;
}

std::vector<float> copy_host(const BufferView& v) {
  const auto* p = static_cast<const float*>(v.data);
  return std::vector<float>(p, p + v.count);
}

double norm(const std::vector<float>& v, int64_t offset, int64_t count) {
  double s = 0;
  for (int64_t i = offset; i < offset + count; ++i) s += double(v[size_t(i)]) * v[size_t(i)];
  return std::sqrt(s);
}

double diff_norm(const std::vector<float>& a, const std::vector<float>& b, int64_t offset,
                 int64_t count) {
  double s = 0;
  for (int64_t i = offset; i < offset + count; ++i) {
    const double d = double(a[size_t(i)]) - b[size_t(i)];
    s += d * d;
  }
  return std::sqrt(s);
}

const char* role_name(models::ParamRole r) {
  switch (r) {
    case models::ParamRole::Weight:
      return "weight";
    case models::ParamRole::Bias:
      return "bias";
    case models::ParamRole::Scale:
      return "scale";
    case models::ParamRole::Shift:
      return "shift";
  }
  return "?";
}

/// Expects every slot of `got` within rtol (norm-wise) of `want`, with a floor
/// of 1e-7 of the whole buffer's norm for slots that are nearly zero.
void expect_slots_close(const Graph& g, const std::vector<float>& got,
                        const std::vector<float>& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const double floor = 1e-7 * norm(want, 0, static_cast<int64_t>(want.size()));
  for (const auto& slot : g.param_layout()) {
    const double err = diff_norm(got, want, slot.offset, slot.count);
    const double ref = norm(want, slot.offset, slot.count);
    EXPECT_LE(err, rtol * ref + floor)
        << what << " of " << g.node(slot.node).name << " " << role_name(slot.role) << " ("
        << slot.count << " elements): relative error " << (ref > 0 ? err / ref : err);
    for (int64_t i = slot.offset; i < slot.offset + slot.count; ++i) {
      ASSERT_TRUE(std::isfinite(got[size_t(i)]))
          << what << " of " << g.node(slot.node).name << " has a non-finite element at "
          << i - slot.offset;
    }
  }
}

struct Tolerance {
  double loss = 1e-4;
  double grad = 1e-4;
};

/// Compiles `graph` on both backends with the same options at fp32, trains
/// `steps` steps on the same host batch and compares the loss and every
/// gradient slot at each step, the parameter updates at the end and a
/// forward-only loss (running BatchNorm statistics) after training.
void compare_with_cpu(const Graph& graph, DataFormat format, int batch, int image, int steps,
                      Tolerance tol = {}) {
  if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  std::unique_ptr<Backend> cpu;
  try {
    cpu = make_cpu_backend();
  } catch (const BackendUnavailable& e) {
    GTEST_SKIP() << "no CPU backend to compare with: " << e.what();
  }
  CompileOptions o;
  o.batch = batch;
  o.image_h = o.image_w = image;
  o.precision = Precision::Fp32;
  o.format = format;
  o.seed = 1234;
  o.cudnn_autotune = false;
  o.cuda_graph = true;
  const auto cpu_exec = cpu->compile(graph, o);
  const auto gpu_exec = make_cuda_backend()->compile(graph, o);
  SCOPED_TRACE(graph.name() + " " + to_string(format) + ": " + gpu_exec->description());

  // The same images and labels on both sides (init.h's generator, in `format`).
  Graph shaped = graph;
  shaped.infer_shapes(batch, image, image);
  const int classes = shaped.node(shaped.node(shaped.output()).inputs[0]).output.c;
  const int channels = std::get<models::InputAttrs>(shaped.node(0).attrs).channels;
  std::vector<float> images(static_cast<size_t>(batch) * channels * image * image);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  synthetic_batch(99, batch, channels, image, image, format, classes, images.data(), labels.data());
  DeviceBuffer d_images(int64_t(images.size() * 4), "test images");
  DeviceBuffer d_labels(int64_t(labels.size() * 4), "test labels");
  CNNBENCH_CHECK_CUDA(
      cudaMemcpy(d_images.get(), images.data(), images.size() * 4, cudaMemcpyHostToDevice));
  CNNBENCH_CHECK_CUDA(
      cudaMemcpy(d_labels.get(), labels.data(), labels.size() * 4, cudaMemcpyHostToDevice));
  CNNBENCH_CHECK_CUDA(
      cudaDeviceSynchronize());  // the executable's stream does not wait for the default one
  const Batch gpu_batch{d_images.get(), d_labels.as<int32_t>(), batch};
  const Batch cpu_batch = cpu_exec->synthetic_batch(99);

  const std::vector<float> initial = download(gpu_exec->parameters());
  ASSERT_EQ(initial, copy_host(cpu_exec->parameters()))
      << "both backends start from init.h's weights";
  for (int step = 1; step <= steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    cpu_exec->train_step(cpu_batch, {});
    gpu_exec->train_step(gpu_batch, {});
    const float want = cpu_exec->loss();
    const float got = gpu_exec->loss();
    ASSERT_TRUE(std::isfinite(got));
    EXPECT_NEAR(got, want, tol.loss * std::abs(want) + 1e-7) << "loss";
    expect_slots_close(shaped, download(gpu_exec->gradients()), copy_host(cpu_exec->gradients()),
                       tol.grad, "gradient");
  }
  // Parameter updates accumulate every step's gradients through the momentum.
  std::vector<float> got = download(gpu_exec->parameters());
  std::vector<float> want = copy_host(cpu_exec->parameters());
  for (size_t i = 0; i < initial.size(); ++i) {
    got[i] -= initial[i];
    want[i] -= initial[i];
  }
  expect_slots_close(shaped, got, want, tol.grad, "parameter update");

  cpu_exec->forward_only(cpu_batch);
  gpu_exec->forward_only(gpu_batch);
  EXPECT_NEAR(gpu_exec->loss(), cpu_exec->loss(), tol.loss * std::abs(cpu_exec->loss()) + 1e-7)
      << "forward-only loss";
}

struct OpCase {
  const char* name;
  Graph (*build)();
};

class CudaVsCpu : public ::testing::TestWithParam<std::tuple<OpCase, DataFormat>> {};

std::string op_case_name(const ::testing::TestParamInfo<std::tuple<OpCase, DataFormat>>& p) {
  return std::string(std::get<0>(p.param).name) + "_" + to_string(std::get<1>(p.param));
}

TEST_P(CudaVsCpu, LossGradientsAndUpdatesMatchOverFourSteps) {
  const auto& [op, format] = GetParam();
  // 4 steps: two eager, the captured one, one replay.
  compare_with_cpu(op.build(), format, /*batch=*/4, /*image=*/12, /*steps=*/4);
}

INSTANTIATE_TEST_SUITE_P(
    Ops, CudaVsCpu,
    ::testing::Combine(::testing::Values(OpCase{"conv_fc", conv_fc},
                                         OpCase{"conv_bn_relu", conv_bn_relu},
                                         OpCase{"residual", residual}, OpCase{"pools", pools},
                                         OpCase{"inception", inception}, OpCase{"mobile", mobile},
                                         OpCase{"plain_add", plain_add},
                                         OpCase{"shared_bn", shared_bn}),
                       ::testing::Values(DataFormat::NHWC, DataFormat::NCHW)),
    op_case_name);

TEST(CudaVsCpuResnet50, OneSmallTrainingStepMatches) {
  // Batch 2 at 64×64 keeps the CPU side to about a second; layer4 is 2×2.
  const Graph g = models::build_model("resnet50", 1000);
  compare_with_cpu(g, DataFormat::NHWC, /*batch=*/2, /*image=*/64, /*steps=*/1,
                   Tolerance{.loss = 1e-4, .grad = 1e-3});
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
