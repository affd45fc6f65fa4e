// Fully connected layers on the GPU through cuBLASLt, as torch.nn.Linear:
//   forward          y [N, out] = x [N, in] · Wᵀ + b      (BIAS epilogue)
//   backward_data    dx [N, in] = dy [N, out] · W          (+ dx when dgrad_beta = 1)
//   backward_filter  dW [out, in] = dyᵀ · x, db [out] = Σ_n dy[n, :]   (BGRADB epilogue)
// with W [out, in] row-major (PyTorch's layout, used as is) and every
// activation row-major [N, features] (what an NHWC or NCHW [N, C, H, W]
// tensor is when flattened per image, C·H·W = in).
//
// cuBLASLt is column-major: a row-major R×C matrix with row stride ld is the
// column-major C×R matrix with leading dimension ld, i.e. its transpose. So
// every row-major product is computed as its transpose (fc_gemm() below gives
// the exact mapping, and a CPU test checks it against the row-major formulas):
//   forward:  Yᵀ (out×N) = op(A)·op(B), A = W seen as in×out (ld in), op = T;
//             B = X seen as in×N (ld in), op = N; m = out, n = N, k = in;
//             the BIAS epilogue adds b [out] to each of D's rows (D rows = out).
//   dgrad:    dXᵀ (in×N) = A·B, A = W seen as in×out (= Wᵀ, ld in), op = N;
//             B = dY seen as out×N (ld out), op = N; m = in, n = N, k = out.
//   wgrad:    dWᵀ (in×out) = A·op(B), A = X seen as in×N (ld in), op = N;
//             B = dY seen as out×N (ld out), op = T (N×out); m = in, n = out,
//             k = N; D = dW seen as in×out (ld in). BGRADB sums op(B) over the
//             k (= batch) dimension: db [out] = Σ_n dY[n, :].
//
// Compute types (the cuBLASLt matmul descriptor's):
//   fp16 / bf16: CUBLAS_COMPUTE_32F (tensor cores, fp32 accumulation);
//   tf32:        CUBLAS_COMPUTE_32F_FAST_TF32;
//   fp32:        CUBLAS_COMPUTE_32F. cuBLASLt uses TF32 only when the compute
//                type asks for it (the _FAST_ types): cublasSetMathMode does
//                not apply to cuBLASLt, and NVIDIA_TF32_OVERRIDE can only turn
//                TF32 off. To rule out any tensor-core or emulated path as
//                well, the heuristic preference masks out tensor-op
//                implementations (CUBLASLT_MATMUL_PREF_IMPL_MASK); if that
//                leaves no algorithm, CUBLAS_COMPUTE_32F_PEDANTIC is used
//                ("standard arithmetic", per cublas_api.h). compute_type() says
//                which one a layer got.
// For every precision, split-K reductions in the output type are excluded
// (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK), so partial sums stay fp32.
//
// Algorithms come from cublasLtMatmulAlgoGetHeuristic at set-up with the
// workspace limit given; execution passes the DeviceContext's workspace, so the
// calls capture into CUDA graphs. Host code only; nothing here prints.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/cuda/handles.h"

