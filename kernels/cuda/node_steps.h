// The adapters between a models::Graph node (or a fused group of nodes) and the
// CUDA layers: each NodeStep reads its inputs' outputs from the executable's
// TensorTable, enqueues its layer's forward and backward work on the device
// context's stream, and writes its inputs' gradients where the executable's
// static backward plan says (GradTarget). Parameter gradients go where
// ParamPointers says; converting them into the flat fp32 gradient buffer, when
// the layer writes them in another type or layout, is the executable's job.
//
// Every method only enqueues work (nothing synchronises and nothing allocates
// after construction), so a whole step can be captured into a CUDA graph.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/handles.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {

class PlanCache;

/// Calls f.template operator()<T>() with T the C++ type of a storage dtype
/// (float, __half, __nv_bfloat16). Throws std::logic_error for I32.
template <class F>
void with_storage_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::F32:
      f.template operator()<float>();
      return;
    case DType::F16:
      f.template operator()<__half>();
      return;
    case DType::BF16:
      f.template operator()<__nv_bfloat16>();
      return;
    case DType::I32:
      break;
  }
  throw std::logic_error("activations must be stored as F32, F16 or BF16");
}

/// Per node, where its output and the gradient of its output live on the
/// device, in the compiled layout and the run's storage type. Views (flatten in
/// NCHW or of a 1×1 map) and in-place activations share their input's value;
/// views share its gradient too. Null where nothing is stored: the members of a
/// fused group other than its last node, the loss node, and gradients that are
/// never computed. Entry 0 (the graph's input) and its views are rebound to the
/// batch of each pass.
struct TensorTable {
  std::vector<void*> value;
  std::vector<void*> grad;
};

/// Where a step writes the gradient of one of its inputs: `data` is overwritten
/// (the first gradient of that tensor in the backward pass) or added to
/// (`accumulate`: a consumer processed earlier already wrote there). A null
/// `data` means the input needs no gradient.
struct GradTarget {
  void* data = nullptr;
  bool accumulate = false;
};

/// What varies from one pass to the next.
struct PassState {
  bool training = true;             ///< false: inference (running BN statistics, no dropout)
  const int32_t* labels = nullptr;  ///< (N) on the device
};

/// Run-wide device resources the steps share; owned by the executable. The
/// scratch buffers are used by one step at a time (all work is on one stream).
struct StepResources {
  DeviceContext* ctx = nullptr;
  PlanCache* plans = nullptr;
  ConvBuildOptions conv_build;
  Precision precision = Precision::Fp32;
  DataFormat format = DataFormat::NHWC;
  DType dtype = DType::F32;                ///< storage type of activations
  uint64_t seed = 0;                       ///< dropout masks
  const uint64_t* dropout_step = nullptr;  ///< (1) device step counter
  const float* loss_scale = nullptr;       ///< (1) device dynamic loss scale (fp16), else null
  float* loss = nullptr;                   ///< (1) device: the mean loss of the last pass
  void* bn_scratch = nullptr;              ///< batchnorm_scratch_bytes of the largest BN
  int64_t bn_scratch_bytes = 0;
  void* loss_scratch = nullptr;  ///< softmax_cross_entropy_scratch_bytes(N)
  int64_t loss_scratch_bytes = 0;
};

/// A node's parameters as its layer reads and writes them (null where absent).
///   conv: weight [K, C/g (or C_padded), R, S] in the layer's filter layout
///         (conv.h) and the storage type; bias [K] in the storage type; the
///         gradients likewise (the layer writes them in its own type and layout).
///   fc:   weight [out, in] and bias [out] in the storage type; gradients fp32.
///   batchnorm: scale (gamma) and shift (beta) [C] fp32, their gradients fp32,
///         running mean and variance [C] fp32.
struct ParamPointers {
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* weight_grad = nullptr;
  void* bias_grad = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
};

/// A BatchNorm node fused with what follows it (batchnorm.cuh):
///   y = relu?(bn(x) [+ z]); `add` and `relu` are −1 when absent; `z` is the
///   add's other input.
struct BatchNormFusion {
  models::NodeId add = -1;
  models::NodeId z = -1;
  models::NodeId relu = -1;
};

