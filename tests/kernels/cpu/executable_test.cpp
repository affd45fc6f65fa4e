// The CPU Executable on small graphs built with the Graph API: parameter
// gradients against finite differences of loss(), on_grad_ready ranges, NHWC vs
// NCHW agreement, learning on a fixed batch, forward-only runs and option checks.
#include "kernels/cpu/executable.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/error.h"
#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::ConvAttrs;
using models::Graph;
using models::NodeId;
using models::PoolAttrs;

ConvAttrs conv(int k, int r, int pad, bool bias = false, int stride = 1) {
  ConvAttrs a;
  a.out_channels = k;
  a.kernel_h = a.kernel_w = r;
  a.pad_h = a.pad_w = pad;
  a.stride_h = a.stride_w = stride;
  a.bias = bias;
  return a;
}

PoolAttrs pool(PoolAttrs::Kind kind, int k, int s, int p) {
  PoolAttrs a;
  a.kind = kind;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = s;
  a.pad_h = a.pad_w = p;
  return a;
}

/// conv–BN–ReLU–conv–BN–residual add–ReLU–pool–global pool–FC–loss; relu1
/// feeds both conv2 and the add, so its gradient sums two consumers. Average
/// pooling by default: max pooling over ReLU outputs has near-ties whose
/// arg-max a finite-difference step can flip (max pooling's backward is checked
/// on distinct values in pool_test).
Graph tiny_resnet(int classes = 10, PoolAttrs::Kind pooling = PoolAttrs::Kind::Avg) {
  Graph g("tiny_resnet", 3);
  const NodeId c1 = g.add_conv(g.input(), conv(8, 3, 1), "conv1");
  const NodeId r1 = g.add_relu(g.add_batchnorm(c1, {}, "bn1"), "relu1");
  const NodeId b2 = g.add_batchnorm(g.add_conv(r1, conv(8, 3, 1), "conv2"), {}, "bn2");
  const NodeId r2 = g.add_relu(g.add_add({b2, r1}, "add"), "relu2");
  const NodeId p = g.add_global_avg_pool(g.add_pool(r2, pool(pooling, 2, 2, 0), "pool"), "avgpool");
  const NodeId fc = g.add_fc(g.add_flatten(p, "flatten"), {.out_features = classes}, "fc");
  g.add_softmax_cross_entropy(fc, "loss");
  return g;
}

/// Inception-like branches joined by concat (1×1 conv, 3×3 conv, 3×3 average
/// pool), adaptive pooling to 2×2, and a flatten that reorders in NHWC.
Graph tiny_inception(int classes = 5) {
  Graph g("tiny_inception", 3);
  const NodeId stem = g.add_relu(g.add_conv(g.input(), conv(6, 3, 1, true), "stem"), "stem_relu");
  const NodeId a = g.add_conv(stem, conv(4, 1, 0, true), "branch1x1");
  const NodeId b = g.add_relu(g.add_conv(stem, conv(4, 3, 1, true), "branch3x3"), "branch3x3_relu");
  const NodeId c = g.add_pool(stem, pool(PoolAttrs::Kind::Avg, 3, 1, 1), "branch_pool");
  const NodeId cat = g.add_relu(g.add_concat({a, b, c}, "concat"), "concat_relu");
  const NodeId flat = g.add_flatten(g.add_adaptive_avg_pool(cat, 2, 2, "adaptive"), "flatten");
  g.add_softmax_cross_entropy(g.add_fc(flat, {.out_features = classes}, "fc"), "loss");
  return g;
}

/// A VGG-like head: flatten of a 3×3 map, FC, ReLU, dropout, FC.
Graph tiny_vgg(int classes = 6) {
  Graph g("tiny_vgg", 3);
  const NodeId f = g.add_relu(g.add_conv(g.input(), conv(5, 3, 1, true), "conv"), "relu");
  const NodeId p = g.add_pool(f, pool(PoolAttrs::Kind::Max, 2, 2, 0), "pool");
  const NodeId h =
      g.add_relu(g.add_fc(g.add_flatten(p, "flatten"), {.out_features = 32}, "fc1"), "fc1_relu");
  g.add_softmax_cross_entropy(
      g.add_fc(g.add_dropout(h, 0.5F, "dropout"), {.out_features = classes}, "fc2"), "loss");
  return g;
}

