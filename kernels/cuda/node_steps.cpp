// The executable's steps, one class per op family (node_steps.h). Longer than
// most files on purpose: the classes share the gradient-target helpers at the
// top and are small each; the layer maths lives in conv/fc/batchnorm/pool/loss.
#include "kernels/cuda/node_steps.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/activation.cuh"
#include "kernels/cuda/batchnorm.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/fc.h"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/plan_cache.h"
#include "kernels/cuda/pool.cuh"
#include "kernels/cuda/resources.h"

namespace cnnbench::kernels::cuda {
namespace {

using models::Node;
using models::NodeId;
using models::OpKind;
using models::Shape;

std::string shape_text(const Shape& s) {
  return "[N=" + std::to_string(s.n) + ",C=" + std::to_string(s.c) + ",H=" + std::to_string(s.h) +
         ",W=" + std::to_string(s.w) + "]";
}

void copy_async(void* dst, const void* src, int64_t bytes, cudaStream_t stream) {
  if (dst == src || bytes == 0) return;
  CNNBENCH_CHECK_CUDA(
      cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream));
}

/// dst += src, both `count` elements of the storage type.
void accumulate(void* dst, const void* src, int64_t count, DType dtype, cudaStream_t stream) {
  with_storage_type(dtype, [&]<typename T>() {
    const std::array<const T*, 2> in{static_cast<const T*>(dst), static_cast<const T*>(src)};
    add<T>(in, static_cast<T*>(dst), count, stream);
  });
}

}  // namespace

// ---------------------------------------------------------------------------
// NodeStep.
// ---------------------------------------------------------------------------

NodeStep::NodeStep(const StepSetup& setup)
    : res_(setup.res),
      graph_(setup.graph),
      members_(setup.members),
      inputs_(setup.inputs),
      tensors_(setup.tensors),
      params_(setup.params),
      input_grads_(setup.input_grads),
      input_scratch_(setup.input_scratch),
      training_(setup.training),
      runs_backward_(setup.runs_backward) {
  if (members_.empty()) throw std::logic_error("a step needs at least one node");
  input_grads_.resize(inputs_.size());
  input_scratch_.resize(inputs_.size(), nullptr);
}

const Node& NodeStep::node() const { return graph_->node(output_id()); }

const Shape& NodeStep::input_shape(size_t k) const { return graph_->node(inputs_.at(k)).output; }

const Shape& NodeStep::output_shape() const { return node().output; }

const void* NodeStep::input(size_t k) const {
  return tensors_->value[static_cast<size_t>(inputs_.at(k))];
}

void* NodeStep::output() const { return tensors_->value[static_cast<size_t>(output_id())]; }

const void* NodeStep::output_grad() const {
  return tensors_->grad[static_cast<size_t>(output_id())];
}

void* NodeStep::grad_dest(size_t k) const {
  const GradTarget& t = input_grads_[k];
  if (t.data != nullptr && !t.accumulate) return t.data;
  return input_scratch_[k];
}

void NodeStep::finish_grad(size_t k, int64_t elements) const {
  const GradTarget& t = input_grads_[k];
  if (t.data == nullptr || !t.accumulate) return;
  if (input_scratch_[k] == nullptr) {
    throw std::logic_error(describe() + ": accumulated gradient of input " + std::to_string(k) +
                           " has no scratch region");
  }
  accumulate(t.data, input_scratch_[k], elements, res_->dtype, stream());
}

std::string NodeStep::describe() const {
  std::string ops;
  for (const NodeId m : members_) {
    if (!ops.empty()) ops += "+";
    ops += models::op_name(graph_->node(m).op());
  }
  return ops + " '" + graph_->node(members_.front()).name + "' " + shape_text(output_shape());
}

bool step_needs_grad_scratch(OpKind op, size_t k, bool needed, bool accumulate,
                             bool fc_flattens_input) {
  const bool adds = needed && accumulate;
  switch (op) {
    case OpKind::Conv2d:
    case OpKind::Add:
    case OpKind::SoftmaxCrossEntropy:
      return false;
    case OpKind::FullyConnected:
      return adds && fc_flattens_input;
    case OpKind::BatchNorm:
      // dx is always written (dgamma and dbeta come with it); dz only when needed.
      return adds || (k == 0 && !needed);
    case OpKind::Concat:
      // One call writes every slice.
      return adds || !needed;
    default:
      return adds;
  }
}

