// ResNet-50/101/152 as torchvision.models.resnet defines them (He et al., "Deep
// Residual Learning for Image Recognition", 2015, with the v1.5 change: stride 2
// on the bottleneck's 3×3 conv rather than its first 1×1).
#include <string>

#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

namespace {

constexpr int kExpansion = 4;  // bottleneck output channels = 4 × width

// torchvision's ResNet init: kaiming_normal_(mode='fan_out', nonlinearity='relu')
// on every conv (no conv has a bias); BatchNorm 1/0 (zero_init_residual=False).
ConvAttrs resnet_conv(int out, int kernel, int stride, int pad) {
  ConvAttrs a = conv_attrs(out, kernel, kernel, stride, pad, pad);
  a.weight_init = Init{Init::Kind::KaimingNormalFanOut};
  return a;
}

NodeId conv_bn(Graph& g, NodeId in, const ConvAttrs& conv, const std::string& conv_name,
               const std::string& bn_name) {
  return g.add_batchnorm(g.add_conv(in, conv, conv_name), BatchNormAttrs{}, bn_name);
}

// torchvision's Bottleneck: 1×1 → 3×3 (stride) → 1×1 (4× width), each with
// BN; a 1×1 conv + BN projection ("downsample") where the shape changes.
NodeId bottleneck(Graph& g, NodeId in, int in_channels, int width, int stride,
                  const std::string& p) {
  const int out_channels = width * kExpansion;
  NodeId x = conv_bn(g, in, resnet_conv(width, 1, 1, 0), p + ".conv1", p + ".bn1");
  x = g.add_relu(x, p + ".relu1");
  x = conv_bn(g, x, resnet_conv(width, 3, stride, 1), p + ".conv2", p + ".bn2");
  x = g.add_relu(x, p + ".relu2");
  x = conv_bn(g, x, resnet_conv(out_channels, 1, 1, 0), p + ".conv3", p + ".bn3");
  NodeId identity = in;
  if (stride != 1 || in_channels != out_channels) {
    identity = conv_bn(g, in, resnet_conv(out_channels, 1, stride, 0), p + ".downsample.0",
                       p + ".downsample.1");
  }
  const NodeId sum = g.add_add({x, identity}, p + ".add");
  return g.add_relu(sum, p + ".relu3");
}

}  // namespace

Graph build_resnet(const std::string& name, const int (&blocks)[4], int num_classes) {
  Graph g(name);
  NodeId x = conv_bn(g, g.input(), resnet_conv(64, 7, 2, 3), "conv1", "bn1");
  x = g.add_relu(x, "relu");
  x = g.add_pool(x, pool_attrs(PoolAttrs::Kind::Max, 3, 2, 1), "maxpool");
  int channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage;
    const std::string layer = "layer" + std::to_string(stage + 1);
    for (int b = 0; b < blocks[stage]; ++b) {
      const int stride = (stage > 0 && b == 0) ? 2 : 1;
      x = bottleneck(g, x, channels, width, stride, layer + "." + std::to_string(b));
      channels = width * kExpansion;
    }
  }
  x = g.add_global_avg_pool(x, "avgpool");
  x = g.add_flatten(x, "flatten");
  // The fc keeps nn.Linear's default init: torchvision's loop skips Linear.
  x = g.add_fc(x, FullyConnectedAttrs{.out_features = num_classes}, "fc");
  g.add_softmax_cross_entropy(x, "loss");
  return g;
}

}  // namespace cnnbench::models::zoo_detail
