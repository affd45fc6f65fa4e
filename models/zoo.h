// The model zoo: builder functions for the classic ImageNet CNNs. Each follows
// torchvision's module definition (named per model below) without auxiliary
// classifiers (aux_logits=False), so param_count() equals torchvision's
// sum(p.numel() for p in model.parameters()) exactly at num_classes = 1000.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/graph.h"

namespace cnnbench::models {

/// One entry of the zoo, for --list_models and validation.
struct ModelInfo {
  std::string name;          ///< the --model value, e.g. "resnet50"
  int default_image_size;    ///< square input side in pixels (224; 299 for inception3)
  std::string source;        ///< the definition followed, e.g. "torchvision.models.resnet50"
};

/// Every model of the zoo, in a fixed order (the order --list_models prints).
const std::vector<ModelInfo>& zoo();

/// The zoo entry called `name`. Throws std::invalid_argument listing the known
/// names when there is none.
const ModelInfo& model_info(std::string_view name);

/// Builds the training graph of `name`: the network followed by a
/// SoftmaxCrossEntropy node on its logits. Shapes are not inferred yet.
/// Throws std::invalid_argument for an unknown name (listing the known ones)
/// or num_classes < 1.
Graph build_model(std::string_view name, int num_classes = 1000);

/// Comma-separated names of the zoo, for error messages ("alexnet, googlenet, ...").
std::string model_names();

}  // namespace cnnbench::models