namespace {

const Node& node_of(const StepSetup& s, size_t member = 0) {
  return s.graph->node(s.members.at(member));
}
const Shape& in_shape(const StepSetup& s, size_t k = 0) {
  return s.graph->node(s.inputs.at(k)).output;
}

// ---------------------------------------------------------------------------
// Convolution (cuDNN graph API plans through the PlanCache).
// ---------------------------------------------------------------------------

class ConvStep final : public NodeStep {
 public:
  ConvStep(const StepSetup& s, const models::ConvAttrs& a)
      : NodeStep(s), layer_(make_layer(s, a)) {}

  void forward(const PassState&) override {
    layer_.forward(ctx(), input(), params_.weight, params_.bias, output());
  }
  void backward() override {
    const void* dy = output_grad();
    if (layer_.config().compute_dgrad) {
      // dgrad_beta = 1 was baked into the plan when the gradient accumulates.
      layer_.backward_data(ctx(), dy, params_.weight, input_grads_[0].data);
    }
    layer_.backward_filter(ctx(), input(), dy, params_.weight_grad);
    if (layer_.config().bias) layer_.backward_bias(ctx(), dy, params_.bias_grad);
  }
  [[nodiscard]] int64_t workspace_bytes() const override { return layer_.workspace_bytes(); }

 private:
  static ConvLayer make_layer(const StepSetup& s, const models::ConvAttrs& a) {
    ConvLayerConfig cfg;
    cfg.shape = conv_shape(in_shape(s), a, s.padded_input_channels);
    cfg.precision = s.res->precision;
    cfg.format = s.res->format;
    cfg.alignment = 16;  // every buffer is 256-byte aligned (cudaMalloc or our 256-byte slots)
    cfg.bias = a.bias;
    cfg.training = s.runs_backward;
    cfg.compute_dgrad =
        s.runs_backward && !s.input_grads.empty() && s.input_grads[0].data != nullptr;
    cfg.dgrad_beta = cfg.compute_dgrad && s.input_grads[0].accumulate ? 1.0F : 0.0F;
    return ConvLayer(*s.res->plans, *s.res->ctx, cfg, s.res->conv_build);
  }

  ConvLayer layer_;
};

// ---------------------------------------------------------------------------
// Fully connected (cuBLASLt). In NHWC, an input map with H·W > 1 is flattened
// into PyTorch's C·H·W order first (a private buffer), as torch.flatten would.
// ---------------------------------------------------------------------------

class FcStep final : public NodeStep {
 public:
  FcStep(const StepSetup& s, const models::FullyConnectedAttrs& a)
      : NodeStep(s),
        flatten_(s.res->format == DataFormat::NHWC && int64_t{in_shape(s).h} * in_shape(s).w > 1),
        layer_(*s.res->ctx, make_config(s, a, flatten_)) {
    const Shape& in = input_shape();
    if (flatten_) {
      const int64_t bytes = in.elements() * dtype_size(res_->dtype);
      flat_ = DeviceBuffer(bytes, "flattened input of fc '" + node().name + "'");
      if (layer_.config().compute_dgrad) {
        flat_grad_ = DeviceBuffer(bytes, "flattened input gradient of fc '" + node().name + "'");
      }
    }
  }

  void forward(const PassState&) override {
    const Shape& in = input_shape();
    const void* x = input();
    if (flatten_) {
      with_storage_type(res_->dtype, [&]<typename T>() {
        flatten_nhwc<T>(static_cast<const T*>(x), flat_.as<T>(), in.n, in.c, in.h, in.w, stream());
      });
      x = flat_.get();
    }
    layer_.forward(ctx(), x, params_.weight, params_.bias, output());
  }

  void backward() override {
    const Shape& in = input_shape();
    const void* dy = output_grad();
    if (layer_.config().compute_dgrad) {
      if (flatten_) {
        layer_.backward_data(ctx(), dy, params_.weight, flat_grad_.get());
        with_storage_type(res_->dtype, [&]<typename T>() {
          flatten_nhwc_backward<T>(flat_grad_.as<T>(), static_cast<T*>(grad_dest(0)), in.n, in.c,
                                   in.h, in.w, stream());
        });
        finish_grad(0, in.elements());
      } else {
        layer_.backward_data(ctx(), dy, params_.weight, input_grads_[0].data);
      }
    }
    const void* x = flatten_ ? flat_.get() : input();
    layer_.backward_filter(ctx(), x, dy, params_.weight_grad, params_.bias_grad);
  }

