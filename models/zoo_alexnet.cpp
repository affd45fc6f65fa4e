// AlexNet as torchvision.models.alexnet defines it: the one-GPU variant of
// Krizhevsky, "One weird trick for parallelizing convolutional neural networks",
// 2014 (64/192/384/256/256 filters), with AdaptiveAvgPool2d((6, 6)).
#include <string>

#include "models/zoo_builders.h"

namespace cnnbench::models::zoo_detail {

namespace {

constexpr float kDropout = 0.5F;

// torchvision applies no init of its own: PyTorch's Conv2d default,
// kaiming_uniform_(a=√5) for weights and U(±1/√fan_in) for biases.
ConvAttrs alexnet_conv(int out, int kernel, int stride, int pad) {
  ConvAttrs a = conv_attrs(out, kernel, kernel, stride, pad, pad);
  a.bias = true;
  a.weight_init = Init{Init::Kind::DefaultUniform};
  a.bias_init = Init{Init::Kind::DefaultBiasUniform};
  return a;
}

}  // namespace

Graph build_alexnet(int num_classes) {
  Graph g("alexnet");
  const PoolAttrs pool = pool_attrs(PoolAttrs::Kind::Max, 3, 2);
  NodeId x = g.add_conv(g.input(), alexnet_conv(64, 11, 4, 2), "features.0");
  x = g.add_relu(x, "features.1");
  x = g.add_pool(x, pool, "features.2");
  x = g.add_conv(x, alexnet_conv(192, 5, 1, 2), "features.3");
  x = g.add_relu(x, "features.4");
  x = g.add_pool(x, pool, "features.5");
  x = g.add_conv(x, alexnet_conv(384, 3, 1, 1), "features.6");
  x = g.add_relu(x, "features.7");
  x = g.add_conv(x, alexnet_conv(256, 3, 1, 1), "features.8");
  x = g.add_relu(x, "features.9");
  x = g.add_conv(x, alexnet_conv(256, 3, 1, 1), "features.10");
  x = g.add_relu(x, "features.11");
  x = g.add_pool(x, pool, "features.12");
  x = g.add_adaptive_avg_pool(x, 6, 6, "avgpool");
  x = g.add_flatten(x, "flatten");
  x = g.add_dropout(x, kDropout, "classifier.0");
  x = g.add_fc(x, FullyConnectedAttrs{.out_features = 4096}, "classifier.1");
  x = g.add_relu(x, "classifier.2");
  x = g.add_dropout(x, kDropout, "classifier.3");
  x = g.add_fc(x, FullyConnectedAttrs{.out_features = 4096}, "classifier.4");
  x = g.add_relu(x, "classifier.5");
  x = g.add_fc(x, FullyConnectedAttrs{.out_features = num_classes}, "classifier.6");
  g.add_softmax_cross_entropy(x, "loss");
  return g;
}

}  // namespace cnnbench::models::zoo_detail
