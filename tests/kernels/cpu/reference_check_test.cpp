// The one-step reference check (kernels/reference_check.h) and the
// Executable's parameter access it and the replica check use, on the CPU
// backend compared with itself: identical executables agree exactly; a
// perturbed weight is found; dropout is disabled for the comparison; the
// executable's parameter hashes equal the host hash of its parameters.
#include "kernels/reference_check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/param_hash.h"
#include "tests/kernels/cpu/test_util.h"

namespace cnnbench::kernels {
namespace {

using models::Graph;
using models::NodeId;

models::ConvAttrs conv(int k) {
  models::ConvAttrs a;
  a.out_channels = k;
  a.kernel_h = a.kernel_w = 3;
  a.pad_h = a.pad_w = 1;
  return a;
}

/// conv–BN–ReLU–conv–BN–add–ReLU–global pool–FC (with dropout)–loss.
Graph small_net() {
  Graph g("small_net", 3);
  const NodeId r1 = g.add_relu(g.add_batchnorm(g.add_conv(g.input(), conv(8), "conv1"), {}, "bn1"), "relu1");
  const NodeId b2 = g.add_batchnorm(g.add_conv(r1, conv(8), "conv2"), {}, "bn2");
  const NodeId r2 = g.add_relu(g.add_add({b2, r1}, "add"), "relu2");
  const NodeId gp = g.add_global_avg_pool(r2, "pool");
  const NodeId d = g.add_dropout(g.add_flatten(gp, "flatten"), 0.5F, "dropout");
  g.add_softmax_cross_entropy(g.add_fc(d, {.out_features = 5}, "fc"), "loss");
  return g;
}

CompileOptions options() {
  CompileOptions o;
  o.batch = 2;
  o.image_h = o.image_w = 8;
  o.format = DataFormat::NHWC;
  o.seed = 11;
  return o;
}

std::unique_ptr<Executable> compile(const Graph& g) {
  return make_cpu_backend()->compile(g, options());
}

TEST(ReferenceCheck, IdenticalExecutablesAgreeExactly) {
  const Graph g = small_net().without_dropout();
  auto a = compile(g);
  auto b = compile(g);
  const StepCheck c = compare_training_step(*a, *b, g, Precision::Fp32, 2, 8, DataFormat::NHWC, 5);
  EXPECT_TRUE(c.passed()) << c.summary();
  EXPECT_EQ(c.loss_rel_error, 0.0);
  ASSERT_EQ(c.tensors.size(), g.param_layout().size());
  for (const TensorCheck& t : c.tensors) EXPECT_EQ(t.rel_error, 0.0) << t.name;
  EXPECT_EQ(c.tensors.front().name, "fc.weight");  // backward order: the last layer first
  EXPECT_NE(c.summary().find("fp32: passed"), std::string::npos) << c.summary();
}

TEST(ReferenceCheck, APerturbedWeightFailsNamingATensor) {
  const Graph g = small_net().without_dropout();
  auto a = compile(g);
  auto b = compile(g);
  // conv2's weights ×1.5 in the checked executable: the gradients move.
  Graph shaped = g;
  shaped.infer_shapes(2, 8, 8);
  for (const auto& slot : shaped.param_layout()) {
    if (models::param_name(shaped, slot) != "conv2.weight") continue;
    std::vector<float> w(static_cast<size_t>(slot.count));
    a->read_parameters(slot.offset, slot.count, w.data());
    for (float& x : w) x *= 1.5F;
    a->write_parameters(slot.offset, w.data(), slot.count);
  }
  const StepCheck c = compare_training_step(*a, *b, g, Precision::Fp32, 2, 8, DataFormat::NHWC, 5);
  EXPECT_FALSE(c.passed());
  ASSERT_GE(c.worst, 0);
  EXPECT_GT(c.tensors[size_t(c.worst)].rel_error, c.tolerance);
  EXPECT_NE(c.summary().find("FAILED"), std::string::npos) << c.summary();
  EXPECT_NE(c.summary().find(c.tensors[size_t(c.worst)].name), std::string::npos) << c.summary();
}

TEST(ReferenceCheck, DropoutIsDisabledInTheComparedGraph) {
  const Graph g = small_net().without_dropout();
  for (const auto& n : g.nodes()) {
    if (const auto* d = std::get_if<models::DropoutAttrs>(&n.attrs)) EXPECT_EQ(d->p, 0.0F);
  }
  // The original keeps its dropout.
  bool found = false;
  for (const auto& n : small_net().nodes()) {
    if (const auto* d = std::get_if<models::DropoutAttrs>(&n.attrs)) found = d->p == 0.5F;
  }
  EXPECT_TRUE(found);
}

TEST(ReferenceCheck, TolerancesGrowAsPrecisionShrinks) {
  EXPECT_LT(reference_tolerance(Precision::Fp32), reference_tolerance(Precision::Tf32));
  EXPECT_LE(reference_tolerance(Precision::Tf32), reference_tolerance(Precision::Fp16));
  EXPECT_LT(reference_tolerance(Precision::Fp16), reference_tolerance(Precision::Bf16));
}

TEST(ExecutableParameters, HashesReadsAndWrites) {
  const Graph g = small_net();
  auto e = compile(g);
  Graph shaped = g;
  shaped.infer_shapes(2, 8, 8);
  const auto layout = shaped.param_layout();
  const int64_t n = shaped.param_count();
  std::vector<float> host(static_cast<size_t>(n));
  e->read_parameters(0, n, host.data());
  const ParamHashes h = e->parameter_hashes(layout);
  EXPECT_EQ(h.total, hash_parameters_host(host.data(), layout).total);
  // One element rewritten: only its tensor's hash moves.
  const auto& slot = layout[2];
  float x = 0;
  e->read_parameters(slot.offset, 1, &x);
  x += 1.0F;
  e->write_parameters(slot.offset, &x, 1);
  const ParamHashes after = e->parameter_hashes(layout);
  EXPECT_NE(after.total, h.total);
  for (size_t t = 0; t < layout.size(); ++t) {
    EXPECT_EQ(after.per_tensor[t] != h.per_tensor[t], t == 2) << t;
  }
  EXPECT_THROW(e->read_parameters(n - 1, 2, host.data()), std::out_of_range);
  EXPECT_THROW(e->write_parameters(-1, host.data(), 1), std::out_of_range);
  EXPECT_THROW(e->read_gradients(0, n + 1, host.data()), std::out_of_range);
}

}  // namespace
}  // namespace cnnbench::kernels