/// tf_cnn_benchmarks' trivial model: flatten of the images (a view of the input
/// in NCHW, a reorder in NHWC) and one FC layer.
Graph tiny_trivial(int classes = 4) {
  Graph g("tiny_trivial", 3);
  g.add_softmax_cross_entropy(
      g.add_fc(g.add_flatten(g.input(), "flatten"), {.out_features = classes}, "fc"), "loss");
  return g;
}

CompileOptions options(DataFormat format, int batch = 4, int image = 8) {
  CompileOptions o;
  o.batch = batch;
  o.image_h = o.image_w = image;
  o.format = format;
  o.seed = 3;
  return o;
}

std::unique_ptr<Executable> compile(const Graph& g, const CompileOptions& o) {
  return make_cpu_backend()->compile(g, o);
}

std::vector<float> copy_of(const BufferView& v) {
  const auto* p = static_cast<const float*>(v.data);
  return {p, p + v.count};
}

class ExecutableTest : public ::testing::TestWithParam<DataFormat> {};

TEST_P(ExecutableTest, ParameterGradientsMatchFiniteDifferences) {
  for (const Graph& g : {tiny_resnet(), tiny_inception()}) {
    SCOPED_TRACE(g.name());
    CompileOptions o = options(GetParam());
    // No update: every train_step evaluates the loss at the same parameters.
    o.optimizer = {.learning_rate = 0.0F, .momentum = 0.0F, .weight_decay = 0.0F};
    auto exe = compile(g, o);
    const Batch batch = exe->synthetic_batch(5);
    exe->train_step(batch, {});
    const auto analytic = copy_of(exe->gradients());
    BufferView params = exe->parameters();
    std::vector<float> p = copy_of(params);
    const auto objective = [&] {
      std::copy(p.begin(), p.end(), static_cast<float*>(params.data));
      exe->train_step(batch, {});
      return static_cast<double>(exe->loss());
    };
    // h = 1e-3: the loss is one fp32 number (rounding ≈ 2.4e-7, so ≈ 1.2e-4 in
    // the difference quotient), and a larger step lets more ReLU inputs cross
    // zero. rtol 2e-2 and atol 1e-2 of the largest gradient cover both.
    testutil::expect_gradient(objective, p, analytic, "parameter gradient",
                              {.step = 1e-3F, .rtol = 2e-2, .atol = 1e-2, .max_checks = 300});
  }
}

TEST_P(ExecutableTest, GradReadyRangesCoverTheBufferOnceInOrderBeforeTheUpdate) {
  const Graph g = tiny_resnet();
  auto exe = compile(g, options(GetParam()));
  const Batch batch = exe->synthetic_batch(1);
  const auto before = copy_of(exe->parameters());
  const auto* params = static_cast<const float*>(exe->parameters().data);
  const auto* grads = static_cast<const float*>(exe->gradients().data);
  struct Range {
    int64_t offset, count;
    std::vector<float> grad;
  };
  std::vector<Range> ranges;
  exe->train_step(batch, [&](int64_t offset, int64_t count) {
    ranges.push_back({offset, count, std::vector<float>(grads + offset, grads + offset + count)});
    for (int64_t i = offset; i < offset + count; ++i) {
      ASSERT_EQ(params[i], before[static_cast<size_t>(i)]) << "parameters updated before ready";
    }
  });
  // One range per parametrised node (conv1, bn1, conv2, bn2, fc), contiguous from 0.
  ASSERT_EQ(ranges.size(), 5U);
  int64_t next = 0;
  for (const Range& r : ranges) {
    EXPECT_EQ(r.offset, next);
    EXPECT_GT(r.count, 0);
    next = r.offset + r.count;
    // Final when reported: equal to the gradients at the end of the step.
    EXPECT_EQ(r.grad, std::vector<float>(grads + r.offset, grads + r.offset + r.count));
  }
  EXPECT_EQ(next, exe->gradients().count);
  EXPECT_NE(copy_of(exe->parameters()), before);
}