  [[nodiscard]] int64_t saved_bytes() const override { return flat_.bytes() + flat_grad_.bytes(); }
  [[nodiscard]] int64_t workspace_bytes() const override { return layer_.workspace_bytes(); }
  [[nodiscard]] std::string setup_note() const override {
    switch (layer_.bias_grad_path()) {
      case FcBiasGradPath::None: return {};
      case FcBiasGradPath::Bgradb:
        return "fc '" + node().name + "': bias gradient fused into the weight-gradient GEMM "
               "(cuBLASLt BGRADB epilogue)";
      case FcBiasGradPath::Fallback:
        return "fc '" + node().name + "': bias gradient by a separate reduction (cuBLASLt has "
               "no BGRADB algorithm for these types on this GPU)";
    }
    return {};
  }

 private:
  static FcConfig make_config(const StepSetup& s, const models::FullyConnectedAttrs& a,
                              bool flatten) {
    const Shape& in = in_shape(s);
    FcConfig cfg;
    cfg.shape =
        FcShape{.batch = in.n, .in_features = in.per_image(), .out_features = a.out_features};
    cfg.precision = s.res->precision;
    cfg.bias = a.bias;
    cfg.training = s.runs_backward;
    cfg.compute_dgrad =
        s.runs_backward && !s.input_grads.empty() && s.input_grads[0].data != nullptr;
    // Through the private flat gradient the layer always overwrites; the
    // flatten backward then accumulates through scratch when needed.
    cfg.dgrad_beta = cfg.compute_dgrad && !flatten && s.input_grads[0].accumulate ? 1.0F : 0.0F;
    cfg.wgrad_dtype = DType::F32;  // dW and db straight into (or beside) the fp32 flat buffer
    cfg.alignment = 16;
    return cfg;
  }

  bool flatten_;
  FcLayer layer_;
  DeviceBuffer flat_;       // (N, C·H·W) storage type
  DeviceBuffer flat_grad_;  // (N, C·H·W) storage type
};

// ---------------------------------------------------------------------------
// BatchNorm, alone or fused with the residual add and/or ReLU after it.
// ---------------------------------------------------------------------------

class BatchNormStep final : public NodeStep {
 public:
  BatchNormStep(const StepSetup& s, const models::BatchNormAttrs& a)
      : NodeStep(s), attrs_(a), fusion_(s.fusion) {
    const int64_t c = in_shape(s).c;
    if (training_) {
      save_mean_ = DeviceBuffer(c * 4, "saved mean of batchnorm '" + node_of(s).name + "'");
      save_invstd_ =
          DeviceBuffer(c * 4, "saved inverse std of batchnorm '" + node_of(s).name + "'");
    }
    if (fusion_.add >= 0 && in_shape(s, 1) != in_shape(s, 0)) {
      throw std::invalid_argument(describe() + ": the fused residual input has shape " +
                                  shape_text(in_shape(s, 1)) + ", the batchnorm " +
                                  shape_text(in_shape(s, 0)));
    }
  }

  void forward(const PassState& state) override {
    const Shape& shape = input_shape();
    const bool relu = fusion_.relu >= 0;
    const void* z = fusion_.add >= 0 ? input(1) : nullptr;
    const auto* gamma = static_cast<const float*>(params_.weight);
    const auto* beta = static_cast<const float*>(params_.bias);
    with_storage_type(res_->dtype, [&]<typename T>() {
      if (state.training) {
        batchnorm_forward_training<T>(
            static_cast<const T*>(input()), static_cast<const T*>(z), static_cast<T*>(output()),
            gamma, beta, params_.running_mean, params_.running_var, save_mean_.as<float>(),
            save_invstd_.as<float>(), res_->bn_scratch, res_->bn_scratch_bytes, shape, res_->format,
            attrs_, relu, stream());
      } else {
        batchnorm_forward_inference<T>(static_cast<const T*>(input()), static_cast<const T*>(z),
                                       static_cast<T*>(output()), gamma, beta, params_.running_mean,
                                       params_.running_var, shape, res_->format, attrs_, relu,
                                       stream());
      }
    });
  }

