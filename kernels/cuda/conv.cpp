#include "kernels/cuda/conv.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/plan_cache.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::kernels::cuda {
namespace {

std::vector<int64_t> to_vector(const std::array<int64_t, 4>& a) { return {a.begin(), a.end()}; }

std::string format_float(float v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void require_aligned(const void* p, int64_t alignment, const char* what, const ConvConfig& config) {
  if (p == nullptr) {
    throw std::invalid_argument(std::string("null ") + what + " pointer for " + config.describe());
  }
  const auto addr = reinterpret_cast<uintptr_t>(p);
  if (alignment > 1 && addr % static_cast<uintptr_t>(alignment) != 0) {
    throw std::invalid_argument(std::string(what) + " pointer " + std::to_string(addr) +
                                " is not aligned to the " + std::to_string(alignment) +
                                " bytes promised to cuDNN for " + config.describe());
  }
}

// Byte for the throwaway autotune buffers: every element becomes a small finite
// number (fp16 0x2C2C ≈ 0.065; fp32 0x3C3C3C3C and bf16 0x3C3C ≈ 0.0115), so no
// engine meets NaN or Inf while it is timed.
int fill_byte(DType dtype) { return dtype == DType::F16 ? 0x2C : 0x3C; }

}  // namespace

// --------------------------------------------------------------------------
// Shapes and layouts.
// --------------------------------------------------------------------------

const char* to_string(ConvKind kind) {
  switch (kind) {
    case ConvKind::Fprop: return "fprop";
    case ConvKind::Dgrad: return "dgrad";
    case ConvKind::Wgrad: return "wgrad";
  }
  return "?";
}

int64_t conv_output_size(int64_t input, int64_t filter, int64_t pad_before, int64_t pad_after,
                         int64_t stride, int64_t dilation) {
  if (stride <= 0) return 0;
  const int64_t span = input + pad_before + pad_after - dilation * (filter - 1) - 1;
  if (span < 0) return 0;
  return span / stride + 1;
}

int64_t ConvShape::p() const { return conv_output_size(h, r, pad_h, pad_h, stride_h, dilation_h); }
int64_t ConvShape::q() const { return conv_output_size(w, s, pad_w, pad_w, stride_w, dilation_w); }

void ConvShape::validate() const {
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0) {
      throw std::invalid_argument(std::string("convolution ") + to_string() + ": " + name +
                                  " must be positive, got " + std::to_string(v));
    }
  };
  positive(n, "N");
  positive(c, "C");
  positive(h, "H");
  positive(w, "W");
  positive(k, "K");
  positive(r, "R");
  positive(s, "S");
  positive(stride_h, "stride_h");
  positive(stride_w, "stride_w");
  positive(dilation_h, "dilation_h");
  positive(dilation_w, "dilation_w");
  positive(groups, "groups");
  if (pad_h < 0 || pad_w < 0) {
    throw std::invalid_argument("convolution " + to_string() + ": padding must not be negative");
  }
  if (c % groups != 0 || k % groups != 0) {
    throw std::invalid_argument("convolution " + to_string() + ": groups " +
                                std::to_string(groups) + " must divide C " + std::to_string(c) +
                                " and K " + std::to_string(k));
  }
  if (p() <= 0 || q() <= 0) {
    throw std::invalid_argument("convolution " + to_string() +
                                ": the filter does not fit the padded input (empty output)");
  }
}

std::string ConvShape::to_string() const {
  std::ostringstream s_out;
  s_out << "x[N=" << n << ",C=" << c << ",H=" << h << ",W=" << w << "] w[K=" << k
        << ",C/g=" << c_per_group() << ",R=" << r << ",S=" << s << "] y[P=" << p() << ",Q=" << q()
        << "] stride " << stride_h << "x" << stride_w << " pad " << pad_h << "x" << pad_w << " dil "
        << dilation_h << "x" << dilation_w << " groups " << groups;
  return s_out.str();
}

ConvShape conv_shape(const models::Shape& input, const models::ConvAttrs& attrs,
                     int64_t padded_channels) {
  ConvShape shape;
  shape.n = input.n;
  shape.c = input.c;
  shape.h = input.h;
  shape.w = input.w;
  shape.k = attrs.out_channels;
  shape.r = attrs.kernel_h;
  shape.s = attrs.kernel_w;
  shape.stride_h = attrs.stride_h;
  shape.stride_w = attrs.stride_w;
  shape.pad_h = attrs.pad_h;
  shape.pad_w = attrs.pad_w;
  shape.groups = attrs.groups;
  if (padded_channels > input.c) {
    if (attrs.groups != 1) {
      throw std::invalid_argument("channel padding of a grouped convolution (groups " +
                                  std::to_string(attrs.groups) + ") is not supported");
    }
    shape.c = padded_channels;
  }
  shape.validate();
  return shape;
}

