// VGG-16/19 without batch norm as torchvision.models.vgg defines them (Simonyan
// and Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
// Recognition", 2014, configurations D and E).
#include <string>

#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

namespace {

constexpr float kDropout = 0.5F;
constexpr int kStageChannels[5] = {64, 128, 256, 512, 512};

// torchvision's VGG init: Linear weights N(0, 0.01²), biases 0.
FullyConnectedAttrs vgg_fc(int out) {
  return FullyConnectedAttrs{.out_features = out,
                             .bias = true,
                             .weight_init = Init{Init::Kind::Normal, 0.01F},
                             .bias_init = Init{Init::Kind::Zeros}};
}

}  // namespace

Graph build_vgg(const std::string& name, const int (&convs_per_stage)[5], int num_classes) {
  Graph g(name);
  NodeId x = g.input();
  // Module indices of torchvision's nn.Sequential "features": conv, ReLU per
  // 3×3 layer, then a max pool per stage.
  int index = 0;
  auto next = [&index] { return "features." + std::to_string(index++); };
  for (int stage = 0; stage < 5; ++stage) {
    for (int i = 0; i < convs_per_stage[stage]; ++i) {
      // torchvision: kaiming_normal_(mode='fan_out', nonlinearity='relu'), bias 0.
      ConvAttrs conv = conv_attrs(kStageChannels[stage], 3, 3, 1, 1, 1);
      conv.bias = true;
      conv.weight_init = Init{Init::Kind::KaimingNormalFanOut};
      conv.bias_init = Init{Init::Kind::Zeros};
      x = g.add_conv(x, conv, next());
      x = g.add_relu(x, next());
    }
    x = g.add_pool(x, pool_attrs(PoolAttrs::Kind::Max, 2, 2), next());
  }
  x = g.add_adaptive_avg_pool(x, 7, 7, "avgpool");
  x = g.add_flatten(x, "flatten");
  x = g.add_fc(x, vgg_fc(4096), "classifier.0");
  x = g.add_relu(x, "classifier.1");
  x = g.add_dropout(x, kDropout, "classifier.2");
  x = g.add_fc(x, vgg_fc(4096), "classifier.3");
  x = g.add_relu(x, "classifier.4");
  x = g.add_dropout(x, kDropout, "classifier.5");
  x = g.add_fc(x, vgg_fc(num_classes), "classifier.6");
  g.add_softmax_cross_entropy(x, "loss");
  return g;
}

}  // namespace cnnbench::models::zoo_detail
