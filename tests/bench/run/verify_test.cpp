// --verify's parts that need no GPU: a binary without the CPU backend is
// refused with what to rebuild, and the outcome's lines and verdict.
#include "bench/run/verify.h"

#include <gtest/gtest.h>

#include <string>

#include "kernels/error.h"
#include "models/zoo.h"

namespace cnnbench::bench {
namespace {

TEST(Verify, WithoutTheCpuBackendTheErrorSaysWhatToRebuild) {
  const models::Graph g = models::build_model("resnet50");
  std::unique_ptr<kernels::Backend> gpu = kernels::make_cpu_backend();  // any backend; never used
  try {
    (void)verify_against_cpu(*gpu, nullptr, g, kernels::Precision::Fp16, kernels::DataFormat::NHWC,
                             0, 224, 1);
    FAIL() << "verify ran without a CPU backend";
  } catch (const kernels::BackendUnavailable& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--verify"), std::string::npos) << what;
    EXPECT_NE(what.find("CNNBENCH_ONEDNN=ON"), std::string::npos) << what;
  }
}

TEST(Verify, LinesAndVerdict) {
  VerifyOutcome o;
  EXPECT_FALSE(o.passed()) << "no check is no pass";
  kernels::StepCheck c;
  c.precision = kernels::Precision::Fp32;
  c.tolerance = 1e-3;
  c.loss = c.reference_loss = 6.9;
  o.checks.push_back(c);
  EXPECT_TRUE(o.passed());
  const auto lines = o.lines("GPU 0 NVIDIA H100");
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_NE(lines[0].find("GPU 0 NVIDIA H100"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("fp32: passed"), std::string::npos) << lines[0];
  o.checks[0].loss_rel_error = 1.0;
  EXPECT_FALSE(o.passed());
}

}  // namespace
}  // namespace cnnbench::bench