TensorLayout packed_layout(std::array<int64_t, 4> dims, DataFormat format) {
  TensorLayout l;
  l.dims = dims;
  const int64_t c = dims[1], h = dims[2], w = dims[3];
  if (format == DataFormat::NHWC) {
    l.strides = {h * w * c, 1, w * c, c};
  } else {
    l.strides = {c * h * w, h * w, w, 1};
  }
  return l;
}

TensorLayout conv_x_layout(const ConvShape& shape, DataFormat format) {
  return packed_layout({shape.n, shape.c, shape.h, shape.w}, format);
}

TensorLayout conv_w_layout(const ConvShape& shape, DataFormat format) {
  return packed_layout({shape.k, shape.c_per_group(), shape.r, shape.s}, format);
}

TensorLayout conv_y_layout(const ConvShape& shape, DataFormat format) {
  return packed_layout({shape.n, shape.k, shape.p(), shape.q()}, format);
}

DType storage_dtype(Precision precision) {
  switch (precision) {
    case Precision::Fp32:
    case Precision::Tf32: return DType::F32;
    case Precision::Fp16: return DType::F16;
    case Precision::Bf16: return DType::BF16;
  }
  return DType::F32;
}

cudnnDataType_t to_cudnn(DType dtype) {
  switch (dtype) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    case DType::I32: return CUDNN_DATA_INT32;
  }
  return CUDNN_DATA_FLOAT;
}

// --------------------------------------------------------------------------
// ConvConfig.
// --------------------------------------------------------------------------

EngineFilter ConvConfig::engine_filter() const {
  EngineFilter f;
  // Engines that convert the inputs to a narrower type are never wanted (the
  // rule PyTorch's cuDNN v8 convolutions apply to every dtype).
  f.allow_down_convert_inputs = false;
  // FLOAT-compute fp32 convolutions on TENSOR_CORE engines run in TF32 on
  // sm80+ (CUDNN.md §3): strict fp32 drops them, tf32 keeps them.
  f.allow_tensor_core = precision != Precision::Fp32;
  // Split-K partial sums in fp16/bf16 are accepted as PyTorch accepts them;
  // the tests' fp16/bf16 tolerances cover them.
  f.allow_reduced_precision_reduction = true;
  f.allow_nondeterministic = !deterministic;
  return f;
}

std::string ConvConfig::describe() const {
  return std::string("conv ") + to_string(kind) + " " + kernels::to_string(format) + " " +
         kernels::to_string(precision) + " " + shape.to_string() + " align " +
         std::to_string(alignment) + " alpha " + format_float(alpha) + " beta " +
         format_float(beta) + (deterministic ? " deterministic" : "");
}

