// One training step of an executable checked against a reference executable
// (the CPU backend) compiled from the same graph, weights and batch: the loss
// and every parameter tensor's gradient, by relative L2 error
// ‖test − reference‖ / ‖reference‖. This is what `cnnbench --verify` runs to
// confirm that a GPU, driver and cuDNN compute the right function.
//
// Tolerances by precision of the checked executable, for one step of a whole
// network (errors compound over the layers, so they are looser than the
// per-kernel tests' 1e-5 / 1e-3 / 1e-2): fp32 1e-3 (the CUDA suite's
// whole-ResNet-50 comparison), tf32 2e-2 (10-bit mantissa products,
// unit roundoff 2^-11, over ~50 layers), fp16 3e-2 (the same mantissa, plus
// fp16 activations and a loss scale), bf16 1e-1 (7-bit mantissa, unit
// roundoff 2^-8). A tensor whose reference gradient is tiny against the whole
// gradient (below 1e-7 of its norm) is judged on the absolute error against
// that floor instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "models/graph.h"

namespace cnnbench::kernels {

/// Relative L2 tolerance of one whole-network step at `precision` (above).
double reference_tolerance(Precision precision);

/// One parameter tensor's gradient against the reference.
struct TensorCheck {
  std::string name;        ///< torchvision's name, e.g. "layer1.0.conv1.weight"
  int64_t count = 0;       ///< elements
  double rel_error = 0;    ///< ‖g − g_ref‖ / max(‖g_ref‖, floor)
  bool finite = true;      ///< every element of g is finite
};

/// The outcome of compare_training_step.
struct StepCheck {
  Precision precision = Precision::Fp32;  ///< of the checked executable
  double tolerance = 0;
  double loss = 0, reference_loss = 0;
  double loss_rel_error = 0;
  std::vector<TensorCheck> tensors;  ///< layout order
  int worst = -1;                    ///< index of the largest error (or first non-finite tensor)
  /// fp16: steps skipped by the dynamic loss scaler (overflow) before the
  /// compared one (each lowers the scale; weights are unchanged by them).
  int skipped_steps = 0;
  float loss_scale = 1;  ///< the scale the compared fp16 step used

  [[nodiscard]] bool passed() const;
  /// "fp16: passed (loss 6.9123 vs 6.9120, worst layer4.2.conv3.weight 4.1e-03 ≤ 3.0e-02)"
  /// or "fp16: FAILED: layer1.0.conv1.weight gradient error 2.1e-01 > tolerance 3.0e-02 ...".
  [[nodiscard]] std::string summary() const;
};

/// Runs one training step of `test` and of `reference`, both compiled from
/// `graph` (the same graph: dropout disabled, see Graph::without_dropout) with
/// the same batch size, image size, layout and seed, on the same batch made
/// by kernels::synthetic_batch(data_seed) and uploaded to each; compares
/// their losses and gradients. `test_precision` is the checked executable's
/// precision (its tolerance). Both executables take one step of training (an
/// fp16 one up to 16 while its loss scaler skips overflowing steps). Throws
/// BackendError from either executable, std::invalid_argument when their
/// parameter counts differ from the graph's.
StepCheck compare_training_step(Executable& test, Executable& reference,
                                const models::Graph& graph, Precision test_precision,
                                int batch, int image_size, DataFormat format, uint64_t data_seed);

}  // namespace cnnbench::kernels
