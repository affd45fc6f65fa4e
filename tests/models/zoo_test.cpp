// The model zoo against torchvision: parameter counts, every parameter tensor's
// name and shape, output and intermediate shapes, FLOPs, the range of image
// sizes each model accepts, and the initialisation each model declares.
//
// Reference numbers come from torch 2.15.0 / torchvision 0.29.2 (CPU), printed
// by tests/models/torchvision_reference.py (--facts) and by forward hooks on the
// named modules; data/torchvision_parameters.txt is that script's output.
#include "models/zoo.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnnbench::models {
namespace {

using ::testing::HasSubstr;

/// torchvision's figures for one model (aux_logits=False where it applies).
struct Reference {
  const char* name;
  int64_t params;        ///< sum(p.numel() for p in model.parameters())
  int tensors;           ///< len(list(model.parameters()))
  int image_size;        ///< default input side
  double flops_default;  ///< 2 × conv/linear multiply-adds per image at image_size
  double flops_160;      ///< the same at 160×160
  int smallest_size;     ///< smallest square input the model runs on (eval, batch 1)
};

constexpr Reference kReferences[] = {
    {.name = "resnet50", .params = 25557032, .tensors = 161, .image_size = 224,
     .flops_default = 8178368512.0, .flops_160 = 4174643200.0, .smallest_size = 1},
    {.name = "resnet101", .params = 44549160, .tensors = 314, .image_size = 224,
     .flops_default = 15602810880.0, .flops_160 = 7962624000.0, .smallest_size = 1},
    {.name = "resnet152", .params = 60192808, .tensors = 467, .image_size = 224,
     .flops_default = 23027253248.0, .flops_160 = 11750604800.0, .smallest_size = 1},
    {.name = "vgg16", .params = 138357544, .tensors = 32, .image_size = 224,
     .flops_default = 30940528640.0, .flops_160 = 15907094528.0, .smallest_size = 32},
    {.name = "vgg19", .params = 143667240, .tensors = 38, .image_size = 224,
     .flops_default = 39264124928.0, .flops_160 = 20153827328.0, .smallest_size = 32},
    {.name = "alexnet", .params = 61100840, .tensors = 16, .image_size = 224,
     .flops_default = 1428376960.0, .flops_160 = 756088192.0, .smallest_size = 63},
    {.name = "googlenet", .params = 6624904, .tensors = 173, .image_size = 224,
     .flops_default = 2996752384.0, .flops_160 = 1529958400.0, .smallest_size = 15},
    {.name = "inception3", .params = 23834568, .tensors = 284, .image_size = 299,
     .flops_default = 11426432192.0, .flops_160 = 2558945984.0, .smallest_size = 75},
    {.name = "mobilenet_v2", .params = 3504872, .tensors = 158, .image_size = 224,
     .flops_default = 601548544.0, .flops_160 = 308166400.0, .smallest_size = 1},
};

// torchvision accepts every side from smallest_size up to this one (checked).
constexpr int kLargestCheckedSize = 96;

const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes()) {
    if (n.name == name) {
      return &n;
    }
  }
  return nullptr;
}

Shape output_of(const Graph& g, const std::string& name) {
  const Node* n = find_node(g, name);
  if (n == nullptr) {
    ADD_FAILURE() << g.name() << " has no node " << name;
    return Shape{};
  }
  return n->output;
}

// torchvision's parameter name of a slot: BN scale/shift are its weight/bias.
std::string torch_name(const Graph& g, const ParamSlot& s) {
  const bool weight = s.role == ParamRole::Weight || s.role == ParamRole::Scale;
  return g.node(s.node).name + (weight ? ".weight" : ".bias");
}

// model → (parameter name → dims), from data/torchvision_parameters.txt.
using ParamShapes = std::map<std::string, std::vector<int64_t>>;
const std::map<std::string, ParamShapes>& torchvision_parameters() {
  static const std::map<std::string, ParamShapes> table = [] {
    std::map<std::string, ParamShapes> t;
    std::ifstream file(CNNBENCH_SOURCE_DIR "/tests/models/data/torchvision_parameters.txt");
    std::string line;
    while (std::getline(file, line)) {
      if (line.empty() || line[0] == '#') {
        continue;
      }
      std::istringstream fields(line);
      std::string model;
      std::string param;
      fields >> model >> param;
      std::vector<int64_t> dims;
      for (int64_t d = 0; fields >> d;) {
        dims.push_back(d);
      }
      t[model][param] = dims;
    }
    return t;
  }();
  return table;
}

