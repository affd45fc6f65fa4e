// Inception v3 as torchvision.models.inception_v3 defines it with
// aux_logits=False and transform_input=False (Szegedy et al., "Rethinking the
// Inception Architecture for Computer Vision", 2015). Default input 299×299.
#include <string>

#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

namespace {

// torchvision's Inception3 init: trunc_normal_(std=m.stddev if set else 0.1,
// a=-2, b=2) on conv and linear weights. Only the auxiliary classifier's
// layers set a stddev (0.01, 0.001), and it is left out, so 0.1 applies to all.
constexpr float kWeightStd = 0.1F;
constexpr float kDropout = 0.5F;

// The branch pools of the Inception blocks: F.avg_pool2d(x, 3, stride=1,
// padding=1) counts the padding (count_include_pad=True, PyTorch's default).
PoolAttrs branch_avg_pool() { return pool_attrs(PoolAttrs::Kind::Avg, 3, 1, 1); }
PoolAttrs reduction_max_pool() { return pool_attrs(PoolAttrs::Kind::Max, 3, 2); }

NodeId conv(Graph& g, NodeId in, const ConvAttrs& a, const std::string& prefix) {
  return basic_conv2d(g, in, a, kWeightStd, prefix);
}

// Square k×k conv with `out` channels.
ConvAttrs sq(int out, int k, int stride = 1, int pad = 0) {
  return conv_attrs(out, k, k, stride, pad, pad);
}
// The factorised 1×7 / 7×1 (and 1×3 / 3×1) convs, padded to keep H and W.
ConvAttrs row(int out, int k) { return conv_attrs(out, 1, k, 1, 0, k / 2); }
ConvAttrs col(int out, int k) { return conv_attrs(out, k, 1, 1, k / 2, 0); }

// InceptionA (35×35 grid): 1×1 | 1×1→5×5 | 1×1→3×3→3×3 | avg pool→1×1.
NodeId inception_a(Graph& g, NodeId in, int pool_features, const std::string& p) {
  const NodeId b1 = conv(g, in, sq(64, 1), p + ".branch1x1");
  NodeId b5 = conv(g, in, sq(48, 1), p + ".branch5x5_1");
  b5 = conv(g, b5, sq(64, 5, 1, 2), p + ".branch5x5_2");
  NodeId b3 = conv(g, in, sq(64, 1), p + ".branch3x3dbl_1");
  b3 = conv(g, b3, sq(96, 3, 1, 1), p + ".branch3x3dbl_2");
  b3 = conv(g, b3, sq(96, 3, 1, 1), p + ".branch3x3dbl_3");
  NodeId bp = g.add_pool(in, branch_avg_pool(), p + ".avg_pool");
  bp = conv(g, bp, sq(pool_features, 1), p + ".branch_pool");
  return g.add_concat({b1, b5, b3, bp}, p + ".cat");
}

// InceptionB (35→17 grid reduction): 3×3/2 | 1×1→3×3→3×3/2 | max pool/2.
NodeId inception_b(Graph& g, NodeId in, const std::string& p) {
  const NodeId b3 = conv(g, in, sq(384, 3, 2), p + ".branch3x3");
  NodeId bd = conv(g, in, sq(64, 1), p + ".branch3x3dbl_1");
  bd = conv(g, bd, sq(96, 3, 1, 1), p + ".branch3x3dbl_2");
  bd = conv(g, bd, sq(96, 3, 2), p + ".branch3x3dbl_3");
  const NodeId bp = g.add_pool(in, reduction_max_pool(), p + ".max_pool");
  return g.add_concat({b3, bd, bp}, p + ".cat");
}

// InceptionC (17×17 grid): 1×1 | 1×1→1×7→7×1 | 1×1→7×1→1×7→7×1→1×7 | avg pool→1×1.
NodeId inception_c(Graph& g, NodeId in, int c7, const std::string& p) {
  const NodeId b1 = conv(g, in, sq(192, 1), p + ".branch1x1");
  NodeId b7 = conv(g, in, sq(c7, 1), p + ".branch7x7_1");
  b7 = conv(g, b7, row(c7, 7), p + ".branch7x7_2");
  b7 = conv(g, b7, col(192, 7), p + ".branch7x7_3");
  NodeId bd = conv(g, in, sq(c7, 1), p + ".branch7x7dbl_1");
  bd = conv(g, bd, col(c7, 7), p + ".branch7x7dbl_2");
  bd = conv(g, bd, row(c7, 7), p + ".branch7x7dbl_3");
  bd = conv(g, bd, col(c7, 7), p + ".branch7x7dbl_4");
  bd = conv(g, bd, row(192, 7), p + ".branch7x7dbl_5");
  NodeId bp = g.add_pool(in, branch_avg_pool(), p + ".avg_pool");
  bp = conv(g, bp, sq(192, 1), p + ".branch_pool");
  return g.add_concat({b1, b7, bd, bp}, p + ".cat");
}

// InceptionD (17→8 grid reduction): 1×1→3×3/2 | 1×1→1×7→7×1→3×3/2 | max pool/2.
NodeId inception_d(Graph& g, NodeId in, const std::string& p) {
  NodeId b3 = conv(g, in, sq(192, 1), p + ".branch3x3_1");
  b3 = conv(g, b3, sq(320, 3, 2), p + ".branch3x3_2");
  NodeId b7 = conv(g, in, sq(192, 1), p + ".branch7x7x3_1");
  b7 = conv(g, b7, row(192, 7), p + ".branch7x7x3_2");
  b7 = conv(g, b7, col(192, 7), p + ".branch7x7x3_3");
  b7 = conv(g, b7, sq(192, 3, 2), p + ".branch7x7x3_4");
  const NodeId bp = g.add_pool(in, reduction_max_pool(), p + ".max_pool");
  return g.add_concat({b3, b7, bp}, p + ".cat");
}

// InceptionE (8×8 grid): 1×1 | 1×1→(1×3 ‖ 3×1) | 1×1→3×3→(1×3 ‖ 3×1) | avg pool→1×1.
NodeId inception_e(Graph& g, NodeId in, const std::string& p) {
  const NodeId b1 = conv(g, in, sq(320, 1), p + ".branch1x1");
  const NodeId b3 = conv(g, in, sq(384, 1), p + ".branch3x3_1");
  const NodeId b3a = conv(g, b3, row(384, 3), p + ".branch3x3_2a");
  const NodeId b3b = conv(g, b3, col(384, 3), p + ".branch3x3_2b");
  const NodeId b3cat = g.add_concat({b3a, b3b}, p + ".branch3x3.cat");
  NodeId bd = conv(g, in, sq(448, 1), p + ".branch3x3dbl_1");
  bd = conv(g, bd, sq(384, 3, 1, 1), p + ".branch3x3dbl_2");
  const NodeId bda = conv(g, bd, row(384, 3), p + ".branch3x3dbl_3a");
  const NodeId bdb = conv(g, bd, col(384, 3), p + ".branch3x3dbl_3b");
  const NodeId bdcat = g.add_concat({bda, bdb}, p + ".branch3x3dbl.cat");
  NodeId bp = g.add_pool(in, branch_avg_pool(), p + ".avg_pool");
  bp = conv(g, bp, sq(192, 1), p + ".branch_pool");
  return g.add_concat({b1, b3cat, bdcat, bp}, p + ".cat");
}

}  // namespace

