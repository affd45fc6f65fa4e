// Graph IR: shape inference of every op on hand-computed cases, the error paths
// of the builder and of infer_shapes, parameter layout, parameter and FLOP counts.
#include "models/graph.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cnnbench::models {
namespace {

using ::testing::HasSubstr;

ConvAttrs conv(int out, int k, int stride = 1, int pad = 0, int groups = 1) {
  ConvAttrs a;
  a.out_channels = out;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.groups = groups;
  return a;
}

PoolAttrs pool(int k, int stride, int pad = 0, bool ceil_mode = false,
               PoolAttrs::Kind kind = PoolAttrs::Kind::Max) {
  PoolAttrs a;
  a.kind = kind;
  a.kernel_h = a.kernel_w = k;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.ceil_mode = ceil_mode;
  return a;
}

FullyConnectedAttrs fc(int out, bool bias = true) {
  FullyConnectedAttrs a;
  a.out_features = out;
  a.bias = bias;
  return a;
}

// The message of the std::invalid_argument `f` throws; fails the test if none.
template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

// Output H (= W) of a single pool on a square input of side `h`.
int pooled(int h, const PoolAttrs& a) {
  Graph g("pool");
  const NodeId p = g.add_pool(g.input(), a, "pool");
  g.infer_shapes(1, h, h);
  return g.node(p).output.h;
}

// ---------------------------------------------------------------- shapes ----

TEST(GraphShapes, InputTakesBatchChannelsAndImageSize) {
  Graph g("g", 4);
  g.infer_shapes(8, 30, 20);
  EXPECT_EQ(g.node(g.input()).output, (Shape{8, 4, 30, 20}));
  EXPECT_TRUE(g.shapes_inferred());
}

TEST(GraphShapes, ConvFollowsFloorFormula) {
  // floor((H + 2p − k) / s) + 1
  Graph g("g");
  const NodeId c1 = g.add_conv(g.input(), conv(64, 7, 2, 3), "conv1");  // (224+6−7)/2+1 = 112
  const NodeId c2 = g.add_conv(c1, conv(32, 3, 2, 0), "conv2");          // (112−3)/2+1 = 55
  const NodeId c3 = g.add_conv(c2, conv(16, 1, 1, 0), "conv3");          // 55
  const NodeId c4 = g.add_conv(c3, conv(16, 5, 3, 2), "conv4");          // (55+4−5)/3+1 = 19
  g.infer_shapes(2, 224, 224);
  EXPECT_EQ(g.node(c1).output, (Shape{2, 64, 112, 112}));
  EXPECT_EQ(g.node(c2).output, (Shape{2, 32, 55, 55}));
  EXPECT_EQ(g.node(c3).output, (Shape{2, 16, 55, 55}));
  EXPECT_EQ(g.node(c4).output, (Shape{2, 16, 19, 19}));
}

TEST(GraphShapes, ConvWithRectangularKernelAndImage) {
  Graph g("g");
  ConvAttrs a = conv(8, 1);
  a.kernel_h = 7;
  a.kernel_w = 1;
  a.pad_h = 3;
  a.stride_w = 2;
  const NodeId c = g.add_conv(g.input(), a, "c");
  g.infer_shapes(1, 17, 10);
  EXPECT_EQ(g.node(c).output, (Shape{1, 8, 17, 5}));  // H: (17+6−7)+1; W: (10−1)/2+1
}

TEST(GraphShapes, GroupedAndDepthwiseConv) {
  Graph g("g", 32);
  const NodeId grouped = g.add_conv(g.input(), conv(64, 3, 1, 1, 4), "grouped");
  const NodeId dw = g.add_conv(grouped, conv(64, 3, 2, 1, 64), "depthwise");
  g.infer_shapes(3, 9, 9);
  EXPECT_EQ(g.node(grouped).output, (Shape{3, 64, 9, 9}));
  EXPECT_EQ(g.node(dw).output, (Shape{3, 64, 5, 5}));
}

TEST(GraphShapes, ConvKernelEqualToPaddedInputGivesOnePixel) {
  Graph g("g");
  const NodeId c = g.add_conv(g.input(), conv(4, 3, 1, 1), "c");
  g.infer_shapes(1, 1, 1);
  EXPECT_EQ(g.node(c).output, (Shape{1, 4, 1, 1}));
}

TEST(GraphShapes, PoolFloorAndCeilModeAsPyTorch) {
  // Expected values are what torch.nn.functional.max_pool2d / avg_pool2d return
  // (torch 2.15) for a square input of side H.
  struct Case {
    int h, k, s, p;
    bool ceil_mode;
    int out;
  };
  const Case cases[] = {
      {.h = 112, .k = 3, .s = 2, .p = 0, .ceil_mode = false, .out = 55},
      {.h = 112, .k = 3, .s = 2, .p = 0, .ceil_mode = true, .out = 56},
      {.h = 5, .k = 2, .s = 2, .p = 0, .ceil_mode = false, .out = 2},
      {.h = 5, .k = 2, .s = 2, .p = 0, .ceil_mode = true, .out = 3},
      {.h = 13, .k = 2, .s = 2, .p = 0, .ceil_mode = true, .out = 7},
      {.h = 14, .k = 2, .s = 2, .p = 0, .ceil_mode = true, .out = 7},
      {.h = 7, .k = 3, .s = 1, .p = 1, .ceil_mode = true, .out = 7},
      {.h = 6, .k = 3, .s = 3, .p = 1, .ceil_mode = true, .out = 3},
      // ceil mode lets the last window hang over the end: 2x2 input, 3x3 window.
      {.h = 2, .k = 3, .s = 2, .p = 0, .ceil_mode = true, .out = 1},
      {.h = 3, .k = 1, .s = 2, .p = 0, .ceil_mode = true, .out = 2},
      // The last window would start in the right padding: dropped.
      {.h = 5, .k = 2, .s = 4, .p = 1, .ceil_mode = true, .out = 2},
      {.h = 9, .k = 4, .s = 4, .p = 2, .ceil_mode = true, .out = 3},
      {.h = 1, .k = 2, .s = 2, .p = 1, .ceil_mode = true, .out = 1},
      {.h = 9, .k = 4, .s = 4, .p = 2, .ceil_mode = false, .out = 3},
  };
  for (const Case& c : cases) {
    for (auto kind : {PoolAttrs::Kind::Max, PoolAttrs::Kind::Avg}) {
      EXPECT_EQ(pooled(c.h, pool(c.k, c.s, c.p, c.ceil_mode, kind)), c.out)
          << "H=" << c.h << " k=" << c.k << " s=" << c.s << " p=" << c.p
          << " ceil_mode=" << c.ceil_mode;
    }
  }
}

TEST(GraphShapes, PoolKeepsChannels) {
  Graph g("g", 7);
  const NodeId p = g.add_pool(g.input(), pool(3, 2, 1), "p");
  g.infer_shapes(2, 10, 11);
  EXPECT_EQ(g.node(p).output, (Shape{2, 7, 5, 6}));
}

TEST(GraphShapes, AdaptivePoolGivesRequestedSizeForAnyInput) {
  // Divisible, non-divisible, smaller than the output (cells overlap) and 1×1.
  for (int h : {1, 3, 5, 7, 10, 13, 224}) {
    Graph g("g", 5);
    const NodeId a = g.add_adaptive_avg_pool(g.input(), 7, 6, "avgpool");
    const NodeId gp = g.add_global_avg_pool(a, "global");
    g.infer_shapes(4, h, h + 1);
    EXPECT_EQ(g.node(a).output, (Shape{4, 5, 7, 6})) << "input " << h;
    EXPECT_EQ(g.node(gp).output, (Shape{4, 5, 1, 1})) << "input " << h;
  }
}

TEST(GraphShapes, ElementwiseOpsKeepShape) {
  Graph g("g", 6);
  const NodeId bn = g.add_batchnorm(g.input(), BatchNormAttrs{}, "bn");
  const NodeId r = g.add_relu(bn, "relu");
  const NodeId r6 = g.add_relu6(r, "relu6");
  const NodeId d = g.add_dropout(r6, 0.5F, "dropout");
  g.infer_shapes(3, 5, 4);
  for (NodeId id : {bn, r, r6, d}) {
    EXPECT_EQ(g.node(id).output, (Shape{3, 6, 5, 4})) << g.node(id).name;
  }
  EXPECT_EQ(g.node(r6).op(), OpKind::Activation);
  EXPECT_EQ(std::get<ActivationAttrs>(g.node(r6).attrs).kind, ActivationAttrs::Kind::Relu6);
}

TEST(GraphShapes, ConcatSumsChannelsAddKeepsShape) {
  Graph g("g", 8);
  const NodeId a = g.add_conv(g.input(), conv(16, 1), "a");
  const NodeId b = g.add_conv(g.input(), conv(24, 3, 1, 1), "b");
  const NodeId c = g.add_pool(g.input(), pool(3, 1, 1), "c");
  const NodeId cat = g.add_concat({a, b, c}, "cat");
  const NodeId d = g.add_conv(cat, conv(48, 1), "d");
  const NodeId sum = g.add_add({cat, d, cat}, "sum");
  g.infer_shapes(2, 9, 7);
  EXPECT_EQ(g.node(cat).output, (Shape{2, 48, 9, 7}));
  EXPECT_EQ(g.node(sum).output, (Shape{2, 48, 9, 7}));
}

TEST(GraphShapes, FullyConnectedFlattenAndLoss) {
  Graph g("g", 3);
  const NodeId f = g.add_fc(g.input(), fc(10), "fc_on_image");  // in_features = 3·5·4
  const NodeId flat = g.add_flatten(f, "flatten");
  const NodeId f2 = g.add_fc(flat, fc(7), "fc2");
  const NodeId loss = g.add_softmax_cross_entropy(f2, "loss");
  g.infer_shapes(6, 5, 4);
  EXPECT_EQ(g.node(f).output, (Shape{6, 10, 1, 1}));
  EXPECT_EQ(g.node(flat).output, (Shape{6, 10, 1, 1}));
  EXPECT_EQ(g.node(f2).output, (Shape{6, 7, 1, 1}));
  EXPECT_EQ(g.node(loss).output, (Shape{1, 1, 1, 1}));
  EXPECT_EQ(g.output(), loss);
  EXPECT_EQ(g.num_classes(), 7);
}

TEST(GraphShapes, FlattenOfFeatureMap) {
  Graph g("g", 3);
  const NodeId c = g.add_conv(g.input(), conv(5, 3), "c");
  const NodeId flat = g.add_flatten(c, "flatten");
  g.infer_shapes(2, 6, 7);
  EXPECT_EQ(g.node(flat).output, (Shape{2, 5 * 4 * 5, 1, 1}));
}

TEST(GraphShapes, ReinferenceWithAnotherSizeReplacesShapes) {
  Graph g("g");
  const NodeId c = g.add_conv(g.input(), conv(8, 3, 2, 1), "c");
  g.infer_shapes(1, 32, 32);
  EXPECT_EQ(g.node(c).output.h, 16);
  g.infer_shapes(5, 64, 48);
  EXPECT_EQ(g.node(c).output, (Shape{5, 8, 32, 24}));
}

TEST(GraphShapes, OpNames) {
  EXPECT_STREQ(op_name(OpKind::Input), "input");
  EXPECT_STREQ(op_name(OpKind::Conv2d), "conv2d");
  EXPECT_STREQ(op_name(OpKind::BatchNorm), "batchnorm");
  EXPECT_STREQ(op_name(OpKind::Pool), "pool");
  EXPECT_STREQ(op_name(OpKind::FullyConnected), "fully_connected");
  EXPECT_STREQ(op_name(OpKind::SoftmaxCrossEntropy), "softmax_cross_entropy");
  Graph g("g");
  const NodeId c = g.add_concat({g.add_relu(g.input(), "a"), g.add_relu(g.input(), "b")}, "cat");
  EXPECT_EQ(g.node(c).op(), OpKind::Concat);
  EXPECT_EQ(g.node(g.input()).op(), OpKind::Input);
}

// ------------------------------------------------- infer_shapes errors ----

TEST(GraphShapeErrors, ConvLargerThanInputNamesNodeAndSizes) {
  Graph g("resnet");
  const NodeId p = g.add_pool(g.input(), pool(2, 2), "pool");
  g.add_conv(p, conv(8, 3), "layer4.0.conv1");
  const std::string msg = invalid_argument_message([&] { g.infer_shapes(1, 5, 4); });
  EXPECT_THAT(msg, HasSubstr("layer4.0.conv1"));
  EXPECT_THAT(msg, HasSubstr("input 2x2 is smaller than the 3x3 kernel with padding 0"));
  EXPECT_THAT(msg, HasSubstr("--image_size"));
  EXPECT_FALSE(g.shapes_inferred());
}

TEST(GraphShapeErrors, PoolWithEmptyOutput) {
  Graph g("g");
  g.add_pool(g.input(), pool(3, 2), "features.2");
  const std::string msg = invalid_argument_message([&] { g.infer_shapes(1, 2, 2); });
  EXPECT_THAT(msg, HasSubstr("features.2"));
  EXPECT_THAT(msg, HasSubstr("2x2"));
  EXPECT_THAT(msg, HasSubstr("3x3"));
  // In ceil mode the same window fits (PyTorch gives 1×1).
  EXPECT_EQ(pooled(2, pool(3, 2, 0, true)), 1);
}

TEST(GraphShapeErrors, AddOfDifferentSpatialSizes) {
  Graph g("g");
  const NodeId a = g.add_conv(g.input(), conv(8, 3, 1, 1), "a");
  const NodeId b = g.add_conv(g.input(), conv(8, 3, 2, 1), "b");
  g.add_add({a, b}, "block.add");
  const std::string msg = invalid_argument_message([&] { g.infer_shapes(2, 8, 8); });
  EXPECT_THAT(msg, HasSubstr("block.add"));
  EXPECT_THAT(msg, HasSubstr("[2, 8, 8, 8]"));
  EXPECT_THAT(msg, HasSubstr("[2, 8, 4, 4]"));
}

TEST(GraphShapeErrors, AddOfDifferentChannelsIsRejectedWhenAdded) {
  Graph g("g");
  const NodeId a = g.add_conv(g.input(), conv(8, 1), "a");
  const NodeId b = g.add_conv(g.input(), conv(16, 1), "b");
  const std::string msg = invalid_argument_message([&] { g.add_add({a, b}, "sum"); });
  EXPECT_THAT(msg, HasSubstr("sum"));
  EXPECT_THAT(msg, HasSubstr("8"));
  EXPECT_THAT(msg, HasSubstr("16"));
}

TEST(GraphShapeErrors, ConcatOfDifferentSpatialSizes) {
  Graph g("g");
  const NodeId a = g.add_conv(g.input(), conv(8, 1), "a");
  const NodeId b = g.add_conv(g.input(), conv(8, 3), "b");
  g.add_concat({a, b}, "Mixed_5b.cat");
  const std::string msg = invalid_argument_message([&] { g.infer_shapes(1, 10, 10); });
  EXPECT_THAT(msg, HasSubstr("Mixed_5b.cat"));
  EXPECT_THAT(msg, HasSubstr("[1, 8, 10, 10]"));
  EXPECT_THAT(msg, HasSubstr("[1, 8, 8, 8]"));
}

TEST(GraphShapeErrors, LossOnSpatialLogits) {
  Graph g("g");
  const NodeId c = g.add_conv(g.input(), conv(10, 1), "head");
  g.add_softmax_cross_entropy(c, "loss");
  const std::string msg = invalid_argument_message([&] { g.infer_shapes(2, 3, 3); });
  EXPECT_THAT(msg, HasSubstr("loss"));
  EXPECT_THAT(msg, HasSubstr("[2, 10, 3, 3]"));
}

TEST(GraphShapeErrors, LossOnPooledSpatialLogitsIsRejectedWhenAdded) {
  Graph g("g");
  const NodeId a = g.add_adaptive_avg_pool(g.input(), 2, 2, "pool");
  EXPECT_THAT(invalid_argument_message([&] { g.add_softmax_cross_entropy(a, "loss"); }),
              HasSubstr("loss"));
}

TEST(GraphShapeErrors, BadBatchOrImageSize) {
  Graph g("g");
  g.add_relu(g.input(), "relu");
  EXPECT_THAT(invalid_argument_message([&] { g.infer_shapes(0, 8, 8); }), HasSubstr("batch"));
  EXPECT_THAT(invalid_argument_message([&] { g.infer_shapes(1, 0, 8); }), HasSubstr("0x8"));
  EXPECT_THAT(invalid_argument_message([&] { g.infer_shapes(1, 8, -3); }), HasSubstr("8x-3"));
}

TEST(GraphShapeErrors, FlattenBeyondIntRangeIsAnError) {
  Graph g("g", 3);
  g.add_flatten(g.input(), "flatten");
  // 3·30000·30000 = 2.7e9 elements per image does not fit an int dimension.
  EXPECT_THAT(invalid_argument_message([&] { g.infer_shapes(1, 30000, 30000); }),
              HasSubstr("flatten: output dimension 2700000000 exceeds"));
}

TEST(GraphShapeErrors, ConvAfterFixedSizePoolFailsWhenAdded) {
  // After adaptive pooling the size is known without an image, so an impossible
  // conv is rejected as it is added, without the image-size hint.
  Graph g("g");
  const NodeId a = g.add_global_avg_pool(g.input(), "gap");
  const std::string msg = invalid_argument_message([&] { g.add_conv(a, conv(4, 3), "c"); });
  EXPECT_THAT(msg, HasSubstr("c: input 1x1 is smaller than the 3x3 kernel"));
  EXPECT_THAT(msg, ::testing::Not(HasSubstr("--image_size")));
}

// ---------------------------------------------------- builder errors ----

TEST(GraphBuilderErrors, AttributesOutOfRangeNameNodeAndValue) {
  Graph g("g", 6);
  const NodeId in = g.input();
  auto bad_conv = [&](auto mutate, const char* what) {
    ConvAttrs a = conv(8, 3);
    mutate(a);
    const std::string msg = invalid_argument_message([&] { g.add_conv(in, a, "bad_conv"); });
    EXPECT_THAT(msg, HasSubstr("bad_conv")) << what;
    EXPECT_THAT(msg, HasSubstr(what));
  };
  bad_conv([](ConvAttrs& a) { a.out_channels = 0; }, "out_channels must be >= 1, got 0");
  bad_conv([](ConvAttrs& a) { a.kernel_h = 0; }, "kernel_h must be >= 1, got 0");
  bad_conv([](ConvAttrs& a) { a.kernel_w = -1; }, "kernel_w must be >= 1, got -1");
  bad_conv([](ConvAttrs& a) { a.stride_h = 0; }, "stride_h must be >= 1, got 0");
  bad_conv([](ConvAttrs& a) { a.pad_w = -2; }, "pad_w must be >= 0, got -2");
  bad_conv([](ConvAttrs& a) { a.groups = 0; }, "groups must be >= 1, got 0");
  bad_conv([](ConvAttrs& a) { a.groups = 3; }, "groups 3 does not divide out_channels 8");
  bad_conv([](ConvAttrs& a) { a.groups = 4; }, "groups 4 does not divide the 6 input channels");
  bad_conv([](ConvAttrs& a) { a.weight_init = Init{Init::Kind::TruncatedNormal, 0.0F}; },
           "weight init needs std > 0");

  auto bad_pool = [&](const PoolAttrs& a, const char* what) {
    const std::string msg = invalid_argument_message([&] { g.add_pool(in, a, "bad_pool"); });
    EXPECT_THAT(msg, HasSubstr("bad_pool")) << what;
    EXPECT_THAT(msg, HasSubstr(what));
  };
  bad_pool(pool(0, 1), "kernel_h must be >= 1, got 0");
  bad_pool(pool(2, 0), "stride_h must be >= 1, got 0");
  bad_pool(pool(3, 1, -1), "pad_h must be >= 0, got -1");
  bad_pool(pool(3, 1, 2), "padding 2 exceeds half the 3x3 pooling window");

  EXPECT_THAT(invalid_argument_message([&] { g.add_fc(in, fc(0), "head"); }),
              HasSubstr("head: out_features must be >= 1, got 0"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_dropout(in, 1.0F, "drop"); }),
              HasSubstr("drop: dropout probability must be in [0, 1)"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_dropout(in, -0.1F, "drop"); }),
              HasSubstr("drop"));
  EXPECT_THAT(invalid_argument_message(
                  [&] { g.add_batchnorm(in, BatchNormAttrs{.eps = 0.0F}, "bn"); }),
              HasSubstr("bn: eps must be > 0"));
  EXPECT_THAT(invalid_argument_message(
                  [&] { g.add_batchnorm(in, BatchNormAttrs{.momentum = 1.5F}, "bn"); }),
              HasSubstr("bn: momentum must be in [0, 1]"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_adaptive_avg_pool(in, 0, 7, "ap"); }),
              HasSubstr("ap: out_h must be >= 1, got 0"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_add({in}, "sum"); }),
              HasSubstr("sum: an add needs at least 2 inputs, got 1"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_concat({}, "cat"); }),
              HasSubstr("cat: a concat needs at least 2 inputs, got 0"));
  // Nothing was added by the failed calls.
  EXPECT_EQ(g.nodes().size(), 1U);
}