class ZooModel : public ::testing::TestWithParam<Reference> {};

TEST_P(ZooModel, ParameterCountEqualsTorchvision) {
  const Reference& ref = GetParam();
  const Graph g = build_model(ref.name);
  EXPECT_EQ(g.param_count(), ref.params);
  EXPECT_EQ(g.param_layout().size(), static_cast<size_t>(ref.tensors));
}

TEST_P(ZooModel, EveryParameterTensorMatchesTorchvisionByNameAndShape) {
  const Reference& ref = GetParam();
  const Graph g = build_model(ref.name);
  const auto& all = torchvision_parameters();
  ASSERT_TRUE(all.count(ref.name)) << "no reference data for " << ref.name;
  ParamShapes ours;
  for (const ParamSlot& s : g.param_layout()) {
    EXPECT_TRUE(ours.emplace(torch_name(g, s), s.dims).second) << torch_name(g, s);
  }
  EXPECT_EQ(ours, all.at(ref.name));
}

TEST_P(ZooModel, LayoutIsBackwardOrderedAndContiguous) {
  const Graph g = build_model(GetParam().name);
  int64_t offset = 0;
  NodeId previous = static_cast<NodeId>(g.nodes().size());
  for (const ParamSlot& s : g.param_layout()) {
    EXPECT_EQ(s.offset, offset);
    EXPECT_LE(s.node, previous);
    EXPECT_GT(s.count, 0);
    if (s.role == ParamRole::Weight && std::holds_alternative<ConvAttrs>(g.node(s.node).attrs)) {
      EXPECT_GT(s.fan_in, 0);
      EXPECT_GT(s.fan_out, 0);
    }
    previous = s.node;
    offset += s.count;
  }
  EXPECT_EQ(offset, g.param_count());
}

TEST_P(ZooModel, LogitsAndLossAtDefaultImageSize) {
  const Reference& ref = GetParam();
  EXPECT_EQ(model_info(ref.name).default_image_size, ref.image_size);
  Graph g = build_model(ref.name);
  g.infer_shapes(2, ref.image_size, ref.image_size);
  const Node& loss = g.node(g.output());
  EXPECT_EQ(loss.op(), OpKind::SoftmaxCrossEntropy);
  EXPECT_EQ(loss.output, (Shape{1, 1, 1, 1}));
  const Node& logits = g.node(loss.inputs.front());
  EXPECT_EQ(logits.op(), OpKind::FullyConnected);
  EXPECT_EQ(logits.output, (Shape{2, 1000, 1, 1}));
  EXPECT_EQ(g.num_classes(), 1000);
}

TEST_P(ZooModel, FlopsEqualTorchvisionModuleShapes) {
  const Reference& ref = GetParam();
  Graph g = build_model(ref.name);
  g.infer_shapes(1, ref.image_size, ref.image_size);
  EXPECT_DOUBLE_EQ(g.flops_per_image(), ref.flops_default);
  g.infer_shapes(4, 160, 160);
  EXPECT_DOUBLE_EQ(g.flops_per_image(), ref.flops_160);
}

TEST_P(ZooModel, AcceptsTheImageSizesTorchvisionAccepts) {
  const Reference& ref = GetParam();
  Graph g = build_model(ref.name);
  for (int side = ref.smallest_size; side <= kLargestCheckedSize; ++side) {
    EXPECT_NO_THROW(g.infer_shapes(1, side, side)) << ref.name << " at " << side;
  }
  if (ref.smallest_size > 1) {
    try {
      g.infer_shapes(1, ref.smallest_size - 1, ref.smallest_size - 1);
      ADD_FAILURE() << ref.name << " accepted " << ref.smallest_size - 1;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("is smaller than the"));
      EXPECT_THAT(e.what(), HasSubstr("use a larger --image_size"));
    }
  }
}

