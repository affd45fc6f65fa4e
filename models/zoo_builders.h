// Builders of the zoo's model families, one file each (zoo_<family>.cpp), and
// the small blocks several families share. Internal to models/: the public entry
// point is build_model in zoo.h.
#pragma once

#include <string>

#include "models/graph.h"

namespace cnnbench::models::zoo_detail {

/// torchvision.models.resnet50/101/152 (ResNet v1.5: the stride sits on the 3×3
/// conv of the bottleneck). `blocks` = bottlenecks per stage, e.g. {3, 4, 6, 3}.
Graph build_resnet(const std::string& name, const int (&blocks)[4], int num_classes);
/// torchvision.models.vgg16/vgg19 (no batch norm). `convs_per_stage` = 3×3 convs
/// before each of the five max pools: {2, 2, 3, 3, 3} or {2, 2, 4, 4, 4}.
Graph build_vgg(const std::string& name, const int (&convs_per_stage)[5], int num_classes);
/// torchvision.models.alexnet.
Graph build_alexnet(int num_classes);
/// torchvision.models.googlenet(aux_logits=False, transform_input=False).
Graph build_googlenet(int num_classes);
/// torchvision.models.inception_v3(aux_logits=False, transform_input=False).
Graph build_inception3(int num_classes);
/// torchvision.models.mobilenet_v2(width_mult=1.0).
Graph build_mobilenet_v2(int num_classes);
/// tf_cnn_benchmarks' "trivial" model: input → flatten → one FC layer.
Graph build_trivial(int num_classes);

/// torchvision's BasicConv2d of GoogLeNet and Inception3: conv without bias,
/// BatchNorm2d(eps=0.001), ReLU, named "<prefix>.conv", "<prefix>.bn",
/// "<prefix>.relu". Conv weights are trunc_normal_(std=weight_std, a=−2, b=2),
/// as both models' init_weights do. Returns the ReLU's id.
inline NodeId basic_conv2d(Graph& g, NodeId in, ConvAttrs conv, float weight_std,
                           const std::string& prefix) {
  conv.bias = false;
  conv.weight_init = Init{Init::Kind::TruncatedNormal, weight_std};
  const NodeId c = g.add_conv(in, conv, prefix + ".conv");
  const NodeId b = g.add_batchnorm(c, BatchNormAttrs{.eps = 1e-3F}, prefix + ".bn");
  return g.add_relu(b, prefix + ".relu");
}

/// ConvAttrs for a k_h×k_w convolution with `out` channels, stride and padding.
inline ConvAttrs conv_attrs(int out, int k_h, int k_w, int stride = 1, int pad_h = 0,
                            int pad_w = 0) {
  ConvAttrs a;
  a.out_channels = out;
  a.kernel_h = k_h;
  a.kernel_w = k_w;
  a.stride_h = stride;
  a.stride_w = stride;
  a.pad_h = pad_h;
  a.pad_w = pad_w;
  return a;
}

/// Max or average pooling attributes with a square window.
inline PoolAttrs pool_attrs(PoolAttrs::Kind kind, int kernel, int stride, int pad = 0,
                            bool ceil_mode = false) {
  PoolAttrs a;
  a.kind = kind;
  a.kernel_h = a.kernel_w = kernel;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.ceil_mode = ceil_mode;
  return a;
}

}  // namespace cnnbench::models::zoo_detail