/// Construction inputs of a step.
struct StepSetup {
  StepResources* res = nullptr;
  const models::Graph* graph = nullptr;
  /// The nodes the step computes, ascending; the last one's output is the
  /// step's output. One node, or a BatchNorm followed by its fused nodes.
  std::vector<models::NodeId> members;
  BatchNormFusion fusion;
  const TensorTable* tensors = nullptr;
  ParamPointers params;
  /// Compiled for training (false: forward passes only, no backward buffers).
  bool training = true;
  /// The step's backward runs (it has parameters at or before it and reaches the loss).
  bool runs_backward = false;
  /// External inputs of the step (node ids, in the order the op takes them;
  /// for a fused BatchNorm: its input, then z), with their gradient targets and,
  /// where the step needs one, a scratch region of the input's size (storage
  /// type, 256-byte aligned) to produce a gradient that is accumulated or not
  /// needed but computed anyway.
  std::vector<models::NodeId> inputs;
  std::vector<GradTarget> input_grads;
  std::vector<void*> input_scratch;
  /// > 0 for a convolution reading the graph's input padded to this many
  /// channels (NHWC fp16/bf16 first layer; conv.h).
  int padded_input_channels = 0;
};

/// One node, or one fused group, of the compiled graph.
class NodeStep {
 public:
  explicit NodeStep(const StepSetup& setup);
  virtual ~NodeStep() = default;
  NodeStep(const NodeStep&) = delete;
  NodeStep& operator=(const NodeStep&) = delete;

  /// Enqueues the forward pass (and for the loss in training passes, the
  /// logits' gradient).
  virtual void forward(const PassState& state) = 0;
  /// Enqueues the backward pass: the inputs' gradients into their targets and
  /// the parameter gradients into ParamPointers. Only called when runs_backward.
  virtual void backward() = 0;
  /// Device bytes the step holds itself (saved statistics, masks, private buffers).
  [[nodiscard]] virtual int64_t saved_bytes() const { return 0; }
  /// Bytes of the context workspace its plans need (reserve_workspace).
  [[nodiscard]] virtual int64_t workspace_bytes() const { return 0; }
  /// A line for the run's header about how the step was set up, where there
  /// is a choice worth knowing (e.g. an FC layer's bias-gradient path); empty
  /// otherwise.
  [[nodiscard]] virtual std::string setup_note() const { return {}; }
  /// "batchnorm+add+relu 'layer1.0.bn3' [N=256,C=256,H=56,W=56]", for messages.
  [[nodiscard]] std::string describe() const;

 protected:
  [[nodiscard]] const models::Node& node() const;  ///< the output node
  [[nodiscard]] models::NodeId output_id() const { return members_.back(); }
  [[nodiscard]] const models::Shape& input_shape(size_t k = 0) const;
  [[nodiscard]] const models::Shape& output_shape() const;
  [[nodiscard]] const void* input(size_t k = 0) const;
  [[nodiscard]] void* output() const;
  [[nodiscard]] const void* output_grad() const;
  [[nodiscard]] cudaStream_t stream() const { return res_->ctx->stream.get(); }
  [[nodiscard]] const DeviceContext& ctx() const { return *res_->ctx; }
  /// Where to produce input k's gradient: its target when overwritten, else
  /// the scratch region (null when the gradient is neither needed nor given one).
  [[nodiscard]] void* grad_dest(size_t k) const;
  /// After producing into grad_dest(k): adds the scratch region into the target
  /// when the gradient accumulates.
  void finish_grad(size_t k, int64_t elements) const;
  [[nodiscard]] bool input_needs_grad(size_t k) const { return input_grads_[k].data != nullptr; }

  StepResources* res_;
  const models::Graph* graph_;
  std::vector<models::NodeId> members_;
  std::vector<models::NodeId> inputs_;
  const TensorTable* tensors_;
  ParamPointers params_;
  std::vector<GradTarget> input_grads_;
  std::vector<void*> input_scratch_;
  bool training_;
  bool runs_backward_;
};

/// Whether the step whose first node is `op` needs a scratch region (of the
/// input's size) for input k's gradient, given whether that gradient is needed
/// and whether it accumulates: when the gradient
/// accumulates and the op cannot add into its output itself (convolution and
/// FC dgrad plans add with beta = 1 and add copies or adds dy, so they need
/// none, except an FC that flattens its NHWC input first), or when the op
/// computes the gradient even though nothing needs it (BatchNorm's dx, every
/// slice of a concat).
bool step_needs_grad_scratch(models::OpKind op, size_t k, bool needed, bool accumulate,
                             bool fc_flattens_input);

/// The step for setup.members. Throws std::invalid_argument naming the node for
/// an op or configuration the CUDA backend cannot run; BackendError (and
/// OutOfMemoryError) from the layers' set-up.
std::unique_ptr<NodeStep> make_node_step(const StepSetup& setup);

}  // namespace cnnbench::kernels::cuda
