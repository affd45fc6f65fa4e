#include "bench/run/verify.h"

#include <algorithm>
#include <chrono>

#include "kernels/error.h"

namespace cnnbench::bench {

bool VerifyOutcome::passed() const {
  return !checks.empty() &&
         std::all_of(checks.begin(), checks.end(), [](const auto& c) { return c.passed(); });
}

std::vector<std::string> VerifyOutcome::lines(const std::string& device) const {
  std::vector<std::string> out;
  for (const kernels::StepCheck& c : checks) {
    out.push_back("verify (" + device + ", one step of " + std::to_string(kVerifyBatch) +
                  " images against the CPU backend): " + c.summary());
  }
  return out;
}

VerifyOutcome verify_against_cpu(kernels::Backend& gpu, kernels::Backend* cpu,
                                 const models::Graph& graph, kernels::Precision precision,
                                 kernels::DataFormat format, int device, int image_size,
                                 uint64_t seed) {
  if (cpu == nullptr) {
    throw kernels::BackendUnavailable(
        "--verify compares the GPU with the CPU backend, and this binary was built without it "
        "(configure with -DCNNBENCH_ONEDNN=ON and oneDNN installed)");
  }
  const auto start = std::chrono::steady_clock::now();
  const models::Graph g = graph.without_dropout();
  VerifyOutcome out;
  std::vector<kernels::Precision> precisions{kernels::Precision::Fp32};
  if (precision != kernels::Precision::Fp32) precisions.push_back(precision);
  for (const kernels::Precision p : precisions) {
    kernels::CompileOptions o;
    o.batch = kVerifyBatch;
    o.image_h = o.image_w = image_size;
    o.format = format;
    o.seed = seed;
    o.device = device;
    o.cudnn_autotune = false;  // the heuristics' first engine: set-up in seconds
    o.cuda_graph = false;      // one step: nothing to replay
    o.precision = p;
    const auto test = gpu.compile(g, o);
    o.precision = kernels::Precision::Fp32;
    const auto reference = cpu->compile(g, o);
    out.checks.push_back(kernels::compare_training_step(*test, *reference, g, p, kVerifyBatch,
                                                        image_size, format, seed));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace cnnbench::bench
