#include "kernels/cuda/fc.h"

#include <cublas_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "kernels/cuda/conv.h"
#include "kernels/error.h"

namespace cnnbench::kernels::cuda {
namespace {

[[noreturn]] void throw_lt(cublasStatus_t st, const char* call, const std::string& context) {
  throw BackendError(std::string("cuBLASLt ") + cublasGetStatusName(st) + " (" +
                     cublasGetStatusString(st) + ") in " + call + " for " + context);
}

void lt_check(cublasStatus_t st, const char* call, const std::string& context) {
  if (st != CUBLAS_STATUS_SUCCESS) throw_lt(st, call, context);
}

cudaDataType_t to_cuda(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::I32: return CUDA_R_32I;
  }
  return CUDA_R_32F;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
  }
  return "?";
}

const char* compute_name(cublasComputeType_t c) {
  switch (c) {
    case CUBLAS_COMPUTE_32F: return "COMPUTE_32F";
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "COMPUTE_32F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "COMPUTE_32F_FAST_TF32";
    default: return "compute type";
  }
}

void require_aligned(const void* p, int64_t alignment, const char* what,
                     const std::string& context) {
  if (p == nullptr)
    throw std::invalid_argument(std::string("null ") + what + " pointer for " + context);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  if (alignment > 1 && addr % static_cast<uintptr_t>(alignment) != 0) {
    throw std::invalid_argument(std::string(what) + " pointer " + std::to_string(addr) +
                                " is not aligned to the " + std::to_string(alignment) +
                                " bytes promised for " + context);
  }
}

// RAII owners of the cuBLASLt descriptors.
class MatmulDesc {
 public:
  MatmulDesc(cublasComputeType_t compute, const std::string& context) {
    lt_check(cublasLtMatmulDescCreate(&d_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate",
             context);
  }
  ~MatmulDesc() {
    if (d_ != nullptr) (void)cublasLtMatmulDescDestroy(d_);
  }
  MatmulDesc(const MatmulDesc&) = delete;
  MatmulDesc& operator=(const MatmulDesc&) = delete;
  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attr, const T& value, const char* name,
           const std::string& context) {
    const cublasStatus_t st = cublasLtMatmulDescSetAttribute(d_, attr, &value, sizeof(T));
    if (st != CUBLAS_STATUS_SUCCESS) {
      throw_lt(st, (std::string("cublasLtMatmulDescSetAttribute(") + name + ")").c_str(), context);
    }
  }
  [[nodiscard]] cublasLtMatmulDesc_t get() const { return d_; }

 private:
  cublasLtMatmulDesc_t d_ = nullptr;
};

class MatrixLayout {
 public:
  MatrixLayout(DType t, const LtMatrix& m, const std::string& context) {
    lt_check(cublasLtMatrixLayoutCreate(&l_, to_cuda(t), static_cast<uint64_t>(m.rows),
                                        static_cast<uint64_t>(m.cols), m.ld),
             "cublasLtMatrixLayoutCreate", context);
  }
  ~MatrixLayout() {
    if (l_ != nullptr) (void)cublasLtMatrixLayoutDestroy(l_);
  }
  MatrixLayout(const MatrixLayout&) = delete;
  MatrixLayout& operator=(const MatrixLayout&) = delete;
  [[nodiscard]] cublasLtMatrixLayout_t get() const { return l_; }

 private:
  cublasLtMatrixLayout_t l_ = nullptr;
};

class Preference {
 public:
  explicit Preference(const std::string& context) {
    lt_check(cublasLtMatmulPreferenceCreate(&p_), "cublasLtMatmulPreferenceCreate", context);
  }
  ~Preference() {
    if (p_ != nullptr) (void)cublasLtMatmulPreferenceDestroy(p_);
  }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
  template <typename T>
  void set(cublasLtMatmulPreferenceAttributes_t attr, const T& value, const char* name,
           const std::string& context) {
    const cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(p_, attr, &value, sizeof(T));
    if (st != CUBLAS_STATUS_SUCCESS) {
      throw_lt(st, (std::string("cublasLtMatmulPreferenceSetAttribute(") + name + ")").c_str(),
               context);
    }
  }
  [[nodiscard]] cublasLtMatmulPreference_t get() const { return p_; }