  void backward() override {
    const Shape& shape = input_shape();
    const bool relu = fusion_.relu >= 0;
    void* dx = grad_dest(0);  // always written: a scratch region when x needs no gradient
    void* dz = fusion_.add >= 0 && input_needs_grad(1) ? grad_dest(1) : nullptr;
    with_storage_type(res_->dtype, [&]<typename T>() {
      batchnorm_backward<T>(
          static_cast<const T*>(input()), relu ? static_cast<const T*>(output()) : nullptr,
          static_cast<const T*>(output_grad()), static_cast<T*>(dx), static_cast<T*>(dz),
          static_cast<const float*>(params_.weight), save_mean_.as<float>(),
          save_invstd_.as<float>(), static_cast<float*>(params_.weight_grad),
          static_cast<float*>(params_.bias_grad), res_->bn_scratch, res_->bn_scratch_bytes, shape,
          res_->format, relu, stream());
    });
    finish_grad(0, shape.elements());
    if (dz != nullptr) finish_grad(1, shape.elements());
  }

  [[nodiscard]] int64_t saved_bytes() const override {
    return save_mean_.bytes() + save_invstd_.bytes();
  }

 private:
  models::BatchNormAttrs attrs_;
  BatchNormFusion fusion_;
  DeviceBuffer save_mean_;    // (C) fp32
  DeviceBuffer save_invstd_;  // (C) fp32
};

// ---------------------------------------------------------------------------
// Element-wise and data movement.
// ---------------------------------------------------------------------------

class ActivationStep final : public NodeStep {
 public:
  ActivationStep(const StepSetup& s, const models::ActivationAttrs& a)
      : NodeStep(s), kind_(a.kind) {}
  void forward(const PassState&) override {
    with_storage_type(res_->dtype, [&]<typename T>() {
      activation_forward<T>(static_cast<const T*>(input()), static_cast<T*>(output()),
                            output_shape().elements(), kind_, stream());
    });
  }
  void backward() override {
    if (!input_needs_grad(0)) return;
    with_storage_type(res_->dtype, [&]<typename T>() {
      activation_backward<T>(static_cast<const T*>(output()), static_cast<const T*>(output_grad()),
                             static_cast<T*>(grad_dest(0)), output_shape().elements(), kind_,
                             stream());
    });
    finish_grad(0, output_shape().elements());
  }

 private:
  models::ActivationAttrs::Kind kind_;
};

class PoolStep final : public NodeStep {
 public:
  PoolStep(const StepSetup& s, const models::PoolAttrs& a) : NodeStep(s), attrs_(a) {
    const Shape expected = pool_output_shape(in_shape(s), a);
    if (expected != output_shape()) {
      throw std::invalid_argument(describe() + ": the pooling kernels give " +
                                  shape_text(expected) + " for input " + shape_text(in_shape(s)));
    }
    if (training_ && a.kind == models::PoolAttrs::Kind::Max) {
      argmax_ = DeviceBuffer(output_shape().elements(), "max-pool argmax of '" + node().name + "'");
    }
  }
  void forward(const PassState& state) override {
    with_storage_type(res_->dtype, [&]<typename T>() {
      const auto* x = static_cast<const T*>(input());
      auto* y = static_cast<T*>(output());
      if (attrs_.kind == models::PoolAttrs::Kind::Max) {
        maxpool_forward<T>(x, y, state.training ? argmax_.as<uint8_t>() : nullptr, input_shape(),
                           attrs_, res_->format, stream());
      } else {
        avgpool_forward<T>(x, y, input_shape(), attrs_, res_->format, stream());
      }
    });
  }
  void backward() override {
    if (!input_needs_grad(0)) return;
    with_storage_type(res_->dtype, [&]<typename T>() {
      const auto* dy = static_cast<const T*>(output_grad());
      auto* dx = static_cast<T*>(grad_dest(0));
      if (attrs_.kind == models::PoolAttrs::Kind::Max) {
        maxpool_backward<T>(dy, argmax_.as<uint8_t>(), dx, input_shape(), attrs_, res_->format,
                            stream());
      } else {
        avgpool_backward<T>(dy, dx, input_shape(), attrs_, res_->format, stream());
      }
    });
    finish_grad(0, input_shape().elements());
  }
  [[nodiscard]] int64_t saved_bytes() const override { return argmax_.bytes(); }