TEST(GraphBuilderErrors, UnknownInputDuplicateNameEmptyName) {
  Graph g("g");
  const NodeId r = g.add_relu(g.input(), "relu");
  EXPECT_THAT(invalid_argument_message([&] { g.add_relu(5, "r2"); }),
              HasSubstr("r2: input id 5 does not exist (ids 0..1)"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_relu(-1, "r3"); }), HasSubstr("input id -1"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_relu(r, "relu"); }),
              HasSubstr("relu: duplicate node name"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_relu(r, ""); }), HasSubstr("non-empty name"));
  EXPECT_THAT(invalid_argument_message([&] { g.add_relu(r, "input"); }), HasSubstr("duplicate"));
  EXPECT_THROW(Graph("g", 0), std::invalid_argument);
}

TEST(GraphBuilderErrors, NothingMayFollowTheLoss) {
  Graph g("g");
  const NodeId f = g.add_fc(g.input(), fc(3), "fc");
  g.add_softmax_cross_entropy(f, "loss");
  EXPECT_THAT(invalid_argument_message([&] { g.add_relu(f, "late"); }),
              HasSubstr("late: the graph already ends with the loss 'loss'"));
}

TEST(GraphBuilderErrors, NodesAreTopologicallyOrdered) {
  Graph g("g");
  NodeId x = g.add_relu(g.input(), "a");
  x = g.add_concat({x, g.add_relu(g.input(), "b")}, "cat");
  g.add_relu(x, "c");
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    for (NodeId in : g.nodes()[i].inputs) {
      EXPECT_LT(static_cast<size_t>(in), i) << g.nodes()[i].name;
    }
  }
}

