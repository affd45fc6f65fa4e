// The compute interface: a Backend compiles a models::Graph into an Executable
// that runs training steps on one device. The CPU backend (kernels/cpu, oneDNN)
// and the CUDA backend (kernels/cuda) implement it with the same file names.
// Nothing here reads flags or the environment, or prints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/param_hash.h"
#include "models/graph.h"

namespace cnnbench::kernels {

/// Arithmetic precision of a run. fp16 uses dynamic loss scaling; fp16 and bf16
/// keep fp32 master weights. tf32 = fp32 storage with TF32 tensor-core math.
enum class Precision { Fp32, Tf32, Fp16, Bf16 };
/// Memory layout of activations: NHWC (channels last) or NCHW.
enum class DataFormat { NHWC, NCHW };
/// Element type of a buffer.
enum class DType { F32, F16, BF16, I32 };

const char* to_string(Precision p);   ///< "fp32", "tf32", "fp16", "bf16"
const char* to_string(DataFormat f);  ///< "NHWC", "NCHW"
int64_t dtype_size(DType t);          ///< bytes per element
/// Throws std::out_of_range naming `what` unless [offset, offset + count) lies
/// within a buffer of `size` elements.
void check_flat_range(const char* what, int64_t offset, int64_t count, int64_t size);

/// SGD with momentum and L2 weight decay, as torch.optim.SGD (dampening 0,
/// no Nesterov): g' = g + wd·w; v = momentum·v + g'; w = w − lr·v.
struct OptimizerConfig {
  float learning_rate = 0.01F;
  float momentum = 0.9F;
  float weight_decay = 1e-4F;
};

/// Everything a backend needs to compile a graph for one device.
struct CompileOptions {
  int batch = 0;                  ///< images per step on this device
  int image_h = 224, image_w = 224;
  Precision precision = Precision::Fp32;
  DataFormat format = DataFormat::NHWC;
  OptimizerConfig optimizer;
  uint64_t seed = 0;              ///< weight init, synthetic data and dropout masks
  bool training = true;           ///< false: forward-only (running BN statistics, no dropout, no gradients)
  int device = 0;                 ///< CUDA ordinal; ignored by the CPU backend
  int num_threads = 0;            ///< CPU threads; 0 = what the OpenMP runtime chose
  bool cuda_graph = true;         ///< CUDA: capture the step once and replay it
  bool cudnn_autotune = true;     ///< CUDA: time candidate engine plans once per shape
  /// CUDA: let runtime-compiled cuDNN engines (NVRTC, seconds per shape) compete
  /// in autotuning; false = use them only where no other engine runs a shape.
  bool cudnn_runtime_compiled_engines = false;
  /// CUDA: a file of engine choices per convolution shape, keyed by GPU name
  /// and cuDNN version, read before the plans are built and rewritten after;
  /// empty = none. A file for another GPU or cuDNN, or unreadable, is ignored
  /// (SetupReport::notes says why), never trusted.
  std::string plan_cache_path;
};

/// How long compiling took, by phase, in seconds, and what set-up noted.
struct SetupReport {
  double plans_s = 0;       ///< layer set-up: cuDNN/cuBLASLt heuristics and plan finalize
  double autotune_s = 0;    ///< timing candidate plans (part of compile, not of plans_s)
  double allocation_s = 0;  ///< device buffers, parameter initialisation and upload
  /// CUDA graph capture and instantiation; it happens in the first steps
  /// (warm-up), so it grows after compile() returns.
  double capture_s = 0;
  int64_t plans_built = 0;         ///< cuDNN plans built
  int64_t plans_autotuned = 0;     ///< of which chosen by timing candidates
  int64_t plans_from_cache = 0;    ///< of which rebuilt from the plan cache file's choice
  std::vector<std::string> notes;  ///< e.g. "plan cache ...: ignored (written for ...)"
};

/// A non-owning view of a buffer on the executable's device.
struct BufferView {
  void* data = nullptr;
  int64_t count = 0;  ///< elements
  DType dtype = DType::F32;
};

/// A batch resident on the device: images [N, 3, H, W] in the compiled layout and
/// precision, labels [N] int32 in [0, num_classes). Memory owned by the Executable.
struct Batch {
  const void* images = nullptr;
  const int32_t* labels = nullptr;
  int n = 0;
};

/// Called during backward when the gradient range [offset, offset + count) of the
/// flat gradient buffer (elements, see models::Graph::param_layout) is final; the
/// ranges arrive in buffer order and together cover it exactly once per step. On
/// CUDA the call happens on the host thread while the range's producing work is
/// enqueued, not finished: the callee orders itself after it on the device stream.
using GradReadyFn = std::function<void(int64_t offset, int64_t count)>;

/// Bytes of device memory an Executable holds, by purpose.
struct MemoryReport {
  int64_t parameters = 0;   ///< master weights, low-precision copies, optimizer state
  int64_t gradients = 0;
  int64_t activations = 0;  ///< forward outputs kept for backward and their gradients
  int64_t workspace = 0;
  int64_t data = 0;         ///< the synthetic batch
  [[nodiscard]] int64_t total() const { return parameters + gradients + activations + workspace + data; }
};

/// Device-side step timing: events recorded on the stream the steps run on.
/// record_start() before a step's work is enqueued, record_stop() right after;
/// elapsed_ms() waits for the oldest recorded step not read yet and returns the
/// device time between its two events. Reading one step late keeps the device
/// busy: the host never waits for the step it has just enqueued.
class StepEvents {
 public:
  virtual ~StepEvents() = default;
  StepEvents() = default;
  StepEvents(const StepEvents&) = delete;
  StepEvents& operator=(const StepEvents&) = delete;
  /// Throws std::logic_error when capacity() steps are recorded and unread.
  virtual void record_start() = 0;
  /// Throws std::logic_error without a matching record_start().
  virtual void record_stop() = 0;
  /// Milliseconds (> 0) of the oldest unread step; waits for its stop event.
  /// Throws std::logic_error when no step is pending.
  virtual double elapsed_ms() = 0;
  /// Steps recorded (start and stop) and not read yet.
  [[nodiscard]] virtual int pending() const = 0;
  [[nodiscard]] virtual int capacity() const = 0;
};

/// A graph compiled for one device with a fixed batch and image size. All memory
/// is allocated at construction; train_step allocates nothing.
class Executable {
 public:
  virtual ~Executable() = default;
  Executable() = default;
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Generates a synthetic batch on the device (images ~ N(0, 1), labels uniform
  /// over the classes) from `seed`, once; the returned view stays valid for the
  /// Executable's lifetime. Calling it again replaces the batch.
  virtual Batch synthetic_batch(uint64_t seed) = 0;
  /// A batch from the host: `images` [N, C, H, W] fp32 in the compiled layout
  /// (C = the graph's input channels; NHWC stores it as [N, H, W, C]) and
  /// `labels` [N] in [0, num_classes), N the compiled batch. Copied to the
  /// device in the storage type; the Batch stays valid until the next
  /// upload_batch or synthetic_batch. For comparing backends on one batch
  /// (their synthetic generators differ).
  virtual Batch upload_batch(const float* images, const int32_t* labels) = 0;
  /// One training step: forward, loss, backward (calling on_grad_ready as gradient
  /// ranges complete; may be empty), gradient all-reduce hook, optimizer update.
  /// May return before the device finished (CUDA); call loss() or synchronize().
  virtual void train_step(const Batch& batch, const GradReadyFn& on_grad_ready) = 0;
  /// Inference forward pass and loss (BN with running statistics, dropout off).
  virtual void forward_only(const Batch& batch) = 0;
  /// Mean cross-entropy of the last step's batch. Waits for the device.
  virtual float loss() = 0;
  /// Waits until all work enqueued so far has finished.
  virtual void synchronize() = 0;
  /// fp32 master parameters, flat, in models::Graph::param_layout order.
  virtual BufferView parameters() = 0;
  /// Gradients of the last step, flat, same order and length as parameters().
  /// dtype is the all-reduce dtype (F32 on CPU). In fp16 runs they carry the
  /// loss scale the step used (the optimizer divides it out).
  virtual BufferView gradients() = 0;
  /// Copies elements [offset, offset + count) of parameters() (fp32) to `out`
  /// on the host, after the work enqueued so far. Throws std::out_of_range
  /// for a range outside the buffer.
  virtual void read_parameters(int64_t offset, int64_t count, float* out) = 0;
  /// The same for gradients().
  virtual void read_gradients(int64_t offset, int64_t count, float* out) = 0;
  /// Overwrites parameters() [offset, offset + count) with `values` (fp32,
  /// host) and refreshes whatever the layers read from them, ordered after the
  /// work enqueued so far. Throws std::out_of_range for a range outside the buffer.
  virtual void write_parameters(int64_t offset, const float* values, int64_t count) = 0;
  /// param_hash.h's hashes of parameters() over `layout` (the graph's
  /// param_layout), after the work enqueued so far; the CUDA backend hashes
  /// on the device and copies only the per-tensor sums.
  virtual ParamHashes parameter_hashes(const std::vector<models::ParamSlot>& layout) = 0;
  /// The cudaStream_t the step's compute work is enqueued on (as void*), for the
  /// gradient all-reduce to order itself after; nullptr on the CPU.
  [[nodiscard]] virtual void* compute_stream() const { return nullptr; }
  /// Current dynamic loss scale (fp16), or 1 where none is used.
  [[nodiscard]] virtual float loss_scale() const { return 1.0F; }
  [[nodiscard]] virtual MemoryReport memory() const = 0;
  /// One line on how the graph was compiled, e.g. "oneDNN 2.6.3, 2 threads, NHWC fp32".
  [[nodiscard]] virtual std::string description() const = 0;
  /// Device-event step timing on the compute stream, or nullptr where the
  /// backend has none (the CPU: its steps are synchronous, a host clock times them).
  [[nodiscard]] virtual std::unique_ptr<StepEvents> make_step_events() { return nullptr; }
  /// Set-up time by phase (zeros where a backend does not measure it).
  [[nodiscard]] virtual SetupReport setup_report() const { return {}; }
};

/// A compute backend: compiles graphs for its devices.
///
/// compile() errors: std::invalid_argument for options the backend does not
/// support (e.g. fp16 on the CPU), naming the option, the value and what is valid;
/// OutOfMemoryError when an allocation fails; BackendError for library failures.
class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual std::string name() const = 0;  ///< "cpu" or "cuda"
  /// `graph` need not have inferred shapes; unless they are inferred for
  /// options.batch and options.image_h × image_w already (Graph::shapes_inferred_for),
  /// the backend infers them on its own copy.
  virtual std::unique_ptr<Executable> compile(const models::Graph& graph,
                                              const CompileOptions& options) = 0;
};

/// The oneDNN CPU backend. Throws BackendUnavailable when built without oneDNN.
std::unique_ptr<Backend> make_cpu_backend();
/// The CUDA backend. Throws BackendUnavailable when built without CUDA.
std::unique_ptr<Backend> make_cuda_backend();

}  // namespace cnnbench::kernels
