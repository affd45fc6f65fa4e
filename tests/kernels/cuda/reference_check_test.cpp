// On the GPU: the replica check's device hash equals the host hash of the same
// bytes, write_parameters reaches the layers' copies, and one ResNet-50 step
// (what `cnnbench --verify` runs) agrees with the CPU backend at fp32, fp16
// and bf16 within reference_tolerance. Skips, with the reason, without a GPU
// or without the CPU backend.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/device.h"
#include "kernels/error.h"
#include "kernels/param_hash.h"
#include "kernels/reference_check.h"
#include "models/zoo.h"

namespace cnnbench::kernels {
namespace {

constexpr int kBatch = 2;
constexpr int kImage = 224;

CompileOptions options(Precision p) {
  CompileOptions o;
  o.batch = kBatch;
  o.image_h = o.image_w = kImage;
  o.precision = p;
  o.format = DataFormat::NHWC;
  o.seed = 1234;
  o.cudnn_autotune = false;
  return o;
}

std::unique_ptr<Backend> cpu_backend_or_skip() {
  try {
    return make_cpu_backend();
  } catch (const BackendUnavailable&) {
    return nullptr;
  }
}

TEST(DeviceParamHash, EqualsTheHostHashOfTheSameBytes) {
  if (const auto reason = cuda::cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  const models::Graph g = models::build_model("resnet50");
  auto e = make_cuda_backend()->compile(g, options(Precision::Fp16));
  e->train_step(e->synthetic_batch(3), {});  // hash trained weights, not only the initial ones
  models::Graph shaped = g;
  shaped.infer_shapes(kBatch, kImage, kImage);
  const auto layout = shaped.param_layout();
  std::vector<float> host(static_cast<size_t>(shaped.param_count()));
  e->read_parameters(0, shaped.param_count(), host.data());
  const ParamHashes device = e->parameter_hashes(layout);
  const ParamHashes want = hash_parameters_host(host.data(), layout);
  EXPECT_EQ(device.total, want.total);
  EXPECT_EQ(device.per_tensor, want.per_tensor);
}

class VerifyResnet50 : public ::testing::TestWithParam<Precision> {};

TEST_P(VerifyResnet50, OneStepAgreesWithTheCpuBackend) {
  if (const auto reason = cuda::cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  auto cpu = cpu_backend_or_skip();
  if (cpu == nullptr) GTEST_SKIP() << "the CPU backend is not built in";
  const models::Graph g = models::build_model("resnet50").without_dropout();
  auto gpu_exec = make_cuda_backend()->compile(g, options(GetParam()));
  auto cpu_exec = cpu->compile(g, options(Precision::Fp32));
  const StepCheck c = compare_training_step(*gpu_exec, *cpu_exec, g, GetParam(), kBatch, kImage,
                                            DataFormat::NHWC, 99);
  std::printf("%s\n", c.summary().c_str());
  EXPECT_TRUE(c.passed()) << c.summary();
}

INSTANTIATE_TEST_SUITE_P(Precisions, VerifyResnet50,
                         ::testing::Values(Precision::Fp32, Precision::Fp16, Precision::Bf16),
                         [](const auto& info) { return std::string(to_string(info.param)); });

TEST(WriteParameters, ReachesTheLayersLowPrecisionCopies) {
  if (const auto reason = cuda::cuda_unavailable_reason()) GTEST_SKIP() << *reason;
  auto cpu = cpu_backend_or_skip();
  if (cpu == nullptr) GTEST_SKIP() << "the CPU backend is not built in";
  const models::Graph g = models::build_model("resnet50");
  auto gpu_exec = make_cuda_backend()->compile(g, options(Precision::Fp16));
  auto cpu_exec = cpu->compile(g, options(Precision::Fp32));
  models::Graph shaped = g;
  shaped.infer_shapes(kBatch, kImage, kImage);
  for (const auto& slot : shaped.param_layout()) {
    if (models::param_name(shaped, slot) != "conv1.weight") continue;
    std::vector<float> w(static_cast<size_t>(slot.count));
    cpu_exec->read_parameters(slot.offset, slot.count, w.data());
    for (float& x : w) x *= 1.5F;
    cpu_exec->write_parameters(slot.offset, w.data(), slot.count);
    gpu_exec->write_parameters(slot.offset, w.data(), slot.count);
  }
  const StepCheck c = compare_training_step(*gpu_exec, *cpu_exec, g, Precision::Fp16, kBatch,
                                            kImage, DataFormat::NHWC, 7);
  EXPECT_TRUE(c.passed()) << c.summary();
}

}  // namespace
}  // namespace cnnbench::kernels