// ---------------------------------------------------- parameters ----

TEST(GraphParams, LayoutIsBackwardOrderWithContiguousOffsets) {
  Graph g("g", 3);
  ConvAttrs c1 = conv(8, 3, 1, 1);
  c1.bias = true;
  c1.bias_init = Init{Init::Kind::DefaultBiasUniform};
  const NodeId conv1 = g.add_conv(g.input(), c1, "conv1");
  const NodeId bn = g.add_batchnorm(conv1, BatchNormAttrs{}, "bn");
  const NodeId r = g.add_relu(bn, "relu");
  const NodeId dw = g.add_conv(r, conv(8, 3, 2, 1, 8), "dw");
  const NodeId gap = g.add_global_avg_pool(dw, "gap");
  const NodeId head = g.add_fc(gap, fc(5), "fc");
  g.add_softmax_cross_entropy(head, "loss");

  const std::vector<ParamSlot> slots = g.param_layout();
  ASSERT_EQ(slots.size(), 7U);
  // Decreasing node id; within a node weight before bias, scale before shift.
  const NodeId nodes[] = {head, head, dw, bn, bn, conv1, conv1};
  const ParamRole roles[] = {ParamRole::Weight, ParamRole::Bias,  ParamRole::Weight,
                             ParamRole::Scale,  ParamRole::Shift, ParamRole::Weight,
                             ParamRole::Bias};
  const std::vector<int64_t> dims[] = {{5, 8}, {5}, {8, 1, 3, 3}, {8}, {8}, {8, 3, 3, 3}, {8}};
  int64_t offset = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(slots[i].node, nodes[i]);
    EXPECT_EQ(slots[i].role, roles[i]);
    EXPECT_EQ(slots[i].dims, dims[i]);
    EXPECT_EQ(slots[i].count,
              std::accumulate(dims[i].begin(), dims[i].end(), int64_t{1}, std::multiplies<>()));
    EXPECT_EQ(slots[i].offset, offset);
    offset += slots[i].count;
  }
  EXPECT_EQ(g.param_count(), offset);
  EXPECT_EQ(offset, 5 * 8 + 5 + 8 * 9 + 8 + 8 + 8 * 27 + 8);
}