TEST_P(ZooModel, OtherClassCountsChangeOnlyTheLastLayer) {
  const Reference& ref = GetParam();
  Graph g = build_model(ref.name, 10);
  g.infer_shapes(3, ref.image_size, ref.image_size);
  EXPECT_EQ(g.num_classes(), 10);
  EXPECT_EQ(g.node(g.node(g.output()).inputs.front()).output, (Shape{3, 10, 1, 1}));
  const std::vector<ParamSlot> layout = g.param_layout();
  const ParamSlot& fc_weight = layout.front();
  const int64_t in_features = fc_weight.dims.at(1);
  EXPECT_EQ(fc_weight.dims.at(0), 10);
  EXPECT_EQ(ref.params - g.param_count(), (1000 - 10) * (in_features + 1));
}

INSTANTIATE_TEST_SUITE_P(Torchvision, ZooModel, ::testing::ValuesIn(kReferences),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// ------------------------------------------------ intermediate shapes ----

/// The output of one named node at a square image side, batch 2, as the
/// torchvision module of that name (or the block ending there) produces it.
struct ShapeCheck {
  const char* model;
  int side;
  const char* node;
  Shape shape;
};

const ShapeCheck kShapeChecks[] = {
    {.model = "resnet50", .side = 224, .node = "maxpool", .shape = {2, 64, 56, 56}},
    {.model = "resnet50", .side = 224, .node = "layer1.2.relu3", .shape = {2, 256, 56, 56}},
    // v1.5: the stride sits on the 3x3 conv2.
    {.model = "resnet50", .side = 224, .node = "layer2.0.conv2", .shape = {2, 128, 28, 28}},
    {.model = "resnet50", .side = 224, .node = "layer2.0.downsample.0", .shape = {2, 512, 28, 28}},
    {.model = "resnet50", .side = 224, .node = "layer2.3.relu3", .shape = {2, 512, 28, 28}},
    {.model = "resnet50", .side = 224, .node = "layer3.5.relu3", .shape = {2, 1024, 14, 14}},
    {.model = "resnet50", .side = 224, .node = "layer4.2.relu3", .shape = {2, 2048, 7, 7}},
    {.model = "resnet50", .side = 37, .node = "maxpool", .shape = {2, 64, 10, 10}},
    {.model = "resnet50", .side = 37, .node = "layer3.5.relu3", .shape = {2, 1024, 3, 3}},
    {.model = "resnet50", .side = 37, .node = "layer4.2.relu3", .shape = {2, 2048, 2, 2}},
    {.model = "resnet50", .side = 1, .node = "layer4.2.relu3", .shape = {2, 2048, 1, 1}},
    {.model = "resnet152", .side = 224, .node = "layer3.35.relu3", .shape = {2, 1024, 14, 14}},
    {.model = "resnet152", .side = 224, .node = "layer4.2.relu3", .shape = {2, 2048, 7, 7}},
    {.model = "vgg16", .side = 224, .node = "features.4", .shape = {2, 64, 112, 112}},
    {.model = "vgg16", .side = 224, .node = "features.16", .shape = {2, 256, 28, 28}},
    {.model = "vgg16", .side = 224, .node = "features.30", .shape = {2, 512, 7, 7}},
    {.model = "vgg16", .side = 224, .node = "avgpool", .shape = {2, 512, 7, 7}},
    {.model = "vgg16", .side = 224, .node = "classifier.0", .shape = {2, 4096, 1, 1}},
    {.model = "vgg16", .side = 45, .node = "features.16", .shape = {2, 256, 5, 5}},
    {.model = "vgg16", .side = 32, .node = "features.30", .shape = {2, 512, 1, 1}},
    {.model = "vgg16", .side = 32, .node = "avgpool", .shape = {2, 512, 7, 7}},
    {.model = "vgg19", .side = 224, .node = "features.36", .shape = {2, 512, 7, 7}},
    {.model = "alexnet", .side = 224, .node = "features.0", .shape = {2, 64, 55, 55}},
    {.model = "alexnet", .side = 224, .node = "features.2", .shape = {2, 64, 27, 27}},
    {.model = "alexnet", .side = 224, .node = "features.5", .shape = {2, 192, 13, 13}},
    {.model = "alexnet", .side = 224, .node = "features.12", .shape = {2, 256, 6, 6}},
    {.model = "alexnet", .side = 100, .node = "features.5", .shape = {2, 192, 5, 5}},
    {.model = "alexnet", .side = 100, .node = "features.12", .shape = {2, 256, 2, 2}},
    {.model = "alexnet", .side = 63, .node = "features.12", .shape = {2, 256, 1, 1}},
    {.model = "alexnet", .side = 63, .node = "avgpool", .shape = {2, 256, 6, 6}},
    {.model = "googlenet", .side = 224, .node = "conv1.relu", .shape = {2, 64, 112, 112}},
    {.model = "googlenet", .side = 224, .node = "maxpool1", .shape = {2, 64, 56, 56}},
    {.model = "googlenet", .side = 224, .node = "maxpool2", .shape = {2, 192, 28, 28}},
    {.model = "googlenet", .side = 224, .node = "inception3b.cat", .shape = {2, 480, 28, 28}},
    {.model = "googlenet", .side = 224, .node = "maxpool3", .shape = {2, 480, 14, 14}},
    {.model = "googlenet", .side = 224, .node = "inception4e.cat", .shape = {2, 832, 14, 14}},
    {.model = "googlenet", .side = 224, .node = "maxpool4", .shape = {2, 832, 7, 7}},
    {.model = "googlenet", .side = 224, .node = "inception5b.cat", .shape = {2, 1024, 7, 7}},
    {.model = "googlenet", .side = 50, .node = "maxpool1", .shape = {2, 64, 12, 12}},
    {.model = "googlenet", .side = 50, .node = "maxpool3", .shape = {2, 480, 3, 3}},
    {.model = "googlenet", .side = 50, .node = "inception5b.cat", .shape = {2, 1024, 2, 2}},
    {.model = "googlenet", .side = 15, .node = "maxpool2", .shape = {2, 192, 2, 2}},
    {.model = "googlenet", .side = 15, .node = "inception5b.cat", .shape = {2, 1024, 1, 1}},
    {.model = "inception3", .side = 299, .node = "Conv2d_1a_3x3.relu", .shape = {2, 32, 149, 149}},
    {.model = "inception3", .side = 299, .node = "Conv2d_4a_3x3.relu", .shape = {2, 192, 71, 71}},
    {.model = "inception3", .side = 299, .node = "maxpool2", .shape = {2, 192, 35, 35}},
    {.model = "inception3", .side = 299, .node = "Mixed_5b.cat", .shape = {2, 256, 35, 35}},
    {.model = "inception3", .side = 299, .node = "Mixed_5d.cat", .shape = {2, 288, 35, 35}},
    {.model = "inception3", .side = 299, .node = "Mixed_6a.cat", .shape = {2, 768, 17, 17}},
    {.model = "inception3", .side = 299, .node = "Mixed_6e.cat", .shape = {2, 768, 17, 17}},
    {.model = "inception3", .side = 299, .node = "Mixed_7a.cat", .shape = {2, 1280, 8, 8}},
    {.model = "inception3", .side = 299, .node = "Mixed_7c.cat", .shape = {2, 2048, 8, 8}},
    {.model = "inception3", .side = 160, .node = "Conv2d_4a_3x3.relu", .shape = {2, 192, 36, 36}},
    {.model = "inception3", .side = 160, .node = "Mixed_6a.cat", .shape = {2, 768, 8, 8}},
    {.model = "inception3", .side = 160, .node = "Mixed_7c.cat", .shape = {2, 2048, 3, 3}},
    {.model = "inception3", .side = 75, .node = "Mixed_6e.cat", .shape = {2, 768, 3, 3}},
    {.model = "inception3", .side = 75, .node = "Mixed_7c.cat", .shape = {2, 2048, 1, 1}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.0.2", .shape = {2, 32, 112, 112}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.1.conv.2", .shape = {2, 16, 112, 112}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.3.add", .shape = {2, 24, 56, 56}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.7.conv.3", .shape = {2, 64, 14, 14}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.14.conv.3", .shape = {2, 160, 7, 7}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.17.conv.3", .shape = {2, 320, 7, 7}},
    {.model = "mobilenet_v2", .side = 224, .node = "features.18.2", .shape = {2, 1280, 7, 7}},
    {.model = "mobilenet_v2", .side = 50, .node = "features.3.add", .shape = {2, 24, 13, 13}},
    {.model = "mobilenet_v2", .side = 50, .node = "features.7.conv.3", .shape = {2, 64, 4, 4}},
    {.model = "mobilenet_v2", .side = 50, .node = "features.18.2", .shape = {2, 1280, 2, 2}},
};

TEST(ZooShapes, IntermediateShapesMatchTorchvision) {
  for (const ShapeCheck& c : kShapeChecks) {
    Graph g = build_model(c.model);
    g.infer_shapes(2, c.side, c.side);
    EXPECT_EQ(output_of(g, c.node), c.shape) << c.model << " at " << c.side << ": " << c.node;
  }
}

TEST(ZooShapes, TooSmallImagesNameTheFailingLayer) {
  Graph inception = build_model("inception3");
  try {
    inception.infer_shapes(1, 16, 16);
    ADD_FAILURE() << "inception3 accepted 16x16";
  } catch (const std::invalid_argument& e) {
    // 16 → Conv2d_1a (3x3/2) 7 → Conv2d_2a 5 → 2b 5 → maxpool1 (3/2) 2 → 3b 2 → 4a fails.
    EXPECT_THAT(e.what(),
                HasSubstr("Conv2d_4a_3x3.conv: input 2x2 is smaller than the 3x3 kernel"));
  }
  Graph vgg = build_model("vgg16");
  EXPECT_THROW(vgg.infer_shapes(1, 31, 31), std::invalid_argument);
  Graph googlenet = build_model("googlenet");
  EXPECT_THROW(googlenet.infer_shapes(1, 14, 14), std::invalid_argument);
}

TEST(ZooShapes, ResNet50FlopsMatchPublishedFigureAndScaleWithArea) {
  Graph g = build_model("resnet50");
  g.infer_shapes(1, 224, 224);
  const double at_224 = g.flops_per_image();
  // torchvision lists 4.09 GMACs = 8.2 GFLOPs per image.
  EXPECT_NEAR(at_224, 8.2e9, 0.01 * 8.2e9);
  // Everything but the fc scales with the pixels of the feature maps. For sides
  // that are multiples of 32 no stride-2 layer rounds, so the ratio is exact:
  // (448/224)² = 4 and (160/224)² = 25/49.
  const double fc = 2.0 * 2048 * 1000;
  g.infer_shapes(1, 448, 448);
  EXPECT_DOUBLE_EQ(g.flops_per_image() - fc, 4.0 * (at_224 - fc));
  g.infer_shapes(1, 160, 160);
  EXPECT_NEAR(g.flops_per_image() - fc, (at_224 - fc) * 25.0 / 49.0, 1.0);
  // At 112 the last stage rounds 3.5 up to 4×4, so the ratio is above 1/4.
  g.infer_shapes(1, 112, 112);
  EXPECT_GT(g.flops_per_image() - fc, (at_224 - fc) / 4.0);
  // FLOPs do not depend on the batch.
  g.infer_shapes(64, 224, 224);
  EXPECT_DOUBLE_EQ(g.flops_per_image(), at_224);
}

// ------------------------------------------------------- trivial ----

TEST(ZooTrivial, FlattenIntoOneFullyConnectedLayer) {
  Graph g = build_model("trivial");
  EXPECT_EQ(model_info("trivial").default_image_size, 224);
  EXPECT_THROW((void)g.param_count(), std::logic_error);  // depends on the image size
  g.infer_shapes(8, 224, 224);
  const int64_t in_features = 3 * 224 * 224;
  EXPECT_EQ(g.param_count(), in_features * 1000 + 1000);
  EXPECT_DOUBLE_EQ(g.flops_per_image(), 2.0 * in_features * 1000);
  EXPECT_EQ(g.node(g.node(g.output()).inputs.front()).output, (Shape{8, 1000, 1, 1}));
  ASSERT_EQ(g.param_layout().size(), 2U);
  EXPECT_EQ(g.param_layout()[0].init.kind, Init::Kind::DefaultUniform);
  EXPECT_EQ(g.param_layout()[1].init.kind, Init::Kind::DefaultBiasUniform);
  g.infer_shapes(1, 32, 16);
  EXPECT_EQ(g.param_count(), 3 * 32 * 16 * 1000 + 1000);
}

// ------------------------------------------------------ registry ----

TEST(ZooRegistry, NamesOrderAndInfo) {
  std::vector<std::string> names;
  for (const ModelInfo& m : zoo()) {
    names.push_back(m.name);
    EXPECT_FALSE(m.source.empty()) << m.name;
    EXPECT_EQ(build_model(m.name).name(), m.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"resnet50", "resnet101", "resnet152", "vgg16",
                                             "vgg19", "alexnet", "googlenet", "inception3",
                                             "mobilenet_v2", "trivial"}));
  EXPECT_EQ(model_names(),
            "resnet50, resnet101, resnet152, vgg16, vgg19, alexnet, googlenet, inception3, "
            "mobilenet_v2, trivial");
  EXPECT_EQ(model_info("inception3").default_image_size, 299);
  EXPECT_EQ(model_info("resnet50").source, "torchvision.models.resnet50");
}

