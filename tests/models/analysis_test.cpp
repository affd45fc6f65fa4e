// The graph analysis both executables use: consumers, the backward set, the
// value plan under a backend's alias rules, and the gradient plan, whose rule
// for an Add's inputs is decided here once for every backend.
#include "models/analysis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <vector>

#include "models/zoo.h"

namespace cnnbench::models {
namespace {

using ::testing::ElementsAre;

ConvAttrs conv3x3(int channels) {
  ConvAttrs a;
  a.out_channels = channels;
  a.kernel_h = a.kernel_w = 3;
  a.pad_h = a.pad_w = 1;
  return a;
}

FullyConnectedAttrs fc(int out) {
  FullyConnectedAttrs a;
  a.out_features = out;
  return a;
}

/// input → relu0 → conv1 → relu1 → conv2 → add(relu1, conv2) → relu3 → pool → flatten → fc → loss,
/// plus conv_dead reading relu1 that reaches nothing.
struct Residual {
  Graph g{"residual"};
  NodeId relu0, conv1, relu1, conv2, add, relu3, pool, flat, fc1, loss, dead;
  Residual() {
    relu0 = g.add_relu(g.input(), "relu0");
    conv1 = g.add_conv(relu0, conv3x3(8), "conv1");
    relu1 = g.add_relu(conv1, "relu1");
    dead = g.add_conv(relu1, conv3x3(8), "dead");
    conv2 = g.add_conv(relu1, conv3x3(8), "conv2");
    add = g.add_add({relu1, conv2}, "add");
    relu3 = g.add_relu(add, "relu3");
    pool = g.add_global_avg_pool(relu3, "pool");
    flat = g.add_flatten(pool, "flatten");
    fc1 = g.add_fc(flat, fc(10), "fc");
    loss = g.add_softmax_cross_entropy(fc1, "loss");
    g.infer_shapes(2, 8, 8);
  }
};

TEST(Analysis, ConsumersInAscendingOrder) {
  const Residual r;
  const Consumers c = consumers(r.g);
  ASSERT_EQ(c.size(), r.g.nodes().size());
  EXPECT_THAT(c[static_cast<size_t>(r.relu1)], ElementsAre(r.dead, r.conv2, r.add));
  EXPECT_THAT(c[static_cast<size_t>(r.conv2)], ElementsAre(r.add));
  EXPECT_TRUE(c[static_cast<size_t>(r.loss)].empty());
}

TEST(Analysis, BackwardRunsFromTheFirstParametersToTheLoss) {
  const Residual r;
  const std::vector<bool> b = backward_set(r.g, consumers(r.g));
  EXPECT_FALSE(b[0]);                                   // the images
  EXPECT_FALSE(b[static_cast<size_t>(r.relu0)]);        // before any parameter
  EXPECT_TRUE(b[static_cast<size_t>(r.conv1)]);
  EXPECT_TRUE(b[static_cast<size_t>(r.add)]);
  EXPECT_TRUE(b[static_cast<size_t>(r.loss)]);
  EXPECT_FALSE(b[static_cast<size_t>(r.dead)]);         // reaches no loss
}

TEST(Analysis, ValuesFollowTheBackendsAliasRules) {
  const Residual r;
  const Consumers c = consumers(r.g);
  AliasRules rules;
  rules.is_view = [&](NodeId i) { return i == r.flat; };
  rules.not_stored = [&](NodeId i) { return i == r.loss; };
  rules.output_free_after_use = [&](NodeId j) { return r.g.node(j).op() == OpKind::Conv2d || j == r.add; };
  const std::vector<NodeId> owner = value_owners(r.g, c, rules);
  EXPECT_EQ(owner[0], 0);
  EXPECT_EQ(owner[static_cast<size_t>(r.relu0)], r.relu0);  // never overwrites the images
  EXPECT_EQ(owner[static_cast<size_t>(r.relu1)], r.conv1);  // in place: conv1 has no other reader
  EXPECT_EQ(owner[static_cast<size_t>(r.relu3)], r.add);
  EXPECT_EQ(owner[static_cast<size_t>(r.flat)], r.pool);    // a view
  EXPECT_EQ(owner[static_cast<size_t>(r.loss)], -1);

  rules.output_free_after_use = [](NodeId) { return false; };  // e.g. a backward that reads the output
  const std::vector<NodeId> kept = value_owners(r.g, c, rules);
  EXPECT_EQ(kept[static_cast<size_t>(r.relu1)], r.relu1);
}

GradientRules cpu_like_rules(const Residual& r, const std::vector<bool>& backward) {
  GradientRules rules;
  rules.is_view = [&r](NodeId i) { return i == r.flat; };
  rules.size = [&r](NodeId t) { return r.g.node(t).output.elements(); };
  for (NodeId i = 1; i < static_cast<NodeId>(r.g.nodes().size()); ++i) {
    if (backward[static_cast<size_t>(i)]) rules.units.push_back({i, r.g.node(i).inputs});
  }
  return rules;
}

// The rule for every backend: an Add's input read by nothing else shares the
// Add's gradient tensor (no copy in backward); one with other readers gets its own.
TEST(Analysis, AnAddsSoleUseInputSharesItsGradient) {
  const Residual r;
  const Consumers c = consumers(r.g);
  const std::vector<bool> b = backward_set(r.g, c);
  const GradientPlan p = plan_gradients(r.g, c, b, cpu_like_rules(r, b));
  EXPECT_EQ(p.owner[static_cast<size_t>(r.conv2)], r.add);   // conv2 is read by the add only
  EXPECT_TRUE(p.shares_gradient(r.conv2, r.add));
  EXPECT_EQ(p.owner[static_cast<size_t>(r.relu1)], r.relu1);  // read by conv2 and dead too
  EXPECT_FALSE(p.shares_gradient(r.relu1, r.add));
  EXPECT_EQ(p.owner[static_cast<size_t>(r.flat)], r.pool);   // a view shares its input's
  EXPECT_TRUE(p.shares_gradient(r.pool, r.flat));
  EXPECT_EQ(p.owner[static_cast<size_t>(r.loss)], -1);
  EXPECT_EQ(p.owner[static_cast<size_t>(r.relu0)], -1);       // no backward there
  // The add's tensor is first written by relu3's backward and last read by
  // conv2's producer side (its lowest member, conv2).
  EXPECT_EQ(p.first_writer[static_cast<size_t>(r.add)], r.relu3);
}

TEST(Analysis, BuffersAreSharedOnlyBetweenTensorsNeverLiveTogether) {
  for (const auto& info : zoo()) {
    SCOPED_TRACE(info.name);
    Graph g = build_model(info.name, 10);
    g.infer_shapes(1, info.default_image_size, info.default_image_size);
    const Consumers c = consumers(g);
    const std::vector<bool> b = backward_set(g, c);
    GradientRules rules;
    rules.is_view = [&g](NodeId i) { return g.node(i).op() == OpKind::Flatten; };
    rules.size = [&g](NodeId t) { return g.node(t).output.elements(); };
    for (NodeId i = 1; i < static_cast<NodeId>(g.nodes().size()); ++i) {
      if (b[static_cast<size_t>(i)]) rules.units.push_back({i, g.node(i).inputs});
    }
    const GradientPlan p = plan_gradients(g, c, b, rules);
    // Each tensor lives from its first write to the read by its lowest member.
    struct Life {
      NodeId owner, from, to;
    };
    std::vector<Life> lives;
    std::set<NodeId> owners;
    for (NodeId i = 1; i < static_cast<NodeId>(g.nodes().size()); ++i) {
      const NodeId o = p.owner[static_cast<size_t>(i)];
      if (o < 0) continue;
      owners.insert(o);
      EXPECT_GE(rules.size(o), g.node(i).output.elements());
    }
    for (const NodeId o : owners) {
      ASSERT_GE(p.buffer_of[static_cast<size_t>(o)], 0) << g.node(o).name;
      EXPECT_GE(p.buffer_sizes[static_cast<size_t>(p.buffer_of[static_cast<size_t>(o)])], rules.size(o));
      NodeId lowest = o;
      for (NodeId i = 1; i < static_cast<NodeId>(g.nodes().size()); ++i) {
        if (p.owner[static_cast<size_t>(i)] == o) lowest = std::min(lowest, i);
      }
      lives.push_back({o, p.first_writer[static_cast<size_t>(o)], lowest});
    }
    for (size_t x = 0; x < lives.size(); ++x) {
      for (size_t y = x + 1; y < lives.size(); ++y) {
        if (p.buffer_of[static_cast<size_t>(lives[x].owner)] != p.buffer_of[static_cast<size_t>(lives[y].owner)]) continue;
        // Backward runs in descending ids: [to, from] intervals must not overlap.
        const bool apart = lives[x].to > lives[y].from || lives[y].to > lives[x].from;
        EXPECT_TRUE(apart) << g.node(lives[x].owner).name << " and " << g.node(lives[y].owner).name;
      }
    }
    // Sharing happens in every model with more than one gradient tensor.
    if (owners.size() > 1) EXPECT_LT(p.buffer_sizes.size(), owners.size());
  }
}

TEST(Analysis, UnitsOutsideTheGraphAreRejected) {
  const Residual r;
  const Consumers c = consumers(r.g);
  const std::vector<bool> b = backward_set(r.g, c);
  GradientRules rules = cpu_like_rules(r, b);
  rules.units.push_back({99, {}});
  EXPECT_THROW(plan_gradients(r.g, c, b, rules), std::invalid_argument);
  rules.units.back() = {r.fc1, {-1}};
  EXPECT_THROW(plan_gradients(r.g, c, b, rules), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::models
