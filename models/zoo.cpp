#include "models/zoo.h"

#include <stdexcept>

#include "models/zoo_builders.h"

namespace cnnbench::models {

namespace {

using zoo_detail::build_alexnet;
using zoo_detail::build_googlenet;
using zoo_detail::build_inception3;
using zoo_detail::build_mobilenet_v2;
using zoo_detail::build_resnet;
using zoo_detail::build_trivial;
using zoo_detail::build_vgg;

constexpr int kResnet50[4] = {3, 4, 6, 3};
constexpr int kResnet101[4] = {3, 4, 23, 3};
constexpr int kResnet152[4] = {3, 8, 36, 3};
constexpr int kVgg16[5] = {2, 2, 3, 3, 3};  // configuration "D"
constexpr int kVgg19[5] = {2, 2, 4, 4, 4};  // configuration "E"

/// A zoo entry and the function that builds its graph for a number of classes.
struct Entry {
  ModelInfo info;
  Graph (*build)(int num_classes);
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      {{"resnet50", 224, "torchvision.models.resnet50"},
       [](int k) { return build_resnet("resnet50", kResnet50, k); }},
      {{"resnet101", 224, "torchvision.models.resnet101"},
       [](int k) { return build_resnet("resnet101", kResnet101, k); }},
      {{"resnet152", 224, "torchvision.models.resnet152"},
       [](int k) { return build_resnet("resnet152", kResnet152, k); }},
      {{"vgg16", 224, "torchvision.models.vgg16"},
       [](int k) { return build_vgg("vgg16", kVgg16, k); }},
      {{"vgg19", 224, "torchvision.models.vgg19"},
       [](int k) { return build_vgg("vgg19", kVgg19, k); }},
      {{"alexnet", 224, "torchvision.models.alexnet"}, build_alexnet},
      {{"googlenet", 224, "torchvision.models.googlenet(aux_logits=False)"}, build_googlenet},
      {{"inception3", 299, "torchvision.models.inception_v3(aux_logits=False)"},
       build_inception3},
      {{"mobilenet_v2", 224, "torchvision.models.mobilenet_v2"}, build_mobilenet_v2},
      {{"trivial", 224, "tf_cnn_benchmarks trivial model (flatten + one fully connected layer)"},
       build_trivial},
  };
  return table;
}

const Entry& find_entry(std::string_view name) {
  for (const Entry& e : entries()) {
    if (e.info.name == name) {
      return e;
    }
  }
  throw std::invalid_argument("unknown model '" + std::string(name) +
                              "'; known models: " + model_names());
}

}  // namespace

const std::vector<ModelInfo>& zoo() {
  static const std::vector<ModelInfo> infos = [] {
    std::vector<ModelInfo> v;
    for (const Entry& e : entries()) {
      v.push_back(e.info);
    }
    return v;
  }();
  return infos;
}

const ModelInfo& model_info(std::string_view name) { return find_entry(name).info; }

Graph build_model(std::string_view name, int num_classes) {
  const Entry& entry = find_entry(name);
  if (num_classes < 1) {
    throw std::invalid_argument(std::string(name) + ": num_classes must be >= 1, got " +
                                std::to_string(num_classes));
  }
  return entry.build(num_classes);
}

std::string model_names() {
  std::string names;
  for (const Entry& e : entries()) {
    names += (names.empty() ? "" : ", ") + e.info.name;
  }
  return names;
}

}  // namespace cnnbench::models