TEST(Executable, NhwcAndNchwAgree) {
  for (const Graph& g :
       {tiny_resnet(10, PoolAttrs::Kind::Max), tiny_inception(), tiny_vgg(), tiny_trivial()}) {
    SCOPED_TRACE(g.name());
    auto nhwc = compile(g, options(DataFormat::NHWC));
    auto nchw = compile(g, options(DataFormat::NCHW));
    const Batch a = nhwc->synthetic_batch(9);
    const Batch b = nchw->synthetic_batch(9);
    EXPECT_EQ(copy_of(nhwc->parameters()), copy_of(nchw->parameters()));
    for (int step = 0; step < 3; ++step) {
      nhwc->train_step(a, {});
      nchw->train_step(b, {});
      EXPECT_NEAR(nhwc->loss(), nchw->loss(), 1e-5F * std::fabs(nchw->loss()));
      testutil::expect_near_all(copy_of(nhwc->gradients()), copy_of(nchw->gradients()), 1e-4F,
                                "gradients");
    }
    testutil::expect_near_all(copy_of(nhwc->parameters()), copy_of(nchw->parameters()), 1e-5F,
                              "parameters after three steps");
  }
}

TEST_P(ExecutableTest, TrainingHalvesTheLossOnAFixedBatch) {
  for (const Graph& g : {tiny_resnet(10, PoolAttrs::Kind::Max), tiny_vgg()}) {
    SCOPED_TRACE(g.name());
    CompileOptions o = options(GetParam(), 8);
    o.optimizer.learning_rate = 0.05F;
    auto exe = compile(g, o);
    const Batch batch = exe->synthetic_batch(2);
    exe->train_step(batch, {});
    const float first = exe->loss();
    float last = first;
    for (int step = 1; step < 50; ++step) {
      exe->train_step(batch, {});
      last = exe->loss();
      ASSERT_TRUE(std::isfinite(last)) << "step " << step;
    }
    EXPECT_LT(last, 0.5F * first) << "first loss " << first;
  }
}

TEST_P(ExecutableTest, ForwardOnlyUsesRunningStatisticsAndNoDropout) {
  const Graph g = tiny_vgg();
  CompileOptions o = options(GetParam());
  o.training = false;
  auto exe = compile(g, o);
  const Batch batch = exe->synthetic_batch(4);
  exe->forward_only(batch);
  const float loss = exe->loss();
  EXPECT_TRUE(std::isfinite(loss));
  exe->forward_only(batch);
  EXPECT_EQ(exe->loss(), loss);  // no dropout: deterministic
  EXPECT_EQ(exe->gradients().count, 0);
  EXPECT_EQ(exe->memory().gradients, 0);
  EXPECT_THROW(exe->train_step(batch, {}), std::logic_error);

  // A training executable's forward_only differs from its training loss only by
  // BN statistics and dropout; with a fresh tiny_resnet the running statistics
  // (0 and 1) differ from the batch ones, so the losses differ.
  auto train = compile(tiny_resnet(), options(GetParam()));
  const Batch b2 = train->synthetic_batch(4);
  train->forward_only(b2);
  const float inference = train->loss();
  train->train_step(b2, {});
  EXPECT_NE(inference, train->loss());
}

TEST(Executable, DropoutMasksAreReproducibleFromTheSeed) {
  const Graph g = tiny_vgg();
  auto a = compile(g, options(DataFormat::NHWC));
  auto b = compile(g, options(DataFormat::NHWC));
  const Batch ba = a->synthetic_batch(1);
  const Batch bb = b->synthetic_batch(1);
  std::vector<float> losses;
  for (int step = 0; step < 3; ++step) {
    a->train_step(ba, {});
    b->train_step(bb, {});
    EXPECT_EQ(a->loss(), b->loss());
    losses.push_back(a->loss());
  }
  CompileOptions other = options(DataFormat::NHWC);
  other.seed = 4;
  auto c = compile(g, other);
  c->train_step(ba, {});  // same images and labels, different weights and masks
  EXPECT_NE(c->loss(), losses[0]);
}

