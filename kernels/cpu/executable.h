// The CPU Executable: a models::Graph compiled into oneDNN layers with all
// memory allocated up front.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/context.h"
#include "kernels/cpu/host_array.h"
#include "kernels/cpu/node_steps.h"
#include "models/analysis.h"
#include "models/graph.h"

namespace cnnbench::kernels::cpu {

/// A graph compiled for the CPU with a fixed batch and image size.
///
/// Memory: parameters, gradients and momentum are three flat fp32 buffers in
/// Graph::param_layout order (PyTorch's tensor layouts); activations are in
/// options.format; every buffer is allocated by the constructor (train_step
/// makes no allocation of its own; oneDNN keeps small per-call bookkeeping).
/// Each node output is kept for backward, except that an activation whose input
/// has no other use runs in place, and flatten in NCHW (or of a 1×1 map) is a
/// view. Gradient buffers are shared between tensors whose gradients are never
/// alive at the same time in the backward pass; an input read only by an add
/// uses the add's output gradient as its own. A tensor read by several nodes
/// sums their gradients.
///
/// Randomness, reproducible from options.seed: weights by init_parameters, and
/// the dropout mask of node d in training step s (counted from 0) drawn with key
/// derive_key(derive_key(derive_key(seed, kDropoutStream), s), d) (see
/// DropoutLayer::new_mask and kernels/init.h).
///
/// Errors (constructor): std::invalid_argument for unsupported options
/// (precision other than fp32, batch < 1, image < 1 pixel, num_threads < 0) or a
/// graph whose last node is not a SoftmaxCrossEntropy, or whose shapes do not
/// work out for the image size; OutOfMemoryError; BackendError when oneDNN
/// cannot create a primitive (naming the node).
class CpuExecutable final : public Executable {
 public:
  CpuExecutable(const models::Graph& graph, const CompileOptions& options);
  ~CpuExecutable() override;

  Batch synthetic_batch(uint64_t seed) override;
  Batch upload_batch(const float* images, const int32_t* labels) override;
  /// Throws std::logic_error when compiled with training = false, and
  /// std::invalid_argument when the batch size differs from the compiled one.
  void train_step(const Batch& batch, const GradReadyFn& on_grad_ready) override;
  void forward_only(const Batch& batch) override;
  float loss() override { return loss_; }
  void synchronize() override;
  BufferView parameters() override;
  BufferView gradients() override;
  void read_parameters(int64_t offset, int64_t count, float* out) override;
  void read_gradients(int64_t offset, int64_t count, float* out) override;
  /// The layers reorder the flat weights on every call, so a plain copy suffices.
  void write_parameters(int64_t offset, const float* values, int64_t count) override;
  ParamHashes parameter_hashes(const std::vector<models::ParamSlot>& layout) override;
  [[nodiscard]] MemoryReport memory() const override { return memory_; }
  [[nodiscard]] std::string description() const override { return description_; }

 private:
  struct ParamGroup {
    models::NodeId node;
    int64_t offset;
    int64_t count;
  };

  void check_batch(const Batch& batch) const;
  void run_forward(const Batch& batch, bool training);

  CompileOptions options_;
  models::Graph graph_;
  Context ctx_;
  int num_classes_ = 0;
  int image_channels_ = 3;

  HostArray<float> params_, grads_, momentum_;
  std::vector<HostArray<float>> value_buffers_, grad_buffers_;
  HostArray<float> scratch_;
  HostArray<float> images_;
  HostArray<int32_t> labels_;
  TensorTable tensors_;
  std::vector<models::NodeId>
      input_views_;  ///< views of the input: their value is the batch's images

  std::vector<std::unique_ptr<NodeStep>> steps_;  ///< per node; null for Input
  std::vector<bool> runs_backward_;               ///< per node
  /// Which tensor each node's gradient lives in (a view and its input, an add
  /// and an input only it reads share one) and which buffer holds it.
  models::GradientPlan gradients_;
  std::vector<std::vector<GradOut>> input_grads_;  ///< per node, refilled every step
  std::vector<uint8_t> written_;                   ///< per gradient owner: holds a value this step
  std::vector<ParamGroup> param_groups_;           ///< in buffer order
  std::vector<uint8_t> node_done_;

  uint64_t step_ = 0;
  float loss_ = 0.0F;
  MemoryReport memory_;
  std::string description_;
};

}  // namespace cnnbench::kernels::cpu
