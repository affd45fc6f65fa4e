// Convolutions on the GPU through cuDNN's graph API: one ConvPlan per
// (shape, pass, precision, layout, alignment, alpha/beta), built once at set-up
// (heuristics mode A, then FALLBACK; optionally autotuned) and run on the
// context's stream; ConvLayer bundles a layer's fprop/dgrad/wgrad plans from a
// PlanCache and adds the bias and its gradient with kernels of its own (conv.cu).
//
// Passes, for x [N, C, H, W], w [K, C/groups, R, S], y [N, K, P, Q] (logical dims):
//   fprop  y  = conv(x, w)                (cross-correlation, as torch.nn.Conv2d)
//   dgrad  dx = conv_transpose(dy, w)     (= ∂loss/∂x)
//   wgrad  dw = corr(x, dy)               (= ∂loss/∂w, summed over the batch)
//
// Memory layouts (DataFormat):
//   NHWC: activations [N][H][W][C] (C fastest), filters KRSC: [K][R][S][C/groups].
//   NCHW: activations [N][C][H][W], filters KCRS: [K][C/groups][R][S].
// PyTorch's master weight [K, C/groups, R, S] is KCRS, so NCHW runs use it as
// is; NHWC runs need it transposed to KRSC: element (k, c, r, s) goes to
// conv_w_layout(shape, NHWC).offset(k, c, r, s) = ((k·R + r)·S + s)·C/groups + c.
// The executable converts when it initialises the low-precision weights from the
// shared fp32 initialiser, and converts dw back the same way.
//
// Precisions: fp32 = fp32 tensors, FLOAT compute, engines with the TENSOR_CORE
// note excluded (they would compute in TF32; CUDNN.md §3); tf32 = the same
// tensors with tensor-core engines allowed; fp16 / bf16 = HALF / BFLOAT16
// tensors with FLOAT compute (CUDNN.md §2). DOWN_CONVERT_INPUTS engines are
// excluded for every precision. dw, the bias and db are in the tensors' type
// too; products accumulate in fp32.
//
// First layer (C = 3) in NHWC: tensor-core and vectorised kernels want 16-byte
// pixels, so the executable pads the input to C_padded = 8 channels (fp16/bf16)
// or 4 (fp32/tf32)
// (the padding kernel lives with the other CUDA kernels). Contract:
//  - build the shape with c = C_padded (conv_shape(..., padded_channels));
//  - x channels 3..C_padded-1 hold zeros;
//  - the device filter is KRSC with C_padded channels, channels 3.. zero: the
//    executable writes zeros there when it converts the [K, 3, R, S] master
//    weight (masters and gradients keep C = 3);
//  - dw comes back with C_padded channels; channels 3.. are exactly 0 (x is 0
//    there) and are dropped when dw is copied to the [K, 3, R, S] gradient;
//  - no dgrad (ConvLayerConfig::compute_dgrad = false): the images need none.
// Mathematically the result is the unpadded convolution (added zeros).
//
// Host code; the bias kernels are in conv.cu. Nothing here prints.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/cudnn_graph.h"
#include "kernels/cuda/handles.h"
#include "models/graph.h"

namespace cnnbench::kernels::cuda {

class PlanCache;

/// The three convolution passes.
enum class ConvKind { Fprop, Dgrad, Wgrad };
const char* to_string(ConvKind kind);  ///< "fprop", "dgrad", "wgrad"

/// Output size along one axis (torch.nn.Conv2d's formula; CUDNN.md §2):
///   ⌊(input + pad_before + pad_after − dilation·(filter − 1) − 1) / stride⌋ + 1,
/// or 0 when the filter does not fit the padded input or stride ≤ 0.
int64_t conv_output_size(int64_t input, int64_t filter, int64_t pad_before, int64_t pad_after,
                         int64_t stride, int64_t dilation);

/// One convolution's geometry in logical terms: x [N, C, H, W], w [K, C/groups, R, S],
/// symmetric zero padding (pad_h rows above and below, pad_w columns left and
/// right, as PyTorch), y [N, K, P, Q].
struct ConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t k = 0, r = 1, s = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;