 private:
  models::PoolAttrs attrs_;
  DeviceBuffer argmax_;  // (N, OH, OW, C) or (N, C, OH, OW) uint8
};

class AdaptiveAvgPoolStep final : public NodeStep {
 public:
  AdaptiveAvgPoolStep(const StepSetup& s, const models::AdaptiveAvgPoolAttrs& a)
      : NodeStep(s), attrs_(a) {}
  void forward(const PassState&) override {
    with_storage_type(res_->dtype, [&]<typename T>() {
      adaptive_avgpool_forward<T>(static_cast<const T*>(input()), static_cast<T*>(output()),
                                  input_shape(), attrs_, res_->format, stream());
    });
  }
  void backward() override {
    if (!input_needs_grad(0)) return;
    with_storage_type(res_->dtype, [&]<typename T>() {
      adaptive_avgpool_backward<T>(static_cast<const T*>(output_grad()),
                                   static_cast<T*>(grad_dest(0)), input_shape(), attrs_,
                                   res_->format, stream());
    });
    finish_grad(0, input_shape().elements());
  }

 private:
  models::AdaptiveAvgPoolAttrs attrs_;
};

class DropoutStep final : public NodeStep {
 public:
  DropoutStep(const StepSetup& s, const models::DropoutAttrs& a) : NodeStep(s) {
    mask_.p = a.p;
    mask_.seed = s.res->seed;
    mask_.layer_id = static_cast<uint32_t>(output_id());
    mask_.step = s.res->dropout_step;
  }
  void forward(const PassState& state) override {
    const int64_t count = output_shape().elements();
    if (!state.training) {  // identity in inference
      copy_async(output(), input(), count * dtype_size(res_->dtype), stream());
      return;
    }
    with_storage_type(res_->dtype, [&]<typename T>() {
      dropout_forward<T>(static_cast<const T*>(input()), static_cast<T*>(output()), count, mask_,
                         stream());
    });
  }
  void backward() override {
    if (!input_needs_grad(0)) return;
    const int64_t count = output_shape().elements();
    with_storage_type(res_->dtype, [&]<typename T>() {
      dropout_backward<T>(static_cast<const T*>(output_grad()), static_cast<T*>(grad_dest(0)),
                          count, mask_, stream());
    });
    finish_grad(0, count);
  }

 private:
  DropoutMask mask_;
};

/// Typed on the storage type so that the pointer arrays the kernels take are
/// sized at set-up: a step allocates nothing on the host.
template <typename T>
class AddStep final : public NodeStep {
 public:
  explicit AddStep(const StepSetup& s) : NodeStep(s), srcs_(s.inputs.size()) {}
  void forward(const PassState&) override {
    for (size_t k = 0; k < srcs_.size(); ++k) srcs_[k] = static_cast<const T*>(input(k));
    add<T>(srcs_, static_cast<T*>(output()), output_shape().elements(), stream());
  }
  void backward() override {
    // Each input's gradient is dy: copied when it is the first, added otherwise.
    const int64_t count = output_shape().elements();
    for (size_t k = 0; k < inputs_.size(); ++k) {
      const GradTarget& t = input_grads_[k];
      if (t.data == nullptr) continue;
      if (t.accumulate) {
        accumulate(t.data, output_grad(), count, res_->dtype, stream());
      } else {
        copy_async(t.data, output_grad(), count * dtype_size(res_->dtype), stream());
      }
    }
  }

 private:
  std::vector<const T*> srcs_;  // per input, refreshed each pass (the images move)
};

/// Typed for the same reason as AddStep.
template <typename T>
class ConcatStep final : public NodeStep {
 public:
  explicit ConcatStep(const StepSetup& s)
      : NodeStep(s), srcs_(s.inputs.size()), dx_(s.inputs.size()) {
    for (size_t k = 0; k < s.inputs.size(); ++k) channels_.push_back(in_shape(s, k).c);
  }
  void forward(const PassState&) override {
    const Shape& out = output_shape();
    for (size_t k = 0; k < srcs_.size(); ++k) srcs_[k] = static_cast<const T*>(input(k));
    concat_channels<T>(srcs_, channels_, static_cast<T*>(output()), out.n, out.h, out.w,
                       res_->format, stream());
  }
  void backward() override {
    const Shape& out = output_shape();
    for (size_t k = 0; k < dx_.size(); ++k) dx_[k] = static_cast<T*>(grad_dest(k));
    concat_channels_backward<T>(static_cast<const T*>(output_grad()), dx_, channels_, out.n, out.h,
                                out.w, res_->format, stream());
    for (size_t k = 0; k < inputs_.size(); ++k) finish_grad(k, input_shape(k).elements());
  }