ConvDescriptors make_conv_descriptors(const ConvConfig& cfg) {
  cfg.shape.validate();
  const std::string context = cfg.describe();
  const cudnnDataType_t io = to_cudnn(storage_dtype(cfg.precision));
  const TensorLayout xl = conv_x_layout(cfg.shape, cfg.format);
  const TensorLayout wl = conv_w_layout(cfg.shape, cfg.format);
  const TensorLayout yl = conv_y_layout(cfg.shape, cfg.format);
  TensorSpec xs;
  xs.name = cfg.kind == ConvKind::Dgrad ? "dx" : "x";
  xs.uid = ConvPlan::kUidX;
  xs.data_type = io;
  xs.dims = to_vector(xl.dims);
  xs.strides = to_vector(xl.strides);
  xs.byte_alignment = cfg.alignment;
  TensorSpec ws = xs;
  ws.name = cfg.kind == ConvKind::Wgrad ? "dw" : "w";
  ws.uid = ConvPlan::kUidW;
  ws.dims = to_vector(wl.dims);
  ws.strides = to_vector(wl.strides);
  TensorSpec ys = xs;
  ys.name = cfg.kind == ConvKind::Fprop ? "y" : "dy";
  ys.uid = ConvPlan::kUidY;
  ys.dims = to_vector(yl.dims);
  ys.strides = to_vector(yl.strides);

  ConvolutionSpec cs;
  cs.compute_type = CUDNN_DATA_FLOAT;  // FLOAT accumulation for every precision (CUDNN.md §2)
  cs.pre_paddings = {cfg.shape.pad_h, cfg.shape.pad_w};
  cs.post_paddings = {cfg.shape.pad_h, cfg.shape.pad_w};
  cs.strides = {cfg.shape.stride_h, cfg.shape.stride_w};
  cs.dilations = {cfg.shape.dilation_h, cfg.shape.dilation_w};

  BackendDescriptor x = make_tensor(xs, context);
  BackendDescriptor w = make_tensor(ws, context);
  BackendDescriptor y = make_tensor(ys, context);
  BackendDescriptor conv = make_convolution(cs, context);
  ConvDescriptors d;
  switch (cfg.kind) {
    case ConvKind::Fprop:
      d.operation = make_conv_forward(x, w, y, conv, cfg.alpha, cfg.beta, context);
      break;
    case ConvKind::Dgrad:
      d.operation = make_conv_backward_data(x, w, y, conv, cfg.alpha, cfg.beta, context);
      break;
    case ConvKind::Wgrad:
      d.operation = make_conv_backward_filter(w, x, y, conv, cfg.alpha, cfg.beta, context);
      break;
  }
  d.tensors_and_conv.push_back(std::move(x));
  d.tensors_and_conv.push_back(std::move(w));
  d.tensors_and_conv.push_back(std::move(y));
  d.tensors_and_conv.push_back(std::move(conv));
  return d;
}

// --------------------------------------------------------------------------
// ConvPlan.
// --------------------------------------------------------------------------

ConvPlan::ConvPlan(const DeviceContext& ctx, const ConvConfig& config,
                   const ConvBuildOptions& options, const EngineChoice* preferred)
    : config_(config) {
  config_.shape.validate();
  if (config_.alignment <= 0 || (config_.alignment & (config_.alignment - 1)) != 0) {
    throw std::invalid_argument("alignment must be a power of two, got " +
                                std::to_string(config_.alignment) + " for " + config_.describe());
  }
  const ScopedDevice current(ctx.device);
  ConvDescriptors descriptors = make_conv_descriptors(config_);
  std::vector<BackendDescriptor> ops;
  ops.push_back(std::move(descriptors.operation));
  auto graph = std::make_shared<const OperationGraph>(
      ctx.cudnn.get(), std::move(descriptors.tensors_and_conv), std::move(ops), config_.describe());
  const EngineFilter filter = config_.engine_filter();

  if (preferred != nullptr && preferred->global_index >= 0) {
    try {
      PlanAttempt attempt =
          ExecutionPlan::try_build(ctx.cudnn.get(), graph, make_engine_config(*graph, *preferred));
      if (attempt.plan && filter.reject_reason(attempt.plan->engine()).empty() &&
          attempt.plan->workspace_bytes() <= options.max_workspace_bytes) {
        plan_.emplace(std::move(*attempt.plan));
        from_preferred_ = true;
        return;
      }
    } catch (const BackendError&) {
      // A choice from another cuDNN build or GPU may not fit: search instead.
    }
  }

  PlanSearchOptions search;
  search.filter = filter;
  search.mode = options.heuristic_mode;
  search.use_fallback = true;
  search.defer_runtime_compilation = !options.runtime_compiled_engines;
  search.max_plans = options.autotune ? std::max(1, options.max_candidates) : 1;
  search.max_workspace_bytes = options.max_workspace_bytes;
  search.cudnn_version = ctx.cudnn_version;
  std::vector<ExecutionPlan> plans = find_plans(ctx.cudnn.get(), graph, search);
  candidates_ = static_cast<int>(plans.size());
  size_t chosen = 0;
  if (options.autotune && plans.size() > 1) {
    const auto tune_start = std::chrono::steady_clock::now();
    // Throwaway buffers: outputs are overwritten (and read when beta != 0), so
    // live tensors must never be used for timing (CUDNN.md §3).
    const DType dtype = storage_dtype(config_.precision);
    const int64_t esize = dtype_size(dtype);
    int64_t workspace = 0;
    for (const auto& p : plans) workspace = std::max(workspace, p.workspace_bytes());
    const std::string what = "autotune buffers of " + config_.describe();
    DeviceBuffer x(conv_x_layout(config_.shape, config_.format).elements() * esize, what);
    DeviceBuffer w(conv_w_layout(config_.shape, config_.format).elements() * esize, what);
    DeviceBuffer y(conv_y_layout(config_.shape, config_.format).elements() * esize, what);
    DeviceBuffer ws(workspace, what);
    const cudaStream_t stream = ctx.stream.get();
    CNNBENCH_CHECK_CUDA(
        cudaMemsetAsync(x.get(), fill_byte(dtype), static_cast<size_t>(x.bytes()), stream));
    CNNBENCH_CHECK_CUDA(
        cudaMemsetAsync(w.get(), fill_byte(dtype), static_cast<size_t>(w.bytes()), stream));
    CNNBENCH_CHECK_CUDA(
        cudaMemsetAsync(y.get(), fill_byte(dtype), static_cast<size_t>(y.bytes()), stream));
    const std::array<int64_t, 3> uids{kUidX, kUidW, kUidY};
    const std::array<void*, 3> ptrs{x.get(), w.get(), y.get()};
    std::vector<float> times;
    chosen = autotune_plans(ctx.cudnn.get(), stream, plans, uids, ptrs, ws.get(),
                            options.timing_iterations, &times);
    autotuned_ms_ = times[chosen];
    ctx.stream.synchronize();  // the buffers are freed next
    autotune_s_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - tune_start).count();
  }
  plan_.emplace(std::move(plans[chosen]));
}