 private:
  cublasLtMatmulPreference_t p_ = nullptr;
};

constexpr int kRequestedAlgos = 8;

}  // namespace

// One pass: descriptors, layouts and the algorithm chosen at set-up.
struct FcGemmPlan {
  FcPass pass = FcPass::Forward;
  FcGemm gemm;
  std::string context;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  std::unique_ptr<MatmulDesc> desc;
  std::unique_ptr<MatrixLayout> a;
  std::unique_ptr<MatrixLayout> b;
  std::unique_ptr<MatrixLayout> d;
  cublasLtMatmulAlgo_t algo{};
  int64_t workspace_bytes = 0;
  float beta = 0.0F;
};

namespace {

// Builds descriptors for `compute` and asks the heuristics; returns false when
// they offer no usable algorithm.
bool try_plan(FcGemmPlan& plan, const DeviceContext& ctx, const FcConfig& config, DType ab_type,
              DType d_type, cublasComputeType_t compute, bool mask_tensor_ops) {
  const std::string& context = plan.context;
  plan.compute = compute;
  plan.desc = std::make_unique<MatmulDesc>(compute, context);
  const cublasOperation_t ta = plan.gemm.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = plan.gemm.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  plan.desc->set(CUBLASLT_MATMUL_DESC_TRANSA, ta, "TRANSA", context);
  plan.desc->set(CUBLASLT_MATMUL_DESC_TRANSB, tb, "TRANSB", context);
  plan.desc->set(CUBLASLT_MATMUL_DESC_EPILOGUE, plan.epilogue, "EPILOGUE", context);
  if (plan.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // The heuristics judge the bias pointer's alignment from its value without
    // dereferencing it (cublasLt.h), so give them an address aligned exactly to
    // what we promise; execution sets the real pointer.
    const void* promised = reinterpret_cast<const void*>(static_cast<uintptr_t>(config.alignment));
    plan.desc->set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, promised, "BIAS_POINTER", context);
  }
  plan.a = std::make_unique<MatrixLayout>(ab_type, plan.gemm.a, context);
  plan.b = std::make_unique<MatrixLayout>(ab_type, plan.gemm.b, context);
  plan.d = std::make_unique<MatrixLayout>(d_type, plan.gemm.d, context);

  Preference pref(context);
  const auto max_ws = static_cast<uint64_t>(config.max_workspace_bytes);
  pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_ws, "MAX_WORKSPACE_BYTES", context);
  const auto align = static_cast<uint32_t>(config.alignment);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align, "MIN_ALIGNMENT_A_BYTES", context);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align, "MIN_ALIGNMENT_B_BYTES", context);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align, "MIN_ALIGNMENT_C_BYTES", context);
  pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align, "MIN_ALIGNMENT_D_BYTES", context);
  // Split-K partial sums reduced in place or in the compute type (fp32), never
  // in the (possibly 16-bit) output type.
  const uint32_t reductions =
      CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  pref.set(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reductions, "REDUCTION_SCHEME_MASK",
           context);
  if (mask_tensor_ops) {
    const uint64_t impl = ~static_cast<uint64_t>(CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK);
    pref.set(CUBLASLT_MATMUL_PREF_IMPL_MASK, impl, "IMPL_MASK", context);
  }

  std::array<cublasLtMatmulHeuristicResult_t, kRequestedAlgos> results{};
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      ctx.cublaslt.get(), plan.desc->get(), plan.a->get(), plan.b->get(), plan.d->get(),
      plan.d->get(), pref.get(), kRequestedAlgos, results.data(), &returned);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) return false;
  lt_check(st, "cublasLtMatmulAlgoGetHeuristic", context);
  for (int i = 0; i < returned; ++i) {
    const auto& r = results[static_cast<size_t>(i)];
    if (r.state != CUBLAS_STATUS_SUCCESS) continue;
    if (static_cast<int64_t>(r.workspaceSize) > config.max_workspace_bytes) continue;
    plan.algo = r.algo;
    plan.workspace_bytes = static_cast<int64_t>(r.workspaceSize);
    return true;
  }
  return false;
}