 private:
  std::vector<int> channels_;
  std::vector<const T*> srcs_;  // per input, refreshed each pass (the images move)
  std::vector<T*> dx_;          // per input
};

/// torch.flatten(x, 1). A view (no step is built) in NCHW or for a 1×1 map; a
/// transpose into C·H·W order otherwise.
class FlattenStep final : public NodeStep {
 public:
  explicit FlattenStep(const StepSetup& s) : NodeStep(s) {}
  void forward(const PassState&) override {
    const Shape& in = input_shape();
    with_storage_type(res_->dtype, [&]<typename T>() {
      flatten_nhwc<T>(static_cast<const T*>(input()), static_cast<T*>(output()), in.n, in.c, in.h,
                      in.w, stream());
    });
  }
  void backward() override {
    if (!input_needs_grad(0)) return;
    const Shape& in = input_shape();
    with_storage_type(res_->dtype, [&]<typename T>() {
      flatten_nhwc_backward<T>(static_cast<const T*>(output_grad()), static_cast<T*>(grad_dest(0)),
                               in.n, in.c, in.h, in.w, stream());
    });
    finish_grad(0, in.elements());
  }
};

/// Softmax cross-entropy: the loss into res->loss and, in training passes, the
/// logits' gradient (scaled by the dynamic loss scale) straight into its target.
class LossStep final : public NodeStep {
 public:
  explicit LossStep(const StepSetup& s) : NodeStep(s) {
    const Shape& in = in_shape(s);
    if (s.res->format == DataFormat::NHWC && int64_t{in.h} * in.w != 1) {
      throw std::invalid_argument(describe() + ": the logits " + shape_text(in) +
                                  " must be [N, classes, 1, 1] in NHWC");
    }
    if (!input_grads_.empty() && input_grads_[0].accumulate) {
      throw std::logic_error(describe() + ": the logits' gradient must be written first");
    }
  }
  void forward(const PassState& state) override {
    const Shape& in = input_shape();
    void* dlogits = state.training && runs_backward_ ? input_grads_[0].data : nullptr;
    with_storage_type(res_->dtype, [&]<typename T>() {
      softmax_cross_entropy<T>(static_cast<const T*>(input()), state.labels, res_->loss,
                               static_cast<T*>(dlogits), res_->loss_scale, res_->loss_scratch,
                               res_->loss_scratch_bytes, in.n, static_cast<int>(in.per_image()),
                               stream());
    });
  }
  void backward() override {}  // the gradient was written with the loss
};

}  // namespace

std::unique_ptr<NodeStep> make_node_step(const StepSetup& s) {
  const Node& first = node_of(s);
  switch (first.op()) {
    case OpKind::Conv2d:
      return std::make_unique<ConvStep>(s, std::get<models::ConvAttrs>(first.attrs));
    case OpKind::BatchNorm:
      return std::make_unique<BatchNormStep>(s, std::get<models::BatchNormAttrs>(first.attrs));
    case OpKind::Activation:
      return std::make_unique<ActivationStep>(s, std::get<models::ActivationAttrs>(first.attrs));
    case OpKind::Pool:
      return std::make_unique<PoolStep>(s, std::get<models::PoolAttrs>(first.attrs));
    case OpKind::AdaptiveAvgPool:
      return std::make_unique<AdaptiveAvgPoolStep>(
          s, std::get<models::AdaptiveAvgPoolAttrs>(first.attrs));
    case OpKind::FullyConnected:
      return std::make_unique<FcStep>(s, std::get<models::FullyConnectedAttrs>(first.attrs));
    case OpKind::Dropout:
      return std::make_unique<DropoutStep>(s, std::get<models::DropoutAttrs>(first.attrs));
    case OpKind::Add:
    case OpKind::Concat: {
      std::unique_ptr<NodeStep> step;
      with_storage_type(s.res->dtype, [&]<typename T>() {
        if (first.op() == OpKind::Add) {
          step = std::make_unique<AddStep<T>>(s);
        } else {
          step = std::make_unique<ConcatStep<T>>(s);
        }
      });
      return step;
    }
    case OpKind::Flatten:
      return std::make_unique<FlattenStep>(s);
    case OpKind::SoftmaxCrossEntropy:
      return std::make_unique<LossStep>(s);
    case OpKind::Input:
      break;
  }
  throw std::invalid_argument(std::string("the CUDA backend has no step for ") +
                              models::op_name(first.op()) + " node '" + first.name + "'");
}

}  // namespace cnnbench::kernels::cuda