Graph build_inception3(int num_classes) {
  Graph g("inception3");
  NodeId x = conv(g, g.input(), sq(32, 3, 2), "Conv2d_1a_3x3");
  x = conv(g, x, sq(32, 3), "Conv2d_2a_3x3");
  x = conv(g, x, sq(64, 3, 1, 1), "Conv2d_2b_3x3");
  x = g.add_pool(x, reduction_max_pool(), "maxpool1");
  x = conv(g, x, sq(80, 1), "Conv2d_3b_1x1");
  x = conv(g, x, sq(192, 3), "Conv2d_4a_3x3");
  x = g.add_pool(x, reduction_max_pool(), "maxpool2");
  x = inception_a(g, x, 32, "Mixed_5b");
  x = inception_a(g, x, 64, "Mixed_5c");
  x = inception_a(g, x, 64, "Mixed_5d");
  x = inception_b(g, x, "Mixed_6a");
  x = inception_c(g, x, 128, "Mixed_6b");
  x = inception_c(g, x, 160, "Mixed_6c");
  x = inception_c(g, x, 160, "Mixed_6d");
  x = inception_c(g, x, 192, "Mixed_6e");
  x = inception_d(g, x, "Mixed_7a");
  x = inception_e(g, x, "Mixed_7b");
  x = inception_e(g, x, "Mixed_7c");
  x = g.add_global_avg_pool(x, "avgpool");
  x = g.add_dropout(x, kDropout, "dropout");
  x = g.add_flatten(x, "flatten");
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