std::unique_ptr<FcGemmPlan> make_plan(FcPass pass, const DeviceContext& ctx, const FcConfig& config,
                                      const std::string& context, bool bias_epilogue) {
  auto plan = std::make_unique<FcGemmPlan>();
  plan->pass = pass;
  plan->gemm = fc_gemm(pass, config.shape);
  plan->context = context;
  const DType io = storage_dtype(config.precision);
  DType d_type = io;
  switch (pass) {
    case FcPass::Forward:
      plan->epilogue = config.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
      break;
    case FcPass::BackwardData:
      plan->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
      plan->beta = config.dgrad_beta;
      break;
    case FcPass::BackwardFilter:
      plan->epilogue = bias_epilogue ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT;
      d_type = config.wgrad_dtype == DType::I32 ? io : config.wgrad_dtype;
      break;
  }
  bool found = false;
  switch (config.precision) {
    case Precision::Fp32:
      found =
          try_plan(*plan, ctx, config, io, d_type, CUBLAS_COMPUTE_32F, /*mask_tensor_ops=*/true) ||
          try_plan(*plan, ctx, config, io, d_type, CUBLAS_COMPUTE_32F_PEDANTIC, false);
      break;
    case Precision::Tf32:
      found = try_plan(*plan, ctx, config, io, d_type, CUBLAS_COMPUTE_32F_FAST_TF32, false);
      break;
    case Precision::Fp16:
    case Precision::Bf16:
      found = try_plan(*plan, ctx, config, io, d_type, CUBLAS_COMPUTE_32F, false);
      break;
  }
  if (!found) {
    throw BackendError("cuBLASLt has no algorithm for " + context + " (A/B " + dtype_name(io) +
                       ", C/D " + dtype_name(d_type) + ", " + compute_name(plan->compute) +
                       ", alignment " + std::to_string(config.alignment) + ", workspace limit " +
                       std::to_string(config.max_workspace_bytes) + " bytes)");
  }
  return plan;
}

void run_plan(const FcGemmPlan& plan, const DeviceContext& ctx, const void* a, const void* b,
              void* d, const void* bias) {
  if (ctx.workspace_bytes() < plan.workspace_bytes) {
    throw BackendError("workspace of device " + std::to_string(ctx.device) + " has " +
                       std::to_string(ctx.workspace_bytes()) + " bytes but " + plan.context +
                       " needs " + std::to_string(plan.workspace_bytes) +
                       ": call DeviceContext::reserve_workspace at set-up");
  }
  if (plan.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // Setting an attribute is host-only work; the descriptor belongs to this
    // layer (not thread-safe, like the rest of a DeviceContext).
    plan.desc->set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias, "BIAS_POINTER", plan.context);
  }
  const ScopedDevice current(ctx.device);  // a no-op when the thread is already on it
  const float alpha = 1.0F;
  const float beta = plan.beta;
  // C = D (in place): read only when beta != 0.
  const cublasStatus_t st = cublasLtMatmul(
      ctx.cublaslt.get(), plan.desc->get(), &alpha, a, plan.a->get(), b, plan.b->get(), &beta, d,
      plan.d->get(), d, plan.d->get(), &plan.algo, ctx.workspace_ptr(),
      static_cast<size_t>(ctx.workspace_bytes()), ctx.stream.get());
  lt_check(st, "cublasLtMatmul", plan.context);
}

}  // namespace

const char* to_string(FcPass pass) {
  switch (pass) {
    case FcPass::Forward: return "forward";
    case FcPass::BackwardData: return "dgrad";
    case FcPass::BackwardFilter: return "wgrad";
  }
  return "?";
}

const char* to_string(FcOperand operand) {
  switch (operand) {
    case FcOperand::X: return "x";
    case FcOperand::W: return "w";
    case FcOperand::Y: return "y";
    case FcOperand::Dx: return "dx";
    case FcOperand::Dw: return "dw";
    case FcOperand::Dy: return "dy";
  }
  return "?";
}

