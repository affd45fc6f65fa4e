// MobileNetV2 (width 1.0) as torchvision.models.mobilenet_v2 defines it
// (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks", 2018).
#include <string>

#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

namespace {

constexpr float kDropout = 0.2F;
constexpr int kFirstChannels = 32;
constexpr int kLastChannels = 1280;

/// One row of torchvision's inverted_residual_setting: expansion t, output
/// channels c, repeats n, stride s of the first repeat. At width 1.0 every c is
/// already a multiple of 8, so _make_divisible leaves it unchanged.
struct StageSpec {
  int expand;
  int channels;
  int repeats;
  int stride;
};

constexpr StageSpec kStages[] = {
    {.expand = 1, .channels = 16, .repeats = 1, .stride = 1},
    {.expand = 6, .channels = 24, .repeats = 2, .stride = 2},
    {.expand = 6, .channels = 32, .repeats = 3, .stride = 2},
    {.expand = 6, .channels = 64, .repeats = 4, .stride = 2},
    {.expand = 6, .channels = 96, .repeats = 3, .stride = 1},
    {.expand = 6, .channels = 160, .repeats = 3, .stride = 2},
    {.expand = 6, .channels = 320, .repeats = 1, .stride = 1},
};

// torchvision's init: conv weights kaiming_normal_(mode='fan_out') (gain √2 as
// for ReLU), no conv bias (every conv is followed by BN), BN 1/0.
ConvAttrs mobilenet_conv(int out, int kernel, int stride, int groups) {
  ConvAttrs a = conv_attrs(out, kernel, kernel, stride, (kernel - 1) / 2, (kernel - 1) / 2);
  a.groups = groups;
  a.weight_init = Init{Init::Kind::KaimingNormalFanOut};
  return a;
}

// torchvision's Conv2dNormActivation(..., activation_layer=nn.ReLU6): modules
// "<p>.0" conv, "<p>.1" BN, "<p>.2" ReLU6.
NodeId conv_bn_relu6(Graph& g, NodeId in, const ConvAttrs& conv, const std::string& p) {
  NodeId x = g.add_conv(in, conv, p + ".0");
  x = g.add_batchnorm(x, BatchNormAttrs{}, p + ".1");
  return g.add_relu6(x, p + ".2");
}

// torchvision's InvertedResidual: [1×1 expand] → 3×3 depthwise (stride) → 1×1
// linear projection + BN; the input is added back when stride is 1 and the
// channel count is unchanged.
NodeId inverted_residual(Graph& g, NodeId in, int in_channels, const StageSpec& s, int stride,
                         const std::string& p) {
  const int hidden = in_channels * s.expand;
  int module = 0;
  auto next = [&] { return p + ".conv." + std::to_string(module++); };
  NodeId x = in;
  if (s.expand != 1) {
    x = conv_bn_relu6(g, x, mobilenet_conv(hidden, 1, 1, 1), next());
  }
  x = conv_bn_relu6(g, x, mobilenet_conv(hidden, 3, stride, hidden), next());
  x = g.add_conv(x, mobilenet_conv(s.channels, 1, 1, 1), next());
  x = g.add_batchnorm(x, BatchNormAttrs{}, next());
  if (stride == 1 && in_channels == s.channels) {
    x = g.add_add({in, x}, p + ".add");
  }
  return x;
}

}  // namespace

Graph build_mobilenet_v2(int num_classes) {
  Graph g("mobilenet_v2");
  int feature = 0;
  auto next = [&feature] { return "features." + std::to_string(feature++); };
  NodeId x = conv_bn_relu6(g, g.input(), mobilenet_conv(kFirstChannels, 3, 2, 1), next());
  int channels = kFirstChannels;
  for (const StageSpec& s : kStages) {
    for (int i = 0; i < s.repeats; ++i) {
      x = inverted_residual(g, x, channels, s, i == 0 ? s.stride : 1, next());
      channels = s.channels;
    }
  }
  x = conv_bn_relu6(g, x, mobilenet_conv(kLastChannels, 1, 1, 1), next());
  x = g.add_global_avg_pool(x, "avgpool");
  x = g.add_flatten(x, "flatten");
  x = g.add_dropout(x, kDropout, "classifier.0");
  // torchvision: Linear weight N(0, 0.01²), bias 0.
  x = g.add_fc(x,
               FullyConnectedAttrs{.out_features = num_classes,
                                   .bias = true,
                                   .weight_init = Init{Init::Kind::Normal, 0.01F},
                                   .bias_init = Init{Init::Kind::Zeros}},
               "classifier.1");
  g.add_softmax_cross_entropy(x, "loss");
  return g;
}

}  // namespace cnnbench::models::zoo_detail