namespace cnnbench::kernels::cuda {

/// x [batch, in_features] → y [batch, out_features].
struct FcShape {
  int64_t batch = 0;
  int64_t in_features = 0;
  int64_t out_features = 0;
  friend bool operator==(const FcShape&, const FcShape&) = default;
};

enum class FcPass { Forward, BackwardData, BackwardFilter };
const char* to_string(FcPass pass);  ///< "forward", "dgrad", "wgrad"

/// The row-major buffers of a fully connected layer.
enum class FcOperand { X, W, Y, Dx, Dw, Dy };
const char* to_string(FcOperand operand);

/// A buffer as cuBLASLt sees it: a column-major rows × cols matrix with
/// leading dimension ld (elements between columns).
struct LtMatrix {
  FcOperand operand = FcOperand::X;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;
  friend bool operator==(const LtMatrix&, const LtMatrix&) = default;
};

/// D (m×n) = op(A) (m×k) · op(B) (k×n), column-major; op(M) = Mᵀ when trans.
struct FcGemm {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  LtMatrix a;
  LtMatrix b;
  LtMatrix d;
};

/// The column-major GEMM that computes `pass` of a row-major FC layer (see the
/// header comment). Pure; throws std::invalid_argument for non-positive sizes.
FcGemm fc_gemm(FcPass pass, const FcShape& shape);

/// One fully connected layer.
struct FcConfig {
  FcShape shape;
  Precision precision = Precision::Fp16;
  bool bias = true;
  /// false: forward only.
  bool training = true;
  /// false when nothing needs ∂loss/∂x.
  bool compute_dgrad = true;
  /// 0: backward_data overwrites dx; 1: accumulates into it (several consumers).
  float dgrad_beta = 0.0F;
  /// Type of dW and db. F32 is allowed for fp16/bf16 runs (fp16/bf16 inputs,
  /// fp32 output); the default (I32, meaning "unset") is the storage type.
  DType wgrad_dtype = DType::I32;
  /// Bytes every pointer (x, w, y, bias, dx, dy, dw, db) is aligned to; checked
  /// at run time and given to the heuristics as the minimum alignment.
  int64_t alignment = 16;
  /// Algorithms needing more workspace are not considered (bytes).
  int64_t max_workspace_bytes = int64_t{32} << 20;
  /// Test hook: take the bias-gradient fallback (DEFAULT epilogue plus our own
  /// reduction) even where cuBLASLt has a BGRADB algorithm.
  bool force_bias_grad_fallback = false;
};

/// How a layer's bias gradient is computed.
enum class FcBiasGradPath {
  None,      ///< no bias, or no wgrad pass
  Bgradb,    ///< cuBLASLt's BGRADB epilogue, fused into the wgrad GEMM
  Fallback,  ///< the wgrad GEMM with the DEFAULT epilogue, then launch_bias_backward
};
const char* to_string(FcBiasGradPath path);  ///< "none", "BGRADB epilogue", "separate reduction"

struct FcGemmPlan;  // one pass's descriptors and algorithm (fc.cpp)

/// A fully connected layer's cuBLASLt plans, chosen at construction. Run each
/// pass once outside a CUDA-graph capture before capturing it, as for the conv
/// plans. Not thread-safe: forward/backward_filter set the epilogue's bias
/// pointer on the layer's own matmul descriptor.
/// Tensors in storage_dtype(precision) (conv.h; dW, db in wgrad_dtype); bias
/// and db [out].
class FcLayer {
 public:
  /// Throws std::invalid_argument for a bad config, BackendError naming the
  /// pass, shape and types when cuBLASLt has no algorithm for it.
  FcLayer(const DeviceContext& ctx, const FcConfig& config);
  ~FcLayer();
  FcLayer(FcLayer&&) noexcept;
  FcLayer& operator=(FcLayer&&) noexcept;
  FcLayer(const FcLayer&) = delete;
  FcLayer& operator=(const FcLayer&) = delete;

  /// y = x·Wᵀ (+ b). `bias` may be null only for a layer without bias.
  void forward(const DeviceContext& ctx, const void* x, const void* w, const void* bias,
               void* y) const;
  /// dx = dy·W (+ dx when dgrad_beta = 1).
  void backward_data(const DeviceContext& ctx, const void* dy, const void* w, void* dx) const;
  /// dW = dyᵀ·x and, with a bias, db = Σ_n dy (written, not accumulated).
  void backward_filter(const DeviceContext& ctx, const void* x, const void* dy, void* dw,
                       void* db) const;

  /// Workspace the chosen algorithms need (bytes); include in reserve_workspace.
  [[nodiscard]] int64_t workspace_bytes() const;
  [[nodiscard]] const FcConfig& config() const { return config_; }
  /// The cuBLASLt compute type used by the passes (see the header comment).
  [[nodiscard]] cublasComputeType_t compute_type() const;
  /// "fc forward fp16 x[N=32,in=2048] w[out=1000,in=2048] bias", for messages.
  [[nodiscard]] std::string describe(FcPass pass) const;
  /// Which way db is computed: BGRADB when cuBLASLt offers an algorithm for
  /// the wgrad GEMM with it (fp16/bf16 inputs, fp32 dW and db may have none on
  /// some GPUs and versions), else the fallback.
  [[nodiscard]] FcBiasGradPath bias_grad_path() const { return bias_grad_path_; }

 private:
  FcConfig config_;
  std::unique_ptr<FcGemmPlan> forward_;
  std::unique_ptr<FcGemmPlan> dgrad_;
  std::unique_ptr<FcGemmPlan> wgrad_;
  FcBiasGradPath bias_grad_path_ = FcBiasGradPath::None;
};

}  // namespace cnnbench::kernels::cuda
