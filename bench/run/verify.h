// --verify: before the warm-up, one training step of the run's model on the
// GPU is checked against the CPU backend (kernels/reference_check.h), at fp32
// and, when it differs, in the run's precision. This is how a user confirms
// that a new driver, cuDNN or GPU model computes the right function. Nothing
// here prints: the caller reports VerifyOutcome::lines().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/reference_check.h"
#include "models/graph.h"

namespace cnnbench::bench {

/// Images per step of the check: small, so that the CPU reference takes
/// about a second for ResNet-50; BatchNorm still sees 2·H·W values per channel.
inline constexpr int kVerifyBatch = 2;

/// The checks of one GPU.
struct VerifyOutcome {
  std::vector<kernels::StepCheck> checks;  ///< fp32 first, then the run's precision
  double seconds = 0;
  [[nodiscard]] bool passed() const;
  /// "verify (GPU 0, NVIDIA H100 ...): fp32: passed (...)", one line per check.
  [[nodiscard]] std::vector<std::string> lines(const std::string& device) const;
};

/// Compiles `graph` without dropout (the two backends draw dropout masks from
/// different generators) for `gpu` on CUDA device `device` at fp32 and at
/// `precision`, and for `cpu` at fp32, with kVerifyBatch images of
/// `image_size` in `format`, and compares one training step of each GPU
/// executable with a fresh CPU one. Throws kernels::BackendUnavailable when
/// `cpu` is null (a binary built without the CPU backend), and whatever the
/// backends throw.
VerifyOutcome verify_against_cpu(kernels::Backend& gpu, kernels::Backend* cpu,
                                 const models::Graph& graph, kernels::Precision precision,
                                 kernels::DataFormat format, int device, int image_size,
                                 uint64_t seed);

}  // namespace cnnbench::bench