TEST(GraphParams, FanInFanOutAndInit) {
  Graph g("g", 16);
  ConvAttrs a = conv(32, 3, 1, 1, 4);
  a.bias = true;
  a.weight_init = Init{Init::Kind::TruncatedNormal, 0.1F};
  a.bias_init = Init{Init::Kind::DefaultBiasUniform};
  const NodeId c = g.add_conv(g.input(), a, "c");
  const NodeId bn = g.add_batchnorm(c, BatchNormAttrs{}, "bn");
  g.add_fc(g.add_flatten(g.add_adaptive_avg_pool(bn, 2, 2, "ap"), "flat"), fc(10), "fc");
  const std::vector<ParamSlot> slots = g.param_layout();
  ASSERT_EQ(slots.size(), 6U);
  // FC: fan_in = in_features = 32·2·2.
  EXPECT_EQ(slots[0].fan_in, 128);
  EXPECT_EQ(slots[0].fan_out, 10);
  EXPECT_EQ(slots[0].init.kind, Init::Kind::DefaultUniform);
  EXPECT_EQ(slots[1].fan_in, 128);
  EXPECT_EQ(slots[1].init.kind, Init::Kind::DefaultBiasUniform);
  EXPECT_EQ(slots[2].init.kind, Init::Kind::Ones);   // BN scale
  EXPECT_EQ(slots[3].init.kind, Init::Kind::Zeros);  // BN shift
  EXPECT_EQ(slots[3].dims, (std::vector<int64_t>{32}));
  // Conv, groups 4: fan_in = 16/4·3·3 = 36, fan_out = 32·3·3/4 = 72.
  EXPECT_EQ(slots[4].dims, (std::vector<int64_t>{32, 4, 3, 3}));
  EXPECT_EQ(slots[4].fan_in, 36);
  EXPECT_EQ(slots[4].fan_out, 72);
  EXPECT_EQ(slots[4].init.kind, Init::Kind::TruncatedNormal);
  EXPECT_FLOAT_EQ(slots[4].init.std, 0.1F);
  EXPECT_EQ(slots[5].role, ParamRole::Bias);
  EXPECT_EQ(slots[5].fan_in, 36);
}

