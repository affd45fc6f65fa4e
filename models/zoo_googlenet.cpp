// GoogLeNet (Inception v1) as torchvision.models.googlenet defines it with
// aux_logits=False and transform_input=False (Szegedy et al., "Going Deeper with
// Convolutions", 2014, with batch norm in every conv block). As in torchvision,
// the "5×5" branch of each Inception block uses a 3×3 conv (pytorch/vision#906);
// following torchvision keeps the parameter count equal to its model's.
#include <string>

#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

namespace {

// torchvision's GoogLeNet init: trunc_normal_(std=0.01, a=-2, b=2) on every conv
// and linear weight; the fc bias keeps nn.Linear's default.
constexpr float kWeightStd = 0.01F;
constexpr float kDropout = 0.2F;

/// Channel counts of one Inception block, named as torchvision's arguments.
struct InceptionSpec {
  const char* name;
  int ch1x1;
  int ch3x3red;
  int ch3x3;
  int ch5x5red;
  int ch5x5;
  int pool_proj;
};

// Max pools of GoogLeNet all use ceil_mode=True, as in torchvision.
PoolAttrs max_pool(int kernel, int stride, int pad = 0) {
  return pool_attrs(PoolAttrs::Kind::Max, kernel, stride, pad, /*ceil_mode=*/true);
}

NodeId inception(Graph& g, NodeId in, const InceptionSpec& s) {
  const std::string p = s.name;
  const NodeId b1 = basic_conv2d(g, in, conv_attrs(s.ch1x1, 1, 1), kWeightStd, p + ".branch1");
  NodeId b2 = basic_conv2d(g, in, conv_attrs(s.ch3x3red, 1, 1), kWeightStd, p + ".branch2.0");
  b2 = basic_conv2d(g, b2, conv_attrs(s.ch3x3, 3, 3, 1, 1, 1), kWeightStd, p + ".branch2.1");
  NodeId b3 = basic_conv2d(g, in, conv_attrs(s.ch5x5red, 1, 1), kWeightStd, p + ".branch3.0");
  b3 = basic_conv2d(g, b3, conv_attrs(s.ch5x5, 3, 3, 1, 1, 1), kWeightStd, p + ".branch3.1");
  NodeId b4 = g.add_pool(in, max_pool(3, 1, 1), p + ".branch4.0");
  b4 = basic_conv2d(g, b4, conv_attrs(s.pool_proj, 1, 1), kWeightStd, p + ".branch4.1");
  return g.add_concat({b1, b2, b3, b4}, p + ".cat");
}

}  // namespace

Graph build_googlenet(int num_classes) {
  Graph g("googlenet");
  NodeId x = basic_conv2d(g, g.input(), conv_attrs(64, 7, 7, 2, 3, 3), kWeightStd, "conv1");
  x = g.add_pool(x, max_pool(3, 2), "maxpool1");
  x = basic_conv2d(g, x, conv_attrs(64, 1, 1), kWeightStd, "conv2");
  x = basic_conv2d(g, x, conv_attrs(192, 3, 3, 1, 1, 1), kWeightStd, "conv3");
  x = g.add_pool(x, max_pool(3, 2), "maxpool2");
  x = inception(g, x, {.name = "inception3a", .ch1x1 = 64, .ch3x3red = 96, .ch3x3 = 128,
                       .ch5x5red = 16, .ch5x5 = 32, .pool_proj = 32});
  x = inception(g, x, {.name = "inception3b", .ch1x1 = 128, .ch3x3red = 128, .ch3x3 = 192,
                       .ch5x5red = 32, .ch5x5 = 96, .pool_proj = 64});
  x = g.add_pool(x, max_pool(3, 2), "maxpool3");
  x = inception(g, x, {.name = "inception4a", .ch1x1 = 192, .ch3x3red = 96, .ch3x3 = 208,
                       .ch5x5red = 16, .ch5x5 = 48, .pool_proj = 64});
  x = inception(g, x, {.name = "inception4b", .ch1x1 = 160, .ch3x3red = 112, .ch3x3 = 224,
                       .ch5x5red = 24, .ch5x5 = 64, .pool_proj = 64});
  x = inception(g, x, {.name = "inception4c", .ch1x1 = 128, .ch3x3red = 128, .ch3x3 = 256,
                       .ch5x5red = 24, .ch5x5 = 64, .pool_proj = 64});
  x = inception(g, x, {.name = "inception4d", .ch1x1 = 112, .ch3x3red = 144, .ch3x3 = 288,
                       .ch5x5red = 32, .ch5x5 = 64, .pool_proj = 64});
  x = inception(g, x, {.name = "inception4e", .ch1x1 = 256, .ch3x3red = 160, .ch3x3 = 320,
                       .ch5x5red = 32, .ch5x5 = 128, .pool_proj = 128});
  x = g.add_pool(x, max_pool(2, 2), "maxpool4");
  x = inception(g, x, {.name = "inception5a", .ch1x1 = 256, .ch3x3red = 160, .ch3x3 = 320,
                       .ch5x5red = 32, .ch5x5 = 128, .pool_proj = 128});
  x = inception(g, x, {.name = "inception5b", .ch1x1 = 384, .ch3x3red = 192, .ch3x3 = 384,
                       .ch5x5red = 48, .ch5x5 = 128, .pool_proj = 128});
  x = g.add_global_avg_pool(x, "avgpool");
  x = g.add_flatten(x, "flatten");
  x = g.add_dropout(x, kDropout, "dropout");
  x = g.add_fc(x,
               FullyConnectedAttrs{.out_features = num_classes,
                                   .bias = true,
                                   .weight_init = Init{Init::Kind::TruncatedNormal, kWeightStd},
                                   .bias_init = Init{Init::Kind::DefaultBiasUniform}},
               "fc");
  g.add_softmax_cross_entropy(x, "loss");
  return g;
}

}  // namespace cnnbench::models::zoo_detail
