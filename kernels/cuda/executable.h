// The CUDA Executable: a models::Graph compiled for one GPU, with every buffer
// and every cuDNN/cuBLASLt plan made at set-up, and the training step captured
// once into a CUDA graph and replayed.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/node_steps.h"
#include "kernels/cuda/optimizer.cuh"
#include "kernels/cuda/param_copy.cuh"
#include "kernels/cuda/plan_cache.h"
#include "kernels/cuda/resources.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {

/// Owns a cudaGraphExec_t (cudaGraphExecDestroy on destruction). Move-only.
class GraphExec {
 public:
  GraphExec() = default;
  explicit GraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  ~GraphExec() { reset(); }
  GraphExec(GraphExec&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  GraphExec& operator=(GraphExec&& o) noexcept {
    if (this != &o) {
      reset();
      exec_ = std::exchange(o.exec_, nullptr);
    }
    return *this;
  }
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  [[nodiscard]] cudaGraphExec_t get() const { return exec_; }
  [[nodiscard]] bool empty() const { return exec_ == nullptr; }
  void reset() noexcept {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

/// A graph compiled for one CUDA device with a fixed batch and image size.
///
/// Memory (all allocated by the constructor; train_step allocates nothing):
///  - parameters: fp32 master weights, fp32 gradients and fp32 momentum, three
///    flat buffers in Graph::param_layout order and PyTorch's tensor layouts
///    (parameters() and gradients() return the first two). Gradients are fp32
///    for every precision: it is what the all-reduce and the fused optimizer
///    read, and it keeps fp16/bf16 rounding out of the sum over ranks.
///  - the layers' copies of conv and FC weights and biases, in the storage type
///    and the layers' layouts (conv filters KRSC for NHWC, KCRS for NCHW, with
///    zero channels where the first layer's input is padded), rewritten from the
///    fp32 masters after every optimizer step by one copy launch. An fp32/tf32
///    tensor whose layout already matches and whose place in the flat buffer is
///    16-byte aligned is read straight from the masters instead.
///  - parameter gradients that a layer computes in another type or layout (conv
///    dw and db in fp16/bf16, KRSC filters, the padded first layer, misaligned
///    slots) go through a staging buffer and are converted into the flat fp32
///    buffer right after the layer's backward; BatchNorm and FC gradients are
///    fp32 and written in place.
///  - activations: every node output in options.format and the storage type
///    (fp32 for fp32/tf32, else fp16/bf16); flatten in NCHW or of a 1×1 map is
///    a view; a ReLU whose input has no other use and whose producer's backward
///    does not read its own output runs in place. Activation gradients share
///    buffers between tensors whose gradients are never alive together.
///  - BatchNorm running statistics and saved batch statistics (fp32), max-pool
///    argmax bytes, the dynamic loss scaler's state (fp16) and the dropout step
///    counter (device memory, so CUDA graph replays advance them).
///  - one workspace (DeviceContext) sized to the largest plan, plus scratch for
///    BatchNorm partial sums, the loss rows and gradient accumulation.
///
/// Fusion: BatchNorm → ReLU, BatchNorm → Add → ReLU and BatchNorm → Add (with
/// the BatchNorm's output used by nothing else) run as one BatchNorm kernel
/// with the add and the ReLU fused (batchnorm.cuh); the other ops run alone.
///
/// The first convolution's NHWC input is padded to 16 bytes per pixel — 8
/// channels in fp16/bf16, 4 in fp32/tf32 (cuDNN's tensor-core and vectorised
/// kernels want C·sizeof(element) a multiple of 16; conv.h) — when every
/// consumer of the images is a convolution with groups = 1. synthetic_batch
/// then writes the padded images directly; a batch from elsewhere (N, 3, H, W)
/// is padded into the same buffer at the start of each step.
///
/// Steps: the backward pass visits steps in reverse order; a tensor read by
/// several consumers gets the first gradient written and the others added
/// (convolution and FC dgrad plans with beta = 1, else a scratch region and an
/// add). fp16 runs use dynamic loss scaling as torch.cuda.amp.GradScaler
/// (optimizer.cuh): the logits' gradient is scaled by the device-resident
/// scale, the flat gradients are checked for inf/NaN after backward, the update
/// is skipped and the scale halved after an overflow, and the scale doubled
/// after 2000 clean steps; gradients() then holds gradients times the scale of
/// that step.
///
/// CUDA graphs (options.cuda_graph): the first two train_step calls run
/// eagerly (every plan and kernel runs once outside a capture: lazy
/// initialisation must not happen inside one; CUDNN.md §4); the third is
/// captured whole (forward, loss, backward, the work on_grad_ready enqueues, the
/// optimizer, the weight copies, the loss-scale and dropout-counter updates)
/// into a cudaGraphExec, which that call and every later one launch. A batch
/// with other pointers, or a switch between an empty and a non-empty
/// on_grad_ready, runs two eager steps and captures again. forward_only is
/// captured the same way on its own. Eager and replayed steps compute the same
/// thing: dropout masks and the loss scale follow device counters.
///
/// The on_grad_ready contract on CUDA: the call happens on the host thread
/// during train_step, right after the range's gradient work was enqueued on
/// stream() (not finished). A callee doing device work must
///   1. order it after that work: record an event on stream() and make its own
///      stream(s) wait for it (this forks its streams from the compute stream;
///      inside a capture the event is captured too, so its streams join the
///      capture);
///   2. join back before the optimizer: before the call for the last range of
///      the step returns, make stream() wait for an event recorded after its
///      last work on each of its streams (an unjoined stream makes the capture
///      fail with cudaErrorStreamCaptureUnjoined, reported as a BackendError);
///   3. never synchronise a stream or the device, allocate, or otherwise make a
///      call that is illegal during stream capture (mode ThreadLocal);
///   4. enqueue the same work on the same buffers at every step: graph replays
///      do not call on_grad_ready at all; they replay the work it enqueued when
///      the step was captured. mpi::GradientBuckets follows this contract.
///
/// Errors (constructor): std::invalid_argument naming the option for invalid
/// options (batch < 1, image < 1 pixel, a device ordinal the runtime does not
/// have, bf16 on a device below compute capability 8.0) or a graph the backend
/// cannot run (no final SoftmaxCrossEntropy, logits not [N, classes, 1, 1] in
/// NHWC, shapes that do not work out); OutOfMemoryError naming the allocation,
/// the batch size and a batch size that should fit (estimated from the bytes
/// per image of activations) when the device memory is too small;
/// BackendError when cuDNN or cuBLASLt has no plan for a layer (naming it).
/// During steps, errors name the step (ops, node name, shape).
class CudaExecutable final : public Executable {
 public:
  CudaExecutable(const models::Graph& graph, const CompileOptions& options);
  ~CudaExecutable() override;

  Batch synthetic_batch(uint64_t seed) override;
  /// Uploads fp32 images to a staging buffer and converts them to the storage
  /// type (padding channels, where the first layer pads, happens per step).
  Batch upload_batch(const float* images, const int32_t* labels) override;
  /// Throws std::logic_error when compiled with training = false, and
  /// std::invalid_argument when the batch size differs from the compiled one.
  void train_step(const Batch& batch, const GradReadyFn& on_grad_ready) override;
  void forward_only(const Batch& batch) override;
  /// Waits for the stream, then copies the fp32 loss to the host.
  float loss() override;
  void synchronize() override;
  BufferView parameters() override;
  BufferView gradients() override;
  /// Wait for the stream, then copy.
  void read_parameters(int64_t offset, int64_t count, float* out) override;
  void read_gradients(int64_t offset, int64_t count, float* out) override;
  /// Waits for the stream, copies, and rewrites the layers' low-precision and
  /// re-laid-out weight copies from the masters.
  void write_parameters(int64_t offset, const float* values, int64_t count) override;
  /// On the device (param_hash.cuh); copies back one 8-byte sum per 64 Ki elements.
  ParamHashes parameter_hashes(const std::vector<models::ParamSlot>& layout) override;
  /// Waits for the stream; the scale the next step will use (fp16), else 1.
  [[nodiscard]] float loss_scale() const override;
  [[nodiscard]] MemoryReport memory() const override { return memory_; }
  [[nodiscard]] std::string description() const override { return description_; }
  /// CUDA events on the compute stream (step_events.h).
  [[nodiscard]] std::unique_ptr<StepEvents> make_step_events() override;
  /// Plans, autotuning, allocation and (after the first steps) capture times;
  /// notes on the plan cache file.
  [[nodiscard]] SetupReport setup_report() const override { return setup_; }

  /// The compute stream every step's work is enqueued on (see the on_grad_ready
  /// contract above), as a cudaStream_t; for gradient buckets and step timers.
  [[nodiscard]] void* compute_stream() const override { return ctx_->stream.get(); }
  [[nodiscard]] cudaStream_t stream() const { return ctx_->stream.get(); }
  /// Channels of the stored input images: 8 (fp16/bf16) or 4 (fp32/tf32) when
  /// the first layer's NHWC input is padded, else the graph's input channels.
  [[nodiscard]] int stored_input_channels() const { return stored_channels_; }
  /// Steps (train_step and forward_only calls) launched from a captured graph so far.
  [[nodiscard]] int64_t graph_launches() const { return graph_launches_; }
  /// Times a step was captured into a CUDA graph so far.
  [[nodiscard]] int64_t graph_captures() const { return graph_captures_; }

 private:
  /// One way of running a pass (training or inference) from a captured graph.
  struct CapturedPass {
    const void* images = nullptr;  ///< the pointers the graph was captured with
    const int32_t* labels = nullptr;
    bool with_callback = false;
    int eager_runs = 0;  ///< eager runs with these pointers since the last change
    GraphExec exec;
  };
  /// Everything a backward pass needs to report and convert for one node with
  /// parameters, in flat-buffer order.
  struct ParamGroup {
    models::NodeId node = 0;
    int64_t offset = 0;  ///< elements
    int64_t count = 0;
    int64_t copy_chunk_begin = 0;  ///< staged gradients: chunks of the to-flat table
    int64_t copy_chunk_end = 0;
    /// fp32 gradients staged for alignment only: plain copies into the flat buffer.
    std::vector<std::pair<const void*, void*>> fp32_copies;  // (staging, flat)
    std::vector<int64_t> fp32_copy_bytes;
  };

  /// Everything decided on the host before any device memory is taken: the
  /// steps and fusions, buffer ownership, the backward plan, parameter routes
  /// and the memory footprint (executable.cpp).
  struct Plan;
  /// Fills `plan` from graph_ (shapes inferred) and options_; also sets
  /// stored_channels_ and param_count_.
  void make_plan(Plan& plan);
  /// Throws OutOfMemoryError, with a batch size that should fit, when the
  /// plan's footprint exceeds the device's free memory.
  void check_memory(const Plan& plan);
  /// The parameter buffers, the layers' weight copies, the copy tables and the
  /// BatchNorm running statistics; returns each node's ParamPointers.
  std::vector<ParamPointers> allocate_parameters(const Plan& plan);
  /// Node outputs, activation gradients, scratch, the batch and device scalars.
  void allocate_activations(const Plan& plan);
  /// Builds every step (the cuDNN and cuBLASLt plans) and sizes the workspace.
  void build_steps(const Plan& plan, const std::vector<ParamPointers>& params);
  /// With options_.plan_cache_path: seeds plans_' engine choices from the file
  /// (before build_steps) / rewrites it with every choice (after). Notes go to
  /// setup_.notes; neither throws for the file.
  void load_plan_cache_file(const std::string& gpu_name);
  void save_plan_cache_file(const std::string& gpu_name);
  /// "... a batch of about N images should fit", from the plan's bytes per image.
  [[nodiscard]] std::string fitting_batch_text(const Plan& plan) const;
  /// "batch size 256 on CUDA device 0", for messages.
  [[nodiscard]] std::string batch_text() const;

  void check_batch(const Batch& batch) const;
  /// The images pointer the first steps read (padding an external batch first).
  const void* bind_input(const Batch& batch);
  void enqueue_forward(const Batch& batch, bool training);
  void enqueue_train_step(const Batch& batch, const GradReadyFn& on_grad_ready);
  void enqueue_backward(const GradReadyFn& on_grad_ready);
  void enqueue_optimizer();
  void enqueue_weight_copy();
  /// Runs `enqueue` eagerly, or captures it into `pass` and launches the graph.
  template <class Enqueue>
  void run_pass(CapturedPass& pass, const Batch& batch, bool with_callback, Enqueue&& enqueue);

  CompileOptions options_;
  models::Graph graph_;
  DType dtype_ = DType::F32;
  int image_channels_ = 3;
  int stored_channels_ = 3;
  int num_classes_ = 0;
  int64_t param_count_ = 0;

  // Declaration order = construction order: the context (stream, handles,
  // workspace) is destroyed last, the captured graphs first.
  std::unique_ptr<DeviceContext> ctx_;
  PlanCache plans_;
  StepResources resources_;

  DeviceBuffer master_;        ///< (P) fp32 parameters, param_layout order
  DeviceBuffer grads_;         ///< (P) fp32 gradients
  DeviceBuffer momentum_;      ///< (P) fp32 SGD velocity
  DeviceBuffer layer_params_;  ///< the layers' weight copies (storage type, 256-byte slots)
  DeviceBuffer staging_;   ///< parameter gradients in the layers' type/layout, one node at a time
  DeviceBuffer bn_stats_;  ///< running mean and variance of every BatchNorm (fp32)
  DeviceBuffer to_layers_entries_, to_layers_chunks_;  ///< ParamCopyEntry/Chunk tables
  DeviceBuffer to_flat_entries_, to_flat_chunks_;
  int64_t to_layers_chunk_count_ = 0;

  std::vector<DeviceBuffer> value_buffers_;  ///< node outputs
  std::vector<DeviceBuffer> grad_buffers_;   ///< shared activation-gradient buffers
  DeviceBuffer grad_scratch_;                ///< per-step regions for accumulated gradients
  DeviceBuffer bn_scratch_;
  DeviceBuffer loss_scratch_;
  DeviceBuffer input_;    ///< images in the stored form (padded, or the synthetic batch)
  DeviceBuffer uploaded_f32_;     ///< upload_batch's fp32 images, allocated on first use
  DeviceBuffer uploaded_images_;  ///< the same in the storage type (unpadded)
  DeviceBuffer labels_;   ///< (N) int32
  DeviceBuffer scalars_;  ///< loss (fp32), dropout step (uint64), loss scaler state

  TensorTable tensors_;
  std::vector<models::NodeId> input_aliases_;            ///< node 0 and the views of it
  std::vector<std::unique_ptr<NodeStep>> steps_;         ///< in forward order
  std::vector<std::vector<models::NodeId>> step_nodes_;  ///< per step: the nodes it completes
  std::vector<bool> step_runs_backward_;
  std::vector<ParamGroup> param_groups_;  ///< flat-buffer order
  std::vector<int> group_of_node_;        ///< node → index in param_groups_, or −1
  std::vector<uint8_t> node_done_;        ///< per param group, refilled every step
  bool has_dropout_ = false;

  float* loss_device_ = nullptr;
  uint64_t* dropout_step_ = nullptr;
  LossScalerState* scaler_ = nullptr;  ///< null unless fp16

  int64_t device_free_bytes_ = 0;  ///< free device memory before set-up took any
  MemoryReport memory_;
  SetupReport setup_;
  std::string description_;
  int64_t graph_launches_ = 0;
  int64_t graph_captures_ = 0;

  CapturedPass train_pass_;
  CapturedPass infer_pass_;
};

}  // namespace cnnbench::kernels::cuda
