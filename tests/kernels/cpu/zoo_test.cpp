// Every model of the zoo compiles on the CPU backend and trains: two steps at a
// small image size and batch 2 give a finite loss, in the default NHWC layout.
#include "models/zoo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/backend.h"

namespace cnnbench::kernels {
namespace {

/// 64×64 keeps the suite quick on two cores; inception3 needs 75×75, the
/// smallest input its stem and grid reductions accept (torchvision's minimum too).
int image_size(const std::string& model) { return model == "inception3" ? 75 : 64; }

class ZooTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooTest, TrainsTwoStepsWithAFiniteLoss) {
  const std::string name = GetParam();
  CompileOptions o;
  o.batch = 2;
  o.image_h = o.image_w = image_size(name);
  o.seed = 1;
  // One thread: under `ctest -j2` on two cores, two-thread processes make each
  // other's OpenMP barriers wait (see tests/kernels/cpu/test_util.h).
  o.num_threads = 1;
  auto exe = make_cpu_backend()->compile(models::build_model(name), o);
  const Batch batch = exe->synthetic_batch(2);
  exe->train_step(batch, {});
  // A fresh network over 1000 classes starts near ln(1000) ≈ 6.9.
  EXPECT_GT(exe->loss(), 1.0F) << name;
  EXPECT_LT(exe->loss(), 50.0F) << name;
  exe->train_step(batch, {});
  // Cross-entropy is ≥ 0; the trivial model may already fit two images exactly.
  EXPECT_TRUE(std::isfinite(exe->loss()) && exe->loss() >= 0.0F) << name << ": " << exe->loss();
  const auto* g = static_cast<const float*>(exe->gradients().data);
  const int64_t n = exe->gradients().count;
  EXPECT_TRUE(std::all_of(g, g + n, [](float v) { return std::isfinite(v); }));
  EXPECT_TRUE(std::any_of(g, g + n, [](float v) { return v != 0.0F; }));
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& m : models::zoo()) names.push_back(m.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooTest, ::testing::ValuesIn(model_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace cnnbench::kernels