TEST(ZooRegistry, UnknownNameListsKnownOnes) {
  for (auto call :
       {+[] { (void)model_info("resnet51"); }, +[] { (void)build_model("ResNet50"); }}) {
    try {
      call();
      ADD_FAILURE() << "no exception";
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr("unknown model"));
      EXPECT_THAT(e.what(), HasSubstr(model_names()));
    }
  }
}

TEST(ZooRegistry, NumClassesMustBePositive) {
  try {
    (void)build_model("alexnet", 0);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("num_classes must be >= 1, got 0"));
  }
  EXPECT_EQ(build_model("alexnet", 1).num_classes(), 1);
}

// ------------------------------------------------- initialisation ----

ParamSlot slot_of(const Graph& g, const std::string& node, ParamRole role) {
  for (const ParamSlot& s : g.param_layout()) {
    if (g.node(s.node).name == node && s.role == role) {
      return s;
    }
  }
  throw std::runtime_error(g.name() + " has no parameter " + node);
}

void expect_init(const Graph& g, const std::string& node, ParamRole role, Init::Kind kind,
                 float std = 0.0F) {
  const ParamSlot s = slot_of(g, node, role);
  EXPECT_EQ(s.init.kind, kind) << g.name() << " " << node;
  if (kind == Init::Kind::Normal || kind == Init::Kind::TruncatedNormal) {
    EXPECT_FLOAT_EQ(s.init.std, std) << g.name() << " " << node;
  }
}