TEST(Executable, ThreadCountDoesNotChangeResults) {
  // The one test on two threads: our OpenMP loops and oneDNN's must give the
  // single-thread results (up to summation order) on every op of the small graphs.
  for (const DataFormat format : {DataFormat::NHWC, DataFormat::NCHW}) {
    for (const Graph& g : {tiny_resnet(10, PoolAttrs::Kind::Max), tiny_inception(), tiny_vgg()}) {
      SCOPED_TRACE(g.name());
      CompileOptions one = options(format);
      one.num_threads = 1;
      CompileOptions two = options(format);
      two.num_threads = 2;
      auto a = compile(g, one);
      auto b = compile(g, two);
      EXPECT_NE(b->description().find(", 2 threads, "), std::string::npos) << b->description();
      const Batch ba = a->synthetic_batch(6);
      const Batch bb = b->synthetic_batch(6);
      for (int step = 0; step < 2; ++step) {
        a->train_step(ba, {});
        b->train_step(bb, {});
        EXPECT_NEAR(a->loss(), b->loss(), 1e-5F * std::fabs(a->loss()));
        testutil::expect_near_all(copy_of(a->gradients()), copy_of(b->gradients()), 1e-4F,
                                  "gradients");
      }
    }
  }
}

TEST(Executable, DescriptionMemoryAndThreads) {
  const Graph g = tiny_resnet();
  CompileOptions o = options(DataFormat::NHWC);
  o.num_threads = 1;
  const int outside = omp_get_max_threads();
  auto exe = compile(g, o);
  const std::string d = exe->description();
  EXPECT_NE(d.find("oneDNN "), std::string::npos) << d;
  EXPECT_NE(d.find(", 1 thread, NHWC fp32"), std::string::npos) << d;
  exe->train_step(exe->synthetic_batch(1), {});
  EXPECT_EQ(omp_get_max_threads(), outside);  // the executable's thread count does not leak

  const MemoryReport m = exe->memory();
  const int64_t params = exe->parameters().count;
  EXPECT_EQ(m.parameters, 2 * 4 * params);  // weights and momentum
  EXPECT_EQ(m.gradients, 4 * params);
  EXPECT_GT(m.activations, 0);
  EXPECT_EQ(m.data, 4 * (4 * 3 * 8 * 8) + 4 * 4);
  EXPECT_EQ(m.total(), m.parameters + m.gradients + m.activations + m.workspace + m.data);
}

TEST(Executable, RejectsUnsupportedOptions) {
  const Graph g = tiny_resnet();
  auto backend = make_cpu_backend();
  EXPECT_EQ(backend->name(), "cpu");
  CompileOptions o = options(DataFormat::NHWC);
  o.precision = Precision::Fp16;
  try {
    backend->compile(g, o);
    ADD_FAILURE() << "fp16 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--precision=fp16 is not supported by the CPU backend; valid: fp32");
  }
  o.precision = Precision::Bf16;
  EXPECT_THROW(backend->compile(g, o), std::invalid_argument);
  o.precision = Precision::Tf32;
  EXPECT_THROW(backend->compile(g, o), std::invalid_argument);
  o = options(DataFormat::NHWC, 0);
  EXPECT_THROW(backend->compile(g, o), std::invalid_argument);
  o = options(DataFormat::NHWC, 4, 1);  // the image is too small for the pooling
  EXPECT_THROW(backend->compile(g, o), std::invalid_argument);

  Graph no_loss("no_loss", 3);
  no_loss.add_conv(no_loss.input(), conv(4, 3, 1), "conv");
  EXPECT_THROW(backend->compile(no_loss, options(DataFormat::NHWC)), std::invalid_argument);

  auto exe = backend->compile(g, options(DataFormat::NHWC));
  Batch wrong = exe->synthetic_batch(1);
  wrong.n = 3;
  EXPECT_THROW(exe->train_step(wrong, {}), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ExecutableTest,
                         ::testing::Values(DataFormat::NHWC, DataFormat::NCHW),
                         testutil::format_name);

}  // namespace
}  // namespace cnnbench::kernels::cpu
