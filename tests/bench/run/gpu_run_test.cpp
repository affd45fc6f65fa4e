// Whole runs on the GPUs this machine has (label gpu; skipped, with the
// reason, where there are none): a short ResNet-50 run whose replica check
// reports identical replicas across every GPU (one process, one thread per
// GPU, NCCL between them), and whose --verify passes.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench/cli/program.h"
#include "kernels/gpu_info.h"

namespace cnnbench::bench {
namespace {

int run_cnnbench(const std::vector<std::string>& args, std::string& out, std::string& err) {
  std::vector<const char*> argv{"cnnbench"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream o, e;
  const int status = run_program(static_cast<int>(argv.size()), argv.data(), o, e);
  out = o.str();
  err = e.str();
  return status;
}

TEST(GpuRun, ReplicasAreIdenticalAcrossEveryGpuAndVerifyPasses) {
  const auto gpus = kernels::enumerate_gpus();
  if (gpus.gpus.empty()) GTEST_SKIP() << "no GPU: " << gpus.error;
  std::string out, err;
  const int status = run_cnnbench({"--device=gpu", "--model=resnet50", "--image_size=64",
                                  "--batch_size=8", "--num_batches=4", "--num_warmup_batches=2",
                                  "--check_every=2", "--verify", "--telemetry_interval_ms=0"},
                                 out, err);
  ASSERT_EQ(status, 0) << out << err;
  const std::string n = std::to_string(gpus.gpus.size());
  EXPECT_NE(out.find("replicas: identical across " + n + " GPU"), std::string::npos) << out;
  EXPECT_NE(out.find("fp32: passed"), std::string::npos) << out;
  EXPECT_NE(out.find("fp16: passed"), std::string::npos) << out;
}

}  // namespace
}  // namespace cnnbench::bench