  [[nodiscard]] int64_t p() const;  ///< output height
  [[nodiscard]] int64_t q() const;  ///< output width
  [[nodiscard]] int64_t c_per_group() const { return groups > 0 ? c / groups : 0; }
  [[nodiscard]] int64_t k_per_group() const { return groups > 0 ? k / groups : 0; }
  [[nodiscard]] int64_t x_elements() const { return n * c * h * w; }
  [[nodiscard]] int64_t w_elements() const { return k * c_per_group() * r * s; }
  [[nodiscard]] int64_t y_elements() const { return n * k * p() * q(); }
  /// Multiply-adds of one pass (fprop, dgrad and wgrad each do this many).
  [[nodiscard]] int64_t macs() const { return y_elements() * c_per_group() * r * s; }
  /// Throws std::invalid_argument naming the field when a size is not positive,
  /// groups do not divide C and K, or the output would be empty.
  void validate() const;
  /// "x[N=32,C=64,H=56,W=56] w[K=64,C/g=64,R=3,S=3] y[P=56,Q=56] stride 1x1 pad 1x1 dil 1x1 groups
  /// 1"
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const ConvShape&, const ConvShape&) = default;
};

/// The shape of a models::Graph conv node with input `input` ([N, C, H, W]).
/// `padded_channels` > input.c builds the first-layer padded shape (see the
/// header comment; needs groups = 1). Throws std::invalid_argument.
ConvShape conv_shape(const models::Shape& input, const models::ConvAttrs& attrs,
                     int64_t padded_channels = 0);

/// Logical dims (N, C, H, W order; filters K, C/groups, R, S) and element strides.
struct TensorLayout {
  std::array<int64_t, 4> dims{};
  std::array<int64_t, 4> strides{};
  [[nodiscard]] int64_t elements() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
  /// Element offset of logical index (i0, i1, i2, i3).
  [[nodiscard]] int64_t offset(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    return i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + i3 * strides[3];
  }
};
/// Packed layout of logical dims [d0, d1, d2, d3] = [N, C, H, W] (or [K, C/g, R, S])
/// in `format`: NHWC/KRSC strides [H·W·C, 1, W·C, C]; NCHW/KCRS strides [C·H·W, H·W, W, 1].
TensorLayout packed_layout(std::array<int64_t, 4> dims, DataFormat format);
TensorLayout conv_x_layout(const ConvShape& shape, DataFormat format);  ///< x and dx
TensorLayout conv_w_layout(const ConvShape& shape, DataFormat format);  ///< w and dw
TensorLayout conv_y_layout(const ConvShape& shape, DataFormat format);  ///< y and dy

/// Storage type of a precision: fp32/tf32 → F32, fp16 → F16, bf16 → BF16.
DType storage_dtype(Precision precision);
cudnnDataType_t to_cudnn(DType dtype);

/// Everything that determines a convolution plan.
struct ConvConfig {
  ConvShape shape;
  ConvKind kind = ConvKind::Fprop;
  Precision precision = Precision::Fp32;
  DataFormat format = DataFormat::NHWC;
  /// Bytes every pointer passed to the plan is aligned to (checked at run time).
  /// 16 admits the tensor-core engines (CUDNN.md §1); cudaMalloc gives 256.
  int64_t alignment = 16;
  /// Baked into the plan: out = alpha·pass(...) + beta·out.
  float alpha = 1.0F;
  float beta = 0.0F;
  /// Exclude engines with the NONDETERMINISTIC note.
  bool deterministic = false;

  /// Which engines qualify: no DOWN_CONVERT_INPUTS engines; strict fp32 also
  /// drops TENSOR_CORE ones; `deterministic` drops NONDETERMINISTIC ones.
  [[nodiscard]] EngineFilter engine_filter() const;
  /// "conv fprop NHWC fp16 x[...] w[...] y[...] ... align 16 alpha 1 beta 0", for messages.
  [[nodiscard]] std::string describe() const;
};

/// The finalized descriptors of a convolution's one-operation graph: the x, w,
/// y tensors (uids ConvPlan::kUidX/W/Y; dx, dw, dy for the backward passes),
/// the convolution descriptor and the operation. Needs neither a GPU nor a
/// handle; ConvPlan builds its OperationGraph from them.
struct ConvDescriptors {
  std::vector<BackendDescriptor> tensors_and_conv;  ///< x, w, y, convolution
  BackendDescriptor operation;
};
ConvDescriptors make_conv_descriptors(const ConvConfig& config);

/// How a plan is chosen. None of these is part of the plan-cache key.
struct ConvBuildOptions {
  /// Time up to max_candidates plans on throwaway buffers and keep the fastest
  /// (set-up only; never while a CUDA graph is being captured).
  bool autotune = false;
  int max_candidates = 8;
  int timing_iterations = 3;
  /// Engines needing more workspace are skipped.
  int64_t max_workspace_bytes = int64_t{256} << 20;
  cudnnBackendHeurMode_t heuristic_mode = CUDNN_HEUR_MODE_A;
  /// false (the default): engines that compile a kernel at run time (NVRTC,
  /// seconds per shape) are used only when no other engine runs the shape;
  /// true: they are candidates like any other.
  bool runtime_compiled_engines = false;
};