FcGemm fc_gemm(FcPass pass, const FcShape& shape) {
  const int64_t batch = shape.batch;
  const int64_t in = shape.in_features;
  const int64_t out = shape.out_features;
  if (batch <= 0 || in <= 0 || out <= 0) {
    throw std::invalid_argument("fully connected layer needs positive sizes, got batch " +
                                std::to_string(batch) + ", in " + std::to_string(in) + ", out " +
                                std::to_string(out));
  }
  // Row-major X [batch, in] is column-major in×batch (ld in); W [out, in] is
  // in×out (ld in); Y, dY [batch, out] are out×batch (ld out); dW is in×out.
  FcGemm g;
  switch (pass) {
    case FcPass::Forward:  // Yᵀ (out×N) = (W as in×out)ᵀ · (X as in×N)
      g.trans_a = true;
      g.trans_b = false;
      g.m = out;
      g.n = batch;
      g.k = in;
      g.a = {FcOperand::W, in, out, in};
      g.b = {FcOperand::X, in, batch, in};
      g.d = {FcOperand::Y, out, batch, out};
      break;
    case FcPass::BackwardData:  // dXᵀ (in×N) = (in×out) · (out×N)
      g.trans_a = false;
      g.trans_b = false;
      g.m = in;
      g.n = batch;
      g.k = out;
      g.a = {FcOperand::W, in, out, in};
      g.b = {FcOperand::Dy, out, batch, out};
      g.d = {FcOperand::Dx, in, batch, in};
      break;
    case FcPass::BackwardFilter:  // dWᵀ (in×out) = (in×N) · (out×N)ᵀ
      g.trans_a = false;
      g.trans_b = true;
      g.m = in;
      g.n = out;
      g.k = batch;
      g.a = {FcOperand::X, in, batch, in};
      g.b = {FcOperand::Dy, out, batch, out};
      g.d = {FcOperand::Dw, in, out, in};
      break;
  }
  return g;
}

std::string FcLayer::describe(FcPass pass) const {
  std::ostringstream s;
  const FcShape& sh = config_.shape;
  s << "fc " << to_string(pass) << " " << kernels::to_string(config_.precision)
    << " x[N=" << sh.batch << ",in=" << sh.in_features << "] w[out=" << sh.out_features
    << ",in=" << sh.in_features << "]" << (config_.bias ? " bias" : "");
  if (pass == FcPass::BackwardData) s << " beta " << config_.dgrad_beta;
  return s.str();
}

FcLayer::FcLayer(const DeviceContext& ctx, const FcConfig& config) : config_(config) {
  (void)fc_gemm(FcPass::Forward, config_.shape);  // validates the sizes
  if (config_.dgrad_beta != 0.0F && config_.dgrad_beta != 1.0F) {
    throw std::invalid_argument("dgrad_beta must be 0 or 1 for " + describe(FcPass::BackwardData));
  }
  if (config_.alignment <= 0 || (config_.alignment & (config_.alignment - 1)) != 0) {
    throw std::invalid_argument("alignment must be a power of two for " +
                                describe(FcPass::Forward));
  }
  const DType io = storage_dtype(config_.precision);
  if (config_.wgrad_dtype != DType::I32 && config_.wgrad_dtype != io &&
      !(config_.wgrad_dtype == DType::F32 && io != DType::F32)) {
    throw std::invalid_argument(std::string("wgrad_dtype ") + dtype_name(config_.wgrad_dtype) +
                                " is not the storage type " + dtype_name(io) + " or f32 for " +
                                describe(FcPass::BackwardFilter));
  }
  const ScopedDevice current(ctx.device);
  forward_ = make_plan(FcPass::Forward, ctx, config_, describe(FcPass::Forward), config_.bias);
  if (config_.training) {
    if (config_.compute_dgrad) {
      dgrad_ = make_plan(FcPass::BackwardData, ctx, config_, describe(FcPass::BackwardData), false);
    }
    const std::string wgrad = describe(FcPass::BackwardFilter);
    if (config_.bias && !config_.force_bias_grad_fallback) {
      try {
        wgrad_ = make_plan(FcPass::BackwardFilter, ctx, config_, wgrad, true);
        bias_grad_path_ = FcBiasGradPath::Bgradb;
      } catch (const BackendError&) {
        // No BGRADB algorithm for these types on this GPU: the plain GEMM and
        // our reduction below compute the same db.
      }
    }
    if (!wgrad_) {
      wgrad_ = make_plan(FcPass::BackwardFilter, ctx, config_, wgrad, false);
      bias_grad_path_ = config_.bias ? FcBiasGradPath::Fallback : FcBiasGradPath::None;
    }
  }
}

