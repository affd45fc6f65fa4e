// The compute interface: a Backend compiles a models::Graph into an Executable
// that runs training steps on one device. The CPU backend (kernels/cpu, oneDNN)
// and the CUDA backend (kernels/cuda) implement it with the same file names.
// Nothing here reads flags or the environment, or prints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

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
  /// dtype is the all-reduce dtype (F32 on CPU).
  virtual BufferView gradients() = 0;
  /// The cudaStream_t the step's compute work is enqueued on (as void*), for the
  /// gradient all-reduce to order itself after; nullptr on the CPU.
  [[nodiscard]] virtual void* compute_stream() const { return nullptr; }
  /// Current dynamic loss scale (fp16), or 1 where none is used.
  [[nodiscard]] virtual float loss_scale() const { return 1.0F; }
  [[nodiscard]] virtual MemoryReport memory() const = 0;
  /// One line on how the graph was compiled, e.g. "oneDNN 2.6.3, 2 threads, NHWC fp32".
  [[nodiscard]] virtual std::string description() const = 0;
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