TEST(ZooInit, AsTorchvisionAppliesIt) {
  using K = Init::Kind;
  const Graph resnet = build_model("resnet50");
  expect_init(resnet, "conv1", ParamRole::Weight, K::KaimingNormalFanOut);
  expect_init(resnet, "layer3.2.conv2", ParamRole::Weight, K::KaimingNormalFanOut);
  expect_init(resnet, "bn1", ParamRole::Scale, K::Ones);
  expect_init(resnet, "layer1.0.bn3", ParamRole::Shift, K::Zeros);
  expect_init(resnet, "fc", ParamRole::Weight, K::DefaultUniform);
  expect_init(resnet, "fc", ParamRole::Bias, K::DefaultBiasUniform);
  EXPECT_EQ(slot_of(resnet, "conv1", ParamRole::Weight).fan_out, 64 * 7 * 7);
  EXPECT_EQ(slot_of(resnet, "fc", ParamRole::Bias).fan_in, 2048);

  const Graph vgg = build_model("vgg16");
  expect_init(vgg, "features.0", ParamRole::Weight, K::KaimingNormalFanOut);
  expect_init(vgg, "features.0", ParamRole::Bias, K::Zeros);
  expect_init(vgg, "classifier.0", ParamRole::Weight, K::Normal, 0.01F);
  expect_init(vgg, "classifier.6", ParamRole::Bias, K::Zeros);

  const Graph alexnet = build_model("alexnet");
  expect_init(alexnet, "features.0", ParamRole::Weight, K::DefaultUniform);
  expect_init(alexnet, "features.0", ParamRole::Bias, K::DefaultBiasUniform);
  expect_init(alexnet, "classifier.4", ParamRole::Weight, K::DefaultUniform);
  EXPECT_EQ(slot_of(alexnet, "features.0", ParamRole::Bias).fan_in, 3 * 11 * 11);

  const Graph googlenet = build_model("googlenet");
  expect_init(googlenet, "conv1.conv", ParamRole::Weight, K::TruncatedNormal, 0.01F);
  expect_init(googlenet, "inception4c.branch3.1.conv", ParamRole::Weight, K::TruncatedNormal,
              0.01F);
  expect_init(googlenet, "fc", ParamRole::Weight, K::TruncatedNormal, 0.01F);
  expect_init(googlenet, "fc", ParamRole::Bias, K::DefaultBiasUniform);

  const Graph inception = build_model("inception3");
  expect_init(inception, "Conv2d_1a_3x3.conv", ParamRole::Weight, K::TruncatedNormal, 0.1F);
  expect_init(inception, "Mixed_7c.branch3x3dbl_3b.conv", ParamRole::Weight, K::TruncatedNormal,
              0.1F);
  expect_init(inception, "fc", ParamRole::Weight, K::TruncatedNormal, 0.1F);
  expect_init(inception, "fc", ParamRole::Bias, K::DefaultBiasUniform);

  const Graph mobilenet = build_model("mobilenet_v2");
  expect_init(mobilenet, "features.0.0", ParamRole::Weight, K::KaimingNormalFanOut);
  expect_init(mobilenet, "classifier.1", ParamRole::Weight, K::Normal, 0.01F);
  expect_init(mobilenet, "classifier.1", ParamRole::Bias, K::Zeros);
  // Depthwise 3x3 over 96 channels: fan_out = 96·3·3/96.
  EXPECT_EQ(slot_of(mobilenet, "features.2.conv.1.0", ParamRole::Weight).fan_out, 9);
}