/// A finalized execution plan for one ConvConfig. Build at set-up; run any
/// number of times with pointers honouring config().alignment. Before
/// capturing a CUDA graph, run every plan once on the stream outside the
/// capture so that first-use initialisation does not happen inside it
/// (CUDNN.md §4). Move-only.
class ConvPlan {
 public:
  /// Tensor uids in the graph: x/dx, w/dw, y/dy.
  static constexpr int64_t kUidX = 1;
  static constexpr int64_t kUidW = 2;
  static constexpr int64_t kUidY = 3;

  /// Builds the graph and the plan on ctx's handle: `preferred` (an engine
  /// choice cached for this config) is tried first; otherwise heuristics, and
  /// with options.autotune the fastest of up to max_candidates plans (timed on
  /// ctx.stream with throwaway buffers it allocates and frees). Throws
  /// std::invalid_argument for a bad shape, BackendError/CudnnError naming the
  /// config when no engine runs it.
  ConvPlan(const DeviceContext& ctx, const ConvConfig& config, const ConvBuildOptions& options = {},
           const EngineChoice* preferred = nullptr);

  [[nodiscard]] const ConvConfig& config() const { return config_; }
  [[nodiscard]] const EngineConfigInfo& engine() const { return plan_->engine(); }
  [[nodiscard]] int64_t workspace_bytes() const { return plan_->workspace_bytes(); }
  /// The chosen plan's autotuned time in ms, or a negative value when not autotuned.
  [[nodiscard]] float autotuned_ms() const { return autotuned_ms_; }
  /// Plans timed (autotune) or 1.
  [[nodiscard]] int candidates() const { return candidates_; }
  /// Wall time spent timing candidates (seconds), buffers included; 0 without autotuning.
  [[nodiscard]] double autotune_seconds() const { return autotune_s_; }
  /// True when the plan came from the `preferred` engine choice.
  [[nodiscard]] bool from_preferred_choice() const { return from_preferred_; }

  /// y [N,K,P,Q] = alpha·conv(x, w) + beta·y. Needs kind Fprop.
  void fprop(const DeviceContext& ctx, const void* x, const void* w, void* y) const;
  /// dx [N,C,H,W] = alpha·conv_transpose(dy, w) + beta·dx. Needs kind Dgrad.
  void dgrad(const DeviceContext& ctx, const void* dy, const void* w, void* dx) const;
  /// dw [K,C/g,R,S] = alpha·Σ_batch corr(x, dy) + beta·dw. Needs kind Wgrad.
  void wgrad(const DeviceContext& ctx, const void* x, const void* dy, void* dw) const;

  /// A variant pack bound to one set of pointers (x/dx, w/dw, y/dy in uid
  /// order, and the workspace), kept by a layer so that a step whose pointers
  /// do not change builds it once, at its first run, and never again.
  struct BoundPack {
    std::array<const void*, 4> pointers{};  ///< x, w, y, workspace
    std::optional<VariantPack> pack;
  };
  /// Runs the plan with x, w, y in uid order (for dgrad x = dx and y = dy, for
  /// wgrad w = dw), reusing `bound` when its pointers match and rebuilding it
  /// (with the alignment checks) when they do not. Throws as fprop/dgrad/wgrad.
  void run_bound(const DeviceContext& ctx, BoundPack& bound, const void* x, const void* w,
                 const void* y) const;

 private:
  void run(const DeviceContext& ctx, ConvKind kind, const void* x, const void* w,
           const void* y) const;
  /// Checks the pointers and the workspace; returns the variant pack for them.
  VariantPack make_pack(const DeviceContext& ctx, const void* x, const void* w,
                        const void* y) const;

  ConvConfig config_;
  std::optional<ExecutionPlan> plan_;
  float autotuned_ms_ = -1.0F;
  double autotune_s_ = 0;
  int candidates_ = 1;
  bool from_preferred_ = false;
};