TEST(GraphParams, LayoutIndependentOfImageSizeWhenPooled) {
  Graph g("g");
  g.add_fc(g.add_flatten(g.add_adaptive_avg_pool(g.add_conv(g.input(), conv(4, 3), "c"), 3, 3,
                                                  "ap"),
                         "flat"),
           fc(2), "fc");
  const int64_t before = g.param_count();
  g.infer_shapes(2, 50, 40);
  EXPECT_EQ(g.param_count(), before);
  g.infer_shapes(7, 9, 9);
  EXPECT_EQ(g.param_count(), before);
  EXPECT_EQ(before, 4 * 3 * 9 + 2 * 4 * 9 + 2);
}

TEST(GraphParams, FcOnUnpooledInputNeedsInferredShapes) {
  Graph g("g");
  const NodeId f = g.add_fc(g.add_flatten(g.input(), "flatten"), fc(10), "fc");
  EXPECT_THROW((void)g.param_layout(), std::logic_error);
  g.infer_shapes(1, 8, 6);
  EXPECT_EQ(g.param_count(), 3 * 8 * 6 * 10 + 10);
  EXPECT_EQ(g.param_layout().front().dims, (std::vector<int64_t>{10, 144}));
  EXPECT_EQ(g.num_classes(), 10);
  EXPECT_EQ(g.node(f).output, (Shape{1, 10, 1, 1}));
}

