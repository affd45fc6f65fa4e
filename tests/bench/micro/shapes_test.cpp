// The micro-benchmark problems come from the graph IR: distinct convolutions,
// batch normalisations with their epilogue, poolings and the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "bench/micro/flops.h"
#include "bench/micro/options.h"
#include "bench/micro/shapes.h"
#include "models/zoo.h"

namespace cnnbench::bench::micro {
namespace {

const ConvProblem& find(const std::vector<ConvProblem>& problems, const std::string& layer) {
  const auto it = std::find_if(problems.begin(), problems.end(),
                               [&](const ConvProblem& p) { return p.layer == layer; });
  if (it == problems.end()) throw std::out_of_range("no conv problem named " + layer);
  return *it;
}

// ResNet-50 (torchvision v1.5, stride on the 3×3) at 224×224 has 53
// convolutions and 23 distinct geometries, counted by hand:
//   stem:   conv1 7×7/2, 3→64 on 224                                        1
//   layer1 (56×56, width 64, out 256; no stride):
//           1×1 64→64 (block 0), 3×3 64→64 (×3), 1×1 64→256 (conv3 ×3 and
//           the downsample, whose input is also 64 ch at 56×56: ×4),
//           1×1 256→64 (blocks 1-2)                                          4
//   layer2 (width 128, out 512; input 256 ch at 56×56):
//           block 0: 1×1 256→128 on 56, 3×3/2 128→128 56→28,
//                    1×1 128→512 on 28 (also conv3 of blocks 1-3: ×4),
//                    downsample 1×1/2 256→512 56→28;
//           blocks 1-3: 1×1 512→128 on 28 (×3), 3×3/1 128→128 on 28 (×3)     6
//   layer3 (width 256, out 1024, 6 blocks), layer4 (width 512, out 2048,
//           3 blocks): the same pattern, 6 each                             12
//   total                                                                   23
// Occurrences: 1 + 3·(3 + 4 + 6 + 3) bottleneck convs + 4 downsamples = 53.
TEST(MicroConvProblems, ResNet50Has23DistinctShapes) {
  const models::Graph g = inferred_model("resnet50", 32, 224);
  const auto problems = conv_problems(g);
  EXPECT_EQ(problems.size(), 23U);
  int occurrences = 0;
  for (const ConvProblem& p : problems) occurrences += p.occurrences;
  EXPECT_EQ(occurrences, 53);

  // Named after the first node with the geometry, in graph order.
  EXPECT_EQ(problems.front().layer, "conv1");
  EXPECT_TRUE(problems.front().reads_images);
  EXPECT_EQ(problems.front().input, (models::Shape{32, 3, 224, 224}));
  EXPECT_EQ(problems.front().output, (models::Shape{32, 64, 112, 112}));

  const ConvProblem& c2 = find(problems, "layer1.0.conv2");
  EXPECT_EQ(c2.occurrences, 3);
  EXPECT_FALSE(c2.reads_images);
  EXPECT_EQ(c2.attrs.kernel_h, 3);
  EXPECT_EQ(c2.input, (models::Shape{32, 64, 56, 56}));
  // conv3 comes before the downsample in graph order and shares its geometry.
  EXPECT_EQ(find(problems, "layer1.0.conv3").occurrences, 4);
  EXPECT_EQ(find(problems, "layer2.0.conv3").occurrences, 4);
  const ConvProblem& ds = find(problems, "layer2.0.downsample.0");
  EXPECT_EQ(ds.occurrences, 1);
  EXPECT_EQ(ds.attrs.stride_h, 2);
  EXPECT_EQ(ds.output, (models::Shape{32, 512, 28, 28}));
  EXPECT_EQ(find(problems, "layer3.1.conv2").occurrences, 5);
  EXPECT_EQ(c2.describe(), "x[32,64,56,56] w[64,64,3,3] y[32,64,56,56] s1 p1 g1 x3");
}

TEST(MicroConvProblems, FlopsAddUpToTheGraph) {
  // Σ occurrences · fprop FLOPs of the distinct convolutions = the graph's
  // forward FLOPs minus the fully connected layer (2·2048·1000 per image).
  const int batch = 4;
  const models::Graph g = inferred_model("resnet50", batch, 224);
  double conv_flops = 0;
  for (const ConvProblem& p : conv_problems(g)) {
    conv_flops += p.occurrences * conv_pass_flops(p.input, p.attrs, p.output, ConvPass::Fprop);
  }
  const double fc_flops = 2.0 * 2048 * 1000;
  EXPECT_DOUBLE_EQ(conv_flops / batch, g.flops_per_image() - fc_flops);
}

TEST(MicroConvProblems, GroupedConvolutionsOfMobileNet) {
  const auto problems = conv_problems(inferred_model("mobilenet_v2", 2, 224));
  const auto depthwise = std::count_if(problems.begin(), problems.end(), [](const ConvProblem& p) {
    return p.attrs.groups > 1 && p.attrs.groups == p.input.c;
  });
  EXPECT_GT(depthwise, 0);
  EXPECT_EQ(find(problems, "features.1.conv.0.0").attrs.groups, 32);
}

TEST(MicroConvProblems, EveryZooModelHasConvolutions) {
  for (const models::ModelInfo& info : models::zoo()) {
    SCOPED_TRACE(info.name);
    const auto problems = conv_problems(inferred_model(info.name, 1, 0));
    // The trivial model is one fully connected layer on the flattened images.
    EXPECT_EQ(problems.empty(), info.name == "trivial");
    // Exactly the convolutions reading the images skip dgrad.
    for (const ConvProblem& p : problems) EXPECT_EQ(p.reads_images, p.input.c == 3);
  }
}

TEST(MicroBatchNormProblems, ResNet50Epilogues) {
  const auto problems = batchnorm_problems(inferred_model("resnet50", 8, 224));
  std::map<std::string, BatchNormEpilogue> by_layer;
  int occurrences = 0;
  for (const BatchNormProblem& p : problems) {
    by_layer[p.layer] = p.epilogue;
    occurrences += p.occurrences;
  }
  EXPECT_EQ(occurrences, 53);  // one BN per convolution
  EXPECT_EQ(by_layer.at("bn1"), BatchNormEpilogue::Relu);
  EXPECT_EQ(by_layer.at("layer1.0.bn1"), BatchNormEpilogue::Relu);
  EXPECT_EQ(by_layer.at("layer1.0.bn3"), BatchNormEpilogue::AddRelu);
  EXPECT_EQ(by_layer.at("layer1.0.downsample.1"), BatchNormEpilogue::None);
  EXPECT_STREQ(to_string(BatchNormEpilogue::AddRelu), "bn_add_relu");
}

TEST(MicroPoolAndLossProblems, ResNet50) {
  const models::Graph g = inferred_model("resnet50", 16, 224);
  const auto pools = pool_problems(g);
  ASSERT_EQ(pools.size(), 2U);
  EXPECT_EQ(pools[0].kind, PoolProblem::Kind::Max);
  EXPECT_EQ(pools[0].input, (models::Shape{16, 64, 112, 112}));
  EXPECT_EQ(pools[0].output, (models::Shape{16, 64, 56, 56}));
  EXPECT_EQ(pools[1].kind, PoolProblem::Kind::AdaptiveAvg);
  EXPECT_EQ(pools[1].output, (models::Shape{16, 2048, 1, 1}));
  const auto loss = loss_problem(g);
  ASSERT_TRUE(loss.has_value());
  EXPECT_EQ(loss->n, 16);
  EXPECT_EQ(loss->classes, 1000);
}

TEST(MicroProblems, NeedInferredShapes) {
  const models::Graph g = models::build_model("resnet50");
  EXPECT_THROW((void)conv_problems(g), std::logic_error);
  EXPECT_THROW((void)inferred_model("resnet50", 0, 224), std::invalid_argument);
  EXPECT_THROW((void)inferred_model("no_such_model", 1, 224), std::invalid_argument);
}

TEST(MicroOptions, ParsesAndValidates) {
  const Options o = parse_options({"--models=resnet50,vgg16", "--cpu_batch=2", "--gpu_batch", "64",
                                   "--allreduce_max_bytes=64M", "--cudnn_autotune=false"});
  EXPECT_EQ(o.models, (std::vector<std::string>{"resnet50", "vgg16"}));
  EXPECT_EQ(o.cpu_batch, 2);
  EXPECT_EQ(o.gpu_batch, 64);
  EXPECT_EQ(o.allreduce_max_bytes, int64_t{64} << 20);
  EXPECT_FALSE(o.cudnn_autotune);
  EXPECT_EQ(parse_options({"--models=all"}).models.size(), models::zoo().size());
  EXPECT_THROW((void)parse_options({"--models=resnet51"}), OptionsError);
  EXPECT_THROW((void)parse_options({"--cpu_batch=0"}), OptionsError);
  // VGG-16 halves 16 pixels five times: nothing is left for its last pool.
  EXPECT_THROW((void)parse_options({"--models=vgg16", "--image_size=16"}), OptionsError);
  EXPECT_THROW((void)parse_options({"--no_such_flag=1"}), OptionsError);
  EXPECT_THROW((void)parse_options({"--allreduce_min_bytes=1M", "--allreduce_max_bytes=1K"}),
               OptionsError);
  EXPECT_NE(usage_text().find("--allreduce_max_bytes"), std::string::npos);
}

}  // namespace
}  // namespace cnnbench::bench::micro