VariantPack ConvPlan::make_pack(const DeviceContext& ctx, const void* x, const void* w,
                               const void* y) const {
  const ConvKind kind = config_.kind;
  require_aligned(x, config_.alignment, kind == ConvKind::Dgrad ? "dx" : "x", config_);
  require_aligned(w, config_.alignment, kind == ConvKind::Wgrad ? "dw" : "w", config_);
  require_aligned(y, config_.alignment, kind == ConvKind::Fprop ? "y" : "dy", config_);
  if (ctx.workspace_bytes() < plan_->workspace_bytes()) {
    throw BackendError("workspace of device " + std::to_string(ctx.device) + " has " +
                       std::to_string(ctx.workspace_bytes()) + " bytes but " + config_.describe() +
                       " (engine " + plan_->engine().choice.to_string() + ") needs " +
                       std::to_string(plan_->workspace_bytes()) +
                       ": call DeviceContext::reserve_workspace at set-up");
  }
  const std::array<int64_t, 3> uids{kUidX, kUidW, kUidY};
  // cuDNN's variant pack takes void*; inputs are only read.
  const std::array<void*, 3> ptrs{const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  return VariantPack(uids, ptrs, ctx.workspace_ptr(), config_.describe());
}

void ConvPlan::run(const DeviceContext& ctx, ConvKind kind, const void* x, const void* w,
                   const void* y) const {
  if (kind != config_.kind) {
    throw std::logic_error(std::string("ConvPlan::") + to_string(kind) +
                           " called on the plan for " + config_.describe());
  }
  const ScopedDevice current(ctx.device);  // a no-op when the thread is already on it
  plan_->execute(ctx.cudnn.get(), make_pack(ctx, x, w, y));
}

void ConvPlan::run_bound(const DeviceContext& ctx, BoundPack& bound, const void* x, const void* w,
                         const void* y) const {
  const std::array<const void*, 4> pointers{x, w, y, ctx.workspace_ptr()};
  if (!bound.pack || bound.pointers != pointers) {
    bound.pack.reset();
    bound.pack.emplace(make_pack(ctx, x, w, y));
    bound.pointers = pointers;
  }
  const ScopedDevice current(ctx.device);  // a no-op when the thread is already on it
  plan_->execute(ctx.cudnn.get(), *bound.pack);
}

void ConvPlan::fprop(const DeviceContext& ctx, const void* x, const void* w, void* y) const {
  run(ctx, ConvKind::Fprop, x, w, y);
}

void ConvPlan::dgrad(const DeviceContext& ctx, const void* dy, const void* w, void* dx) const {
  run(ctx, ConvKind::Dgrad, dx, w, dy);
}

void ConvPlan::wgrad(const DeviceContext& ctx, const void* x, const void* dy, void* dw) const {
  run(ctx, ConvKind::Wgrad, x, dw, dy);
}

// --------------------------------------------------------------------------
// ConvLayer.
// --------------------------------------------------------------------------

ConvLayer::ConvLayer(PlanCache& cache, const DeviceContext& ctx, const ConvLayerConfig& config,
                     const ConvBuildOptions& options)
    : config_(config) {
  if (config_.dgrad_beta != 0.0F && config_.dgrad_beta != 1.0F) {
    throw std::invalid_argument("dgrad_beta must be 0 or 1, got " +
                                format_float(config_.dgrad_beta));
  }
  ConvConfig base;
  base.shape = config_.shape;
  base.precision = config_.precision;
  base.format = config_.format;
  base.alignment = config_.alignment;
  base.deterministic = config_.deterministic;

  ConvConfig f = base;
  f.kind = ConvKind::Fprop;
  fprop_ = cache.conv_plan(ctx, f, options);
  if (config_.training) {
    if (config_.compute_dgrad) {
      ConvConfig d = base;
      d.kind = ConvKind::Dgrad;
      d.beta = config_.dgrad_beta;
      dgrad_ = cache.conv_plan(ctx, d, options);
    }
    ConvConfig w = base;
    w.kind = ConvKind::Wgrad;
    wgrad_ = cache.conv_plan(ctx, w, options);
  }
}

bool ConvLayer::has_plan(ConvKind kind) const {
  switch (kind) {
    case ConvKind::Fprop: return fprop_ != nullptr;
    case ConvKind::Dgrad: return dgrad_ != nullptr;
    case ConvKind::Wgrad: return wgrad_ != nullptr;
  }
  return false;
}

const ConvPlan& ConvLayer::plan(ConvKind kind) const {
  const ConvPlan* p = kind == ConvKind::Fprop   ? fprop_.get()
                      : kind == ConvKind::Dgrad ? dgrad_.get()
                                                : wgrad_.get();
  if (p == nullptr) {
    throw std::logic_error(std::string("conv layer ") + config_.shape.to_string() + " has no " +
                           to_string(kind) + " plan (training " +
                           (config_.training ? "on" : "off") + ", dgrad " +
                           (config_.compute_dgrad ? "on" : "off") + ")");
  }
  return *p;
}

int64_t ConvLayer::workspace_bytes() const {
  int64_t bytes = 0;
  for (const auto* p : {fprop_.get(), dgrad_.get(), wgrad_.get()}) {
    if (p != nullptr) bytes = std::max(bytes, p->workspace_bytes());
  }
  if (config_.bias && config_.training) {
    bytes = std::max(
        bytes, conv_bias_backward_workspace_bytes(config_.format, config_.shape.n, config_.shape.k,
                                                  config_.shape.p() * config_.shape.q()));
  }
  return bytes;
}

void ConvLayer::forward(const DeviceContext& ctx, const void* x, const void* w, const void* bias,
                        void* y) const {
  plan(ConvKind::Fprop).run_bound(ctx, fprop_pack_, x, w, y);
  if (config_.bias) {
    if (bias == nullptr) {
      throw std::invalid_argument("conv layer " + config_.shape.to_string() +
                                  " has a bias but forward got a null bias pointer");
    }
    const ScopedDevice current(ctx.device);
    launch_conv_bias_forward(y, bias, storage_dtype(config_.precision), config_.format,
                             config_.shape.n, config_.shape.k,
                             config_.shape.p() * config_.shape.q(), ctx.stream.get());
  }
}

void ConvLayer::backward_data(const DeviceContext& ctx, const void* dy, const void* w,
                              void* dx) const {
  plan(ConvKind::Dgrad).run_bound(ctx, dgrad_pack_, dx, w, dy);
}

void ConvLayer::backward_filter(const DeviceContext& ctx, const void* x, const void* dy,
                                void* dw) const {
  plan(ConvKind::Wgrad).run_bound(ctx, wgrad_pack_, x, dw, dy);
}

void ConvLayer::backward_bias(const DeviceContext& ctx, const void* dy, void* db) const {
  if (!config_.bias) {
    throw std::logic_error("backward_bias on conv layer " + config_.shape.to_string() +
                           " without a bias");
  }
  if (dy == nullptr || db == nullptr) {
    throw std::invalid_argument("backward_bias of conv layer " + config_.shape.to_string() +
                                ": null dy or db");
  }
  const ScopedDevice current(ctx.device);
  launch_conv_bias_backward(db, dy, storage_dtype(config_.precision), config_.format,
                            config_.shape.n, config_.shape.k, config_.shape.p() * config_.shape.q(),
                            ctx.workspace_ptr(), ctx.workspace_bytes(), ctx.stream.get());
}

}  // namespace cnnbench::kernels::cuda