TEST(ZooInit, BatchNormEpsDropoutAndPoolingFollowEachModel) {
  auto bn_eps = [](const Graph& g, const std::string& node) {
    return std::get<BatchNormAttrs>(find_node(g, node)->attrs).eps;
  };
  auto dropout = [](const Graph& g, const std::string& node) {
    return std::get<DropoutAttrs>(find_node(g, node)->attrs).p;
  };
  const Graph resnet = build_model("resnet50");
  const Graph googlenet = build_model("googlenet");
  const Graph inception = build_model("inception3");
  const Graph mobilenet = build_model("mobilenet_v2");
  const Graph vgg = build_model("vgg19");
  const Graph alexnet = build_model("alexnet");
  EXPECT_FLOAT_EQ(bn_eps(resnet, "layer1.0.bn1"), 1e-5F);
  EXPECT_FLOAT_EQ(bn_eps(mobilenet, "features.0.1"), 1e-5F);
  EXPECT_FLOAT_EQ(bn_eps(googlenet, "conv1.bn"), 1e-3F);
  EXPECT_FLOAT_EQ(bn_eps(inception, "Mixed_5b.branch1x1.bn"), 1e-3F);
  EXPECT_FLOAT_EQ(dropout(googlenet, "dropout"), 0.2F);
  EXPECT_FLOAT_EQ(dropout(inception, "dropout"), 0.5F);
  EXPECT_FLOAT_EQ(dropout(mobilenet, "classifier.0"), 0.2F);
  EXPECT_FLOAT_EQ(dropout(vgg, "classifier.5"), 0.5F);
  EXPECT_FLOAT_EQ(dropout(alexnet, "classifier.0"), 0.5F);
  EXPECT_TRUE(std::get<PoolAttrs>(find_node(googlenet, "maxpool1")->attrs).ceil_mode);
  EXPECT_TRUE(std::get<PoolAttrs>(find_node(googlenet, "inception3a.branch4.0")->attrs).ceil_mode);
  const auto& avg = std::get<PoolAttrs>(find_node(inception, "Mixed_6b.avg_pool")->attrs);
  EXPECT_EQ(avg.kind, PoolAttrs::Kind::Avg);
  EXPECT_TRUE(avg.count_include_pad);
  EXPECT_EQ(std::get<ActivationAttrs>(find_node(mobilenet, "features.18.2")->attrs).kind,
            ActivationAttrs::Kind::Relu6);
}

}  // namespace
}  // namespace cnnbench::models
