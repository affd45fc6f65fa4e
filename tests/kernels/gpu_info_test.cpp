// kernels::enumerate_gpus() on any machine: with no GPU (or no driver, or a build
// without CUDA) it returns an error string instead of crashing.
#include "kernels/gpu_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

namespace cnnbench::kernels {
namespace {

TEST(GpuInfo, EnumerationReturnsCleanly) {
  const GpuEnumeration e = enumerate_gpus();
  EXPECT_GE(e.driver_version, 0);
  EXPECT_GE(e.runtime_version, 0);
  if (e.gpus.empty()) {
    EXPECT_FALSE(e.error.empty()) << "no GPU and no reason";
  } else {
    EXPECT_TRUE(e.error.empty()) << e.error;
    EXPECT_TRUE(e.built_with_cuda);
  }
  if (!e.built_with_cuda) {
    EXPECT_THAT(e.error, ::testing::HasSubstr("built without CUDA"));
  } else if (!e.error.empty()) {
    // The failing call and CUDA's own name for the error.
    EXPECT_THAT(e.error, ::testing::MatchesRegex("cuda[A-Za-z]+: cudaError[A-Za-z]+ \\(.+\\).*"));
    EXPECT_GT(e.runtime_version, 0);
  }
  // A second call gives the same answer (no sticky state).
  EXPECT_EQ(enumerate_gpus().error, e.error);
}

TEST(GpuInfo, LibraryVersionsMatchTheBuild) {
  const GpuEnumeration e = enumerate_gpus();
  const LibraryVersions v = library_versions();
  const std::regex dotted("[0-9]+\\.[0-9]+\\.[0-9]+");
  if (e.built_with_cuda) {
    EXPECT_TRUE(std::regex_match(v.cudnn, dotted)) << v.cudnn;
    EXPECT_TRUE(std::regex_match(v.cublas, dotted)) << v.cublas;
  } else {
    EXPECT_TRUE(v.cudnn.empty() && v.cublas.empty());
  }
}

TEST(GpuInfo, FormatCudaVersion) {
  EXPECT_EQ(format_cuda_version(12040), "12.4");
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(11080), "11.8");
  EXPECT_EQ(format_cuda_version(0), "none");
}

}  // namespace
}  // namespace cnnbench::kernels