TEST(GraphParams, FlopsCountConvAndFcOnly) {
  Graph g("g", 3);
  ConvAttrs a = conv(8, 3, 1, 1, 1);
  a.bias = true;
  const NodeId c = g.add_conv(g.input(), a, "c");            // 8×3×3×3 weights × 10×10 outputs
  const NodeId dw = g.add_conv(c, conv(8, 3, 2, 1, 8), "dw");  // 8×1×3×3 × 5×5
  NodeId x = g.add_batchnorm(dw, BatchNormAttrs{}, "bn");
  x = g.add_relu(x, "relu");
  x = g.add_pool(x, pool(2, 2, 0, true), "pool");  // 3×3
  x = g.add_flatten(x, "flat");
  x = g.add_fc(x, fc(4), "fc");  // 72 → 4
  g.add_softmax_cross_entropy(x, "loss");
  EXPECT_THROW((void)g.flops_per_image(), std::logic_error);
  g.infer_shapes(16, 10, 10);
  const double expected = 2.0 * 8 * 3 * 9 * 100 + 2.0 * 8 * 1 * 9 * 25 + 2.0 * 72 * 4;
  EXPECT_DOUBLE_EQ(g.flops_per_image(), expected);
}

TEST(GraphParams, NumClassesIsLastFcOrZero) {
  Graph g("g");
  EXPECT_EQ(g.num_classes(), 0);
  const NodeId f1 = g.add_fc(g.input(), fc(100), "fc1");
  g.add_fc(f1, fc(9), "fc2");
  EXPECT_EQ(g.num_classes(), 9);
}

}  // namespace
}  // namespace cnnbench::models