const char* to_string(FcBiasGradPath path) {
  switch (path) {
    case FcBiasGradPath::None: return "none";
    case FcBiasGradPath::Bgradb: return "BGRADB epilogue";
    case FcBiasGradPath::Fallback: return "separate reduction";
  }
  return "?";
}

FcLayer::~FcLayer() = default;
FcLayer::FcLayer(FcLayer&&) noexcept = default;
FcLayer& FcLayer::operator=(FcLayer&&) noexcept = default;

int64_t FcLayer::workspace_bytes() const {
  int64_t bytes = 0;
  for (const auto* p : {forward_.get(), dgrad_.get(), wgrad_.get()}) {
    if (p != nullptr) bytes = std::max(bytes, p->workspace_bytes);
  }
  if (bias_grad_path_ == FcBiasGradPath::Fallback) {
    // dy [N, out] row-major is an NHWC map of N pixels and `out` channels.
    bytes = std::max(bytes, conv_bias_backward_workspace_bytes(
                                DataFormat::NHWC, config_.shape.batch, config_.shape.out_features, 1));
  }
  return bytes;
}

cublasComputeType_t FcLayer::compute_type() const { return forward_->compute; }

void FcLayer::forward(const DeviceContext& ctx, const void* x, const void* w, const void* bias,
                      void* y) const {
  const std::string& c = forward_->context;
  require_aligned(x, config_.alignment, "x", c);
  require_aligned(w, config_.alignment, "w", c);
  require_aligned(y, config_.alignment, "y", c);
  if (config_.bias) require_aligned(bias, config_.alignment, "bias", c);
  // A = W, B = X, D = Y (fc_gemm).
  run_plan(*forward_, ctx, w, x, y, bias);
}

void FcLayer::backward_data(const DeviceContext& ctx, const void* dy, const void* w,
                            void* dx) const {
  if (!dgrad_)
    throw std::logic_error(describe(FcPass::BackwardData) + ": layer built without dgrad");
  const std::string& c = dgrad_->context;
  require_aligned(dy, config_.alignment, "dy", c);
  require_aligned(w, config_.alignment, "w", c);
  require_aligned(dx, config_.alignment, "dx", c);
  // A = W, B = dY, D = dX.
  run_plan(*dgrad_, ctx, w, dy, dx, nullptr);
}

void FcLayer::backward_filter(const DeviceContext& ctx, const void* x, const void* dy, void* dw,
                              void* db) const {
  if (!wgrad_)
    throw std::logic_error(describe(FcPass::BackwardFilter) + ": layer built without wgrad");
  const std::string& c = wgrad_->context;
  require_aligned(x, config_.alignment, "x", c);
  require_aligned(dy, config_.alignment, "dy", c);
  require_aligned(dw, config_.alignment, "dw", c);
  if (config_.bias) require_aligned(db, config_.alignment, "db", c);
  // A = X, B = dY, D = dW; BGRADB writes db.
  run_plan(*wgrad_, ctx, x, dy, dw, db);
  if (bias_grad_path_ == FcBiasGradPath::Fallback) {
    const DType io = storage_dtype(config_.precision);
    const DType db_type = config_.wgrad_dtype == DType::I32 ? io : config_.wgrad_dtype;
    const ScopedDevice current(ctx.device);
    // db[o] = Σ_n dy[n, o]: dy as an NHWC map of N pixels and `out` channels.
    launch_bias_backward(db, db_type, dy, io, DataFormat::NHWC, config_.shape.batch,
                         config_.shape.out_features, 1, ctx.workspace_ptr(), ctx.workspace_bytes(),
                         ctx.stream.get());
  }
}

}  // namespace cnnbench::kernels::cuda
