// The problems the micro-benchmarks run, taken from the zoo's graph IR at a
// given batch and image size (models::build_model + Graph::infer_shapes), never
// from a hand-copied list: every distinct convolution geometry, batch
// normalisation with what follows it, pooling window, the loss and the
// parameter count. Kept apart from the implementations that time them (as
// DeepBench keeps its shapes apart from its per-vendor kernels). Host code only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/graph.h"

namespace cnnbench::bench::micro {

/// One distinct convolution of a model: every conv node with the same input
/// shape, output channels, kernel, stride, padding, groups and bias.
struct ConvProblem {
  std::string model;     ///< zoo name, e.g. "resnet50"
  std::string layer;     ///< the first conv node with this geometry, e.g. "layer1.0.conv2"
  int occurrences = 0;   ///< conv nodes of the graph with this geometry
  /// Every node with this geometry reads the graph's images: a training step
  /// needs no dgrad for it (nothing upstream wants ∂loss/∂images).
  bool reads_images = false;
  models::Shape input;      ///< [N, C, H, W]
  models::ConvAttrs attrs;  ///< geometry; the init fields do not matter here
  models::Shape output;     ///< [N, K, P, Q]

  /// "x[32,64,56,56] w[64,64,3,3] y[32,64,56,56] s1 p1 g1 x3": the shapes,
  /// stride, padding, groups and occurrences, for benchmark labels.
  [[nodiscard]] std::string describe() const;
};

/// What follows a BatchNorm node in the graph, i.e. which fused kernel variant
/// the CUDA backend runs for it (kernels/cuda/batchnorm.cuh).
enum class BatchNormEpilogue {
  None,     ///< plain BN (e.g. a ResNet downsample branch, or before ReLU6)
  Relu,     ///< BN → ReLU
  AddRelu,  ///< BN → Add (this BN is the add's first input) → ReLU: the residual add fused
};
const char* to_string(BatchNormEpilogue e);  ///< "bn", "bn_relu", "bn_add_relu"

/// One distinct batch normalisation of a model: tensor shape and epilogue.
struct BatchNormProblem {
  std::string model;
  std::string layer;  ///< the first BN node with this shape and epilogue
  int occurrences = 0;
  models::Shape shape;
  BatchNormEpilogue epilogue = BatchNormEpilogue::None;
};

/// One distinct pooling of a model.
struct PoolProblem {
  enum class Kind { Max, Avg, AdaptiveAvg };
  std::string model;
  std::string layer;
  int occurrences = 0;
  Kind kind = Kind::Max;
  models::Shape input;
  models::Shape output;
  models::PoolAttrs window;             ///< Max and Avg
  models::AdaptiveAvgPoolAttrs adaptive;  ///< AdaptiveAvg
};
const char* to_string(PoolProblem::Kind k);  ///< "maxpool", "avgpool", "adaptive_avgpool"

/// The loss of a model: logits [N, classes].
struct LossProblem {
  std::string model;
  std::string layer;
  int n = 0;
  int classes = 0;
};

/// "[32,64,56,56]": a shape's N, C, H, W, for labels.
std::string format_shape(const models::Shape& s);

/// The distinct convolutions of `graph` (shapes inferred), in graph order of
/// their first node. Throws std::logic_error when shapes are not inferred.
std::vector<ConvProblem> conv_problems(const models::Graph& graph);
/// The distinct batch normalisations, in graph order of their first node.
std::vector<BatchNormProblem> batchnorm_problems(const models::Graph& graph);
/// The distinct poolings (max, average, adaptive average), in graph order.
std::vector<PoolProblem> pool_problems(const models::Graph& graph);
/// The softmax cross-entropy of the graph, if it has one.
std::optional<LossProblem> loss_problem(const models::Graph& graph);

/// build_model(model) with shapes inferred for `batch` images of
/// image_size × image_size (0: the model's default size). Throws
/// std::invalid_argument for an unknown model, a batch < 1 or an image too small.
models::Graph inferred_model(std::string_view model, int batch, int image_size);

/// Every zoo model's name when `names` is {"all"}, else `names` itself after
/// checking each against the zoo (std::invalid_argument listing the known ones).
std::vector<std::string> resolve_models(const std::vector<std::string>& names);

}  // namespace cnnbench::bench::micro