/// One conv layer of a network.
struct ConvLayerConfig {
  ConvShape shape;
  Precision precision = Precision::Fp16;
  DataFormat format = DataFormat::NHWC;
  int64_t alignment = 16;
  bool bias = false;
  /// false: forward only (no dgrad/wgrad plans).
  bool training = true;
  /// false for the first layer: nothing needs ∂loss/∂input.
  bool compute_dgrad = true;
  /// 0: backward_data overwrites dx. 1: it accumulates (dx += ...), for an
  /// input with several consumers (e.g. a ResNet block input feeding both
  /// conv1 and the downsample conv): the executable runs the first consumer's
  /// dgrad (or whatever writes dx first) with 0 and later ones with 1. cuDNN
  /// bakes beta into the plan, so both values cost one plan each.
  float dgrad_beta = 0.0F;
  bool deterministic = false;
};

/// A conv layer's plans (shared through the PlanCache) and bias kernels.
///   forward:          y = conv(x, w) (+ bias[k] broadcast over N, P, Q)
///   backward_data:    dx = conv_transpose(dy, w) (+ dx when dgrad_beta = 1)
///   backward_filter:  dw = corr(x, dy)
///   backward_bias:    db[k] = Σ_{n,p,q} dy[n,k,p,q] (fp32 accumulation, deterministic)
/// All tensors in storage_dtype(precision) and config().format; bias and db [K].
class ConvLayer {
 public:
  ConvLayer(PlanCache& cache, const DeviceContext& ctx, const ConvLayerConfig& config,
            const ConvBuildOptions& options = {});

  void forward(const DeviceContext& ctx, const void* x, const void* w, const void* bias,
               void* y) const;
  void backward_data(const DeviceContext& ctx, const void* dy, const void* w, void* dx) const;
  void backward_filter(const DeviceContext& ctx, const void* x, const void* dy, void* dw) const;
  void backward_bias(const DeviceContext& ctx, const void* dy, void* db) const;

  /// Workspace this layer needs in its DeviceContext (max over its plans and the
  /// bias reduction); pass the maximum over all layers to reserve_workspace().
  [[nodiscard]] int64_t workspace_bytes() const;
  [[nodiscard]] const ConvLayerConfig& config() const { return config_; }
  /// The plan of a pass; throws std::logic_error when the layer has none.
  [[nodiscard]] const ConvPlan& plan(ConvKind kind) const;
  [[nodiscard]] bool has_plan(ConvKind kind) const;

 private:
  ConvLayerConfig config_;
  std::shared_ptr<const ConvPlan> fprop_;
  std::shared_ptr<const ConvPlan> dgrad_;
  std::shared_ptr<const ConvPlan> wgrad_;
  // The layer's variant packs, one per pass: its pointers are fixed after
  // set-up, so each is built once (plans are shared between layers, packs not).
  mutable ConvPlan::BoundPack fprop_pack_;
  mutable ConvPlan::BoundPack dgrad_pack_;
  mutable ConvPlan::BoundPack wgrad_pack_;
};

// ---------------------------------------------------------------------------
// Bias kernels (conv.cu). Launchers take raw pointers, sizes and a stream.
// Tensors [N, K, PQ] in `format` (PQ = P·Q), of `dtype` (F32, F16 or BF16).
// ---------------------------------------------------------------------------

/// y[n,k,pq] += bias[k], in place, in fp32 arithmetic.
void launch_conv_bias_forward(void* y, const void* bias, DType dtype, DataFormat format, int64_t n,
                              int64_t k, int64_t pq, cudaStream_t stream);
/// Workspace bytes launch_conv_bias_backward needs (fp32 partial sums).
int64_t conv_bias_backward_workspace_bytes(DataFormat format, int64_t n, int64_t k, int64_t pq);
/// db[k] = Σ_{n,pq} dy[n,k,pq]: fp32 partial sums over fixed slices of N·PQ,
/// then a second pass adds them in a fixed order (deterministic). Throws
/// BackendError when workspace_bytes is too small.
void launch_conv_bias_backward(void* db, const void* dy, DType dtype, DataFormat format, int64_t n,
                               int64_t k, int64_t pq, void* workspace, int64_t workspace_bytes,
                               cudaStream_t stream);
/// The same reduction with db in `db_dtype`: dy's type, or F32 (the FC layers'
/// fp32 bias gradient from fp16/bf16 dy when cuBLASLt's BGRADB epilogue has no
/// algorithm). Throws BackendError for another db type or too little workspace.
void launch_bias_backward(void* db, DType db_dtype, const void* dy, DType dy_dtype,
                          DataFormat format, int64_t n, int64_t k, int64_t pq, void* workspace,
                          int64_t workspace_bytes, cudaStream_t stream);

}  // namespace cnnbench::kernels::cuda
