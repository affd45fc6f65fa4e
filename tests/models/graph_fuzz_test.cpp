// Property test of shape inference on random conv/pool stacks: every attempt
// either yields positive shapes that satisfy the defining inequalities of the
// output-size formulas, or throws std::invalid_argument naming a node. Seeded,
// so a failure reproduces.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>

#include "models/graph.h"

namespace cnnbench::models {
namespace {

constexpr int kTrials = 3000;

/// Windows of a pooled or convolved dimension: for `out` windows of `kernel`
/// with `stride` over `in` pixels padded by `pad` on each side.
struct Windows {
  int64_t in, kernel, stride, pad, out;
  [[nodiscard]] int64_t last_start() const { return (out - 1) * stride; }  // in padded coordinates
};

// Floor mode: the last window fits in the padded input and one more would not.
void expect_floor_windows(const Windows& w, const std::string& where) {
  EXPECT_LE(w.last_start() + w.kernel, w.in + 2 * w.pad) << where;
  EXPECT_GT(w.last_start() + w.stride + w.kernel, w.in + 2 * w.pad) << where;
}

// Ceil mode (PyTorch): the last window starts inside the input or its left
// padding, and unless no further window could start there, it reaches the end
// of the padded input (overhanging it where the stride does not divide evenly).
void expect_ceil_windows(const Windows& w, const std::string& where) {
  EXPECT_LT(w.last_start(), w.in + w.pad) << where;
  const bool one_more_fits = w.last_start() + w.stride < w.in + w.pad;
  const bool last_reaches_end = w.last_start() + w.kernel >= w.in + 2 * w.pad;
  EXPECT_TRUE(!one_more_fits || last_reaches_end) << where;
}

TEST(GraphFuzz, RandomConvPoolStacksInferOrThrowNamedErrors) {
  std::mt19937 rng(20240611);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int succeeded = 0;
  int failed = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    Graph g("fuzz", uniform(1, 4));
    NodeId x = g.input();
    const int layers = uniform(1, 4);
    for (int l = 0; l < layers; ++l) {
      const std::string name = "layer" + std::to_string(l);
      try {
        if (uniform(0, 1) == 0) {
          ConvAttrs a;
          a.groups = uniform(1, 3);
          a.out_channels = a.groups * uniform(1, 4);
          a.kernel_h = uniform(0, 7);
          a.kernel_w = uniform(1, 7);
          a.stride_h = uniform(0, 4);
          a.stride_w = uniform(1, 4);
          a.pad_h = uniform(-1, 4);
          a.pad_w = uniform(0, 4);
          x = g.add_conv(x, a, name);
        } else {
          PoolAttrs a;
          a.kind = uniform(0, 1) == 0 ? PoolAttrs::Kind::Max : PoolAttrs::Kind::Avg;
          a.kernel_h = uniform(0, 6);
          a.kernel_w = uniform(1, 6);
          a.stride_h = uniform(1, 5);
          a.stride_w = uniform(0, 5);
          a.pad_h = uniform(0, 3);
          a.pad_w = uniform(0, 3);
          a.ceil_mode = uniform(0, 1) == 1;
          x = g.add_pool(x, a, name);
        }
      } catch (const std::invalid_argument& e) {
        // Rejected attributes: the message names the node being added.
        EXPECT_EQ(std::string(e.what()).rfind(name + ":", 0), 0U) << e.what();
      }
    }
    const int h = uniform(1, 30);
    const int w = uniform(1, 30);
    try {
      g.infer_shapes(uniform(1, 3), h, w);
    } catch (const std::invalid_argument& e) {
      ++failed;
      EXPECT_NE(std::string(e.what()).find("layer"), std::string::npos) << e.what();
      EXPECT_FALSE(g.shapes_inferred());
      continue;
    }
    ++succeeded;
    for (size_t i = 1; i < g.nodes().size(); ++i) {
      const Node& node = g.nodes()[i];
      const Shape& in = g.node(node.inputs.front()).output;
      const Shape& out = node.output;
      ASSERT_GE(out.h, 1) << node.name;
      ASSERT_GE(out.w, 1) << node.name;
      ASSERT_EQ(out.n, in.n);
      const std::string where = "trial " + std::to_string(trial) + " " + node.name;
      if (const auto* c = std::get_if<ConvAttrs>(&node.attrs)) {
        EXPECT_EQ(out.c, c->out_channels);
        EXPECT_EQ(in.c % c->groups, 0);
        expect_floor_windows({in.h, c->kernel_h, c->stride_h, c->pad_h, out.h}, where);
        expect_floor_windows({in.w, c->kernel_w, c->stride_w, c->pad_w, out.w}, where);
      } else if (const auto* p = std::get_if<PoolAttrs>(&node.attrs)) {
        EXPECT_EQ(out.c, in.c);
        const Windows wh{in.h, p->kernel_h, p->stride_h, p->pad_h, out.h};
        const Windows ww{in.w, p->kernel_w, p->stride_w, p->pad_w, out.w};
        if (p->ceil_mode) {
          expect_ceil_windows(wh, where);
          expect_ceil_windows(ww, where);
        } else {
          expect_floor_windows(wh, where);
          expect_floor_windows(ww, where);
        }
      }
    }
  }
  // Both outcomes are exercised often.
  EXPECT_GT(succeeded, kTrials / 4) << failed << " failed";
  EXPECT_GT(failed, kTrials / 20) << succeeded << " succeeded";
}

}  // namespace
}  // namespace cnnbench::models
