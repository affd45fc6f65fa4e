// The plan cache file (--plan_cache) and the no-engine error message: host code
// that runs in CI without a GPU. The file is written, read back, and ignored
// with a warning when it belongs to another GPU model or cuDNN version, or is
// corrupt; the message names the graph, cuDNN's version and every rejection.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/cudnn_graph.h"
#include "kernels/cuda/plan_cache.h"
#include "kernels/cuda/plan_cache_file.h"

namespace cnnbench::kernels::cuda {
namespace {

namespace fs = std::filesystem;

ConvConfig config(ConvKind kind, float beta = 0.0F) {
  ConvConfig c;
  c.shape = ConvShape{.n = 32, .c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3,
                      .pad_h = 1, .pad_w = 1};
  c.kind = kind;
  c.precision = Precision::Fp16;
  c.format = DataFormat::NHWC;
  c.beta = beta;
  return c;
}

std::vector<std::pair<PlanKey, EngineChoice>> sample_entries(int device) {
  EngineChoice a{.global_index = 42,
                 .knobs = {{CUDNN_KNOB_TYPE_SPLIT_K, 2}, {CUDNN_KNOB_TYPE_SWIZZLE, 1}}};
  EngineChoice b{.global_index = 7, .knobs = {}};
  return {{conv_plan_key(config(ConvKind::Fprop), 91900, device), a},
          {conv_plan_key(config(ConvKind::Dgrad, 1.0F), 91900, device), b}};
}

class PlanCacheFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cnnbench_plan_cache_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    path_ = (dir_ / "plans.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string path_;
  const PlanCacheIdentity h100_{"NVIDIA H100 80GB HBM3", 91900};
};

TEST_F(PlanCacheFile, AbsentFileIsNoWarning) {
  const PlanCacheLoad load = read_plan_cache(path_, h100_, 0);
  EXPECT_FALSE(load.existed);
  EXPECT_TRUE(load.warning.empty()) << load.warning;
  EXPECT_TRUE(load.entries.empty());
}

TEST_F(PlanCacheFile, WrittenThenReadBackOnAnotherOrdinal) {
  write_plan_cache(path_, h100_, sample_entries(0));
  const PlanCacheLoad load = read_plan_cache(path_, h100_, 3);
  EXPECT_TRUE(load.existed);
  ASSERT_TRUE(load.warning.empty()) << load.warning;
  const auto expected = sample_entries(3);  // keys bound to the reader's device
  ASSERT_EQ(load.entries.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(load.entries[i].first, expected[i].first) << load.entries[i].first.to_string();
    EXPECT_EQ(load.entries[i].second, expected[i].second) << load.entries[i].second.to_string();
  }
  // No temporary file is left beside it.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(PlanCacheFile, OtherGpuModelIsIgnoredWithAWarning) {
  write_plan_cache(path_, {"NVIDIA A10G", 91900}, sample_entries(0));
  const PlanCacheLoad load = read_plan_cache(path_, h100_, 0);
  EXPECT_TRUE(load.entries.empty());
  EXPECT_NE(load.warning.find("NVIDIA A10G"), std::string::npos) << load.warning;
  EXPECT_NE(load.warning.find("NVIDIA H100 80GB HBM3"), std::string::npos) << load.warning;
  EXPECT_NE(load.warning.find("ignored"), std::string::npos) << load.warning;
}

TEST_F(PlanCacheFile, OtherCudnnVersionIsIgnoredWithAWarning) {
  write_plan_cache(path_, {h100_.gpu_name, 90800}, sample_entries(0));
  const PlanCacheLoad load = read_plan_cache(path_, h100_, 0);
  EXPECT_TRUE(load.entries.empty());
  EXPECT_NE(load.warning.find("90800"), std::string::npos) << load.warning;
  EXPECT_NE(load.warning.find("91900"), std::string::npos) << load.warning;
}

TEST_F(PlanCacheFile, CorruptFilesAreIgnoredWithAWarning) {
  const std::vector<std::string> bodies = {
      "{ this is not json",
      "[]",
      R"({"format": "something-else", "version": 1})",
      R"({"format": "cnnbench-plan-cache", "version": 99, "gpu": "x", "cudnn_version": 1})",
      R"({"format": "cnnbench-plan-cache", "version": 1, "gpu": "NVIDIA H100 80GB HBM3",
          "cudnn_version": 91900, "entries": [{"key": {"op": 1}, "engine": {}}]})",
      R"({"format": "cnnbench-plan-cache", "version": 1, "gpu": "NVIDIA H100 80GB HBM3",
          "cudnn_version": 91900, "entries": [{"key": {"op": 9}, "engine": {}}]})",
  };
  for (const std::string& body : bodies) {
    std::ofstream(path_, std::ios::trunc) << body;
    const PlanCacheLoad load = read_plan_cache(path_, h100_, 0);
    EXPECT_TRUE(load.existed);
    EXPECT_TRUE(load.entries.empty()) << body;
    EXPECT_NE(load.warning.find("ignored"), std::string::npos) << body << " -> " << load.warning;
  }
}

TEST_F(PlanCacheFile, UnwritablePathThrowsNamingIt) {
  const std::string bad = (dir_ / "no_such_dir" / "plans.json").string();
  try {
    write_plan_cache(bad, h100_, sample_entries(0));
    FAIL() << "writing into a missing folder succeeded";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dir"), std::string::npos) << e.what();
  }
}

TEST(NoPlanMessage, NamesGraphVersionCountAndEachRejection) {
  const std::string msg = no_plan_message(
      "conv wgrad NHWC fp16 x[N=32,C=64,H=56,W=56] w[K=64,C/g=64,R=3,S=3]", 91002, 3,
      {"eng1 TENSOR_CORE: finalize CUDNN_STATUS_NOT_SUPPORTED (not supported)",
       "eng7: filtered out (numerical note DOWN_CONVERT_INPUTS)",
       "engine config #2: attributes unreadable (x)"});
  EXPECT_NE(msg.find("cuDNN 9.10.2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("conv wgrad NHWC fp16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 engine config(s) tried"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 rejected"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\n  eng7: filtered out"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\n  engine config #2: attributes unreadable"), std::string::npos) << msg;
}

TEST(NoPlanMessage, SaysWhenTheHeuristicsProposedNothing) {
  const std::string msg = no_plan_message("conv fprop NCHW bf16 ...", 90000, 0, {});
  EXPECT_NE(msg.find("cuDNN 9.0.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the heuristics proposed none"), std::string::npos) << msg;
}

}  // namespace
}  // namespace cnnbench::kernels::cuda
