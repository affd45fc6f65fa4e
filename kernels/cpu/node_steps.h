// The adapters between a models::Graph node and its layer: each NodeStep reads
// its inputs' outputs from the executable's TensorTable, runs its layer forward
// and backward, and writes parameter gradients into the flat gradient buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/weights.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// Per node, where its output and the gradient of its output live (in the
/// compiled layout). Views (flatten in NCHW) share their input's entries; an
/// activation computed in place shares its input's value but not its gradient.
struct TensorTable {
  std::vector<float*> value;
  std::vector<float*> grad;  ///< null where no gradient flows
};

/// What varies from one pass to the next.
struct PassState {
  bool training = true;  ///< false: inference (running BN statistics, no dropout)
  const int32_t* labels = nullptr;
  uint64_t dropout_key = 0;  ///< this step's key; each dropout node derives its own
  float loss = 0.0F;         ///< written by the loss node
};

/// Where a node's parameters and their gradients live in the flat buffers
/// (null where the node has no such tensor).
struct ParamPointers {
  const float* weight = nullptr;  ///< conv/FC weight, or BN scale
  const float* bias = nullptr;    ///< conv/FC bias, or BN shift
  float* weight_grad = nullptr;
  float* bias_grad = nullptr;
};

/// Construction inputs common to every step.
struct StepSetup {
  Context* ctx = nullptr;
  const models::Graph* graph = nullptr;
  models::NodeId id = 0;
  DataFormat format = DataFormat::NHWC;
  bool training = true;
  WeightFormat weight_format = WeightFormat::Auto;
  const TensorTable* tensors = nullptr;
  ParamPointers params;
};

/// One node of the compiled graph.
class NodeStep {
 public:
  explicit NodeStep(const StepSetup& setup);
  virtual ~NodeStep() = default;
  NodeStep(const NodeStep&) = delete;
  NodeStep& operator=(const NodeStep&) = delete;

  virtual void forward(PassState& state) = 0;
  /// Gradients of the inputs, one GradOut per input in the node's input order;
  /// `scratch` holds at least as many floats as the largest input and is used
  /// when a gradient must be added to one already present.
  virtual void backward(std::span<const GradOut> input_grads, float* scratch) = 0;
  /// Bytes the layer keeps for backward (statistics, workspaces, masks).
  [[nodiscard]] virtual int64_t saved_bytes() const { return 0; }
  /// Bytes of private weight copies in oneDNN's preferred layouts.
  [[nodiscard]] virtual int64_t private_weight_bytes() const { return 0; }

 protected:
  [[nodiscard]] const float* input(size_t k = 0) const;
  [[nodiscard]] float* output() const;
  [[nodiscard]] const float* output_grad() const;
  [[nodiscard]] int64_t input_elements(size_t k = 0) const;

  const models::Graph* graph_;
  models::NodeId id_;
  const TensorTable* tensors_;
  ParamPointers params_;
};

/// Runs `produce(dst)` so that its result lands in `out`: directly when `out`
/// is to be overwritten, through `scratch` and an addition when it accumulates.
template <class Produce>
void produce_gradient(GradOut out, float* scratch, int64_t count, Produce&& produce) {
  if (out.data == nullptr) return;
  if (!out.accumulate) {
    produce(out.data);
    return;
  }
  produce(scratch);
  accumulate_elements(scratch, out.data, count);
}

/// The step for node setup.id (any op but Input). Throws std::invalid_argument
/// for an op the CPU backend cannot run, dnnl::error from oneDNN.
std::unique_ptr<NodeStep> make_node_step(const StepSetup& setup);

}  // namespace cnnbench::kernels::cpu
