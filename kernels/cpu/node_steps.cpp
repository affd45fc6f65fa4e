#include "kernels/cpu/node_steps.h"

#include <stdexcept>
#include <string>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/batchnorm.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/fc.h"
#include "kernels/cpu/loss.h"
#include "kernels/cpu/pool.h"
#include "kernels/init.h"

namespace cnnbench::kernels::cpu {

NodeStep::NodeStep(const StepSetup& setup)
    : graph_(setup.graph), id_(setup.id), tensors_(setup.tensors), params_(setup.params) {}

const float* NodeStep::input(size_t k) const {
  return tensors_->value[static_cast<size_t>(graph_->node(id_).inputs[k])];
}

float* NodeStep::output() const { return tensors_->value[static_cast<size_t>(id_)]; }

const float* NodeStep::output_grad() const { return tensors_->grad[static_cast<size_t>(id_)]; }

int64_t NodeStep::input_elements(size_t k) const {
  return graph_->node(graph_->node(id_).inputs[k]).output.elements();
}

namespace {

using models::Node;
using models::Shape;

const Node& node_of(const StepSetup& s) { return s.graph->node(s.id); }
Shape input_shape(const StepSetup& s, size_t k = 0) {
  return s.graph->node(node_of(s).inputs[k]).output;
}

/// A convolution or fully connected node: both layers take the same
/// constructor arguments and backward calls, with a weight and an optional bias.
template <class Layer, class Attrs>
class WeightedStep final : public NodeStep {
 public:
  WeightedStep(const StepSetup& s, const Attrs& a)
      : NodeStep(s),
        layer_(*s.ctx, a, input_shape(s), node_of(s).output, s.format, s.training,
               s.weight_format) {}
  void forward(PassState&) override {
    layer_.forward(input(), params_.weight, params_.bias, output());
  }
  void backward(std::span<const GradOut> in, float* scratch) override {
    produce_gradient(in[0], scratch, input_elements(),
                     [&](float* dx) { layer_.backward_data(output_grad(), params_.weight, dx); });
    layer_.backward_weights(input(), output_grad(), params_.weight_grad, params_.bias_grad);
  }
  [[nodiscard]] int64_t private_weight_bytes() const override { return layer_.private_bytes(); }

 private:
  Layer layer_;
};
using ConvStep = WeightedStep<ConvLayer, models::ConvAttrs>;
using FullyConnectedStep = WeightedStep<FullyConnectedLayer, models::FullyConnectedAttrs>;

class BatchNormStep final : public NodeStep {
 public:
  BatchNormStep(const StepSetup& s, const models::BatchNormAttrs& a)
      : NodeStep(s), layer_(*s.ctx, a, input_shape(s), s.format, s.training) {}
  void forward(PassState& state) override {
    if (state.training) {
      layer_.forward_training(input(), params_.weight, params_.bias, output());
    } else {
      layer_.forward_inference(input(), params_.weight, params_.bias, output());
    }
  }
  void backward(std::span<const GradOut> in, float* scratch) override {
    // oneDNN computes dx together with dscale/dshift, so dx always needs a home.
    const GradOut dx = in[0].data != nullptr ? in[0] : GradOut{scratch, false};
    produce_gradient(dx, scratch, input_elements(), [&](float* out) {
      layer_.backward(input(), output_grad(), params_.weight, out, params_.weight_grad,
                      params_.bias_grad);
    });
  }
  [[nodiscard]] int64_t saved_bytes() const override { return layer_.state_bytes(); }

 private:
  BatchNormLayer layer_;
};

class ActivationStep final : public NodeStep {
 public:
  ActivationStep(const StepSetup& s, const models::ActivationAttrs& a)
      : NodeStep(s), layer_(*s.ctx, a.kind, input_shape(s), s.format, s.training) {}
  void forward(PassState&) override { layer_.forward(input(), output()); }
  void backward(std::span<const GradOut> in, float* scratch) override {
    produce_gradient(in[0], scratch, input_elements(),
                     [&](float* dx) { layer_.backward(output(), output_grad(), dx); });
  }

 private:
  ActivationLayer layer_;
};

class PoolStep final : public NodeStep {
 public:
  PoolStep(const StepSetup& s, const models::PoolAttrs& a)
      : NodeStep(s), layer_(*s.ctx, a, input_shape(s), node_of(s).output, s.format, s.training) {}
  void forward(PassState&) override { layer_.forward(input(), output()); }
  void backward(std::span<const GradOut> in, float* scratch) override {
    produce_gradient(in[0], scratch, input_elements(),
                     [&](float* dx) { layer_.backward(output_grad(), dx); });
  }
  [[nodiscard]] int64_t saved_bytes() const override { return layer_.workspace_bytes(); }

 private:
  PoolLayer layer_;
};

class AdaptiveAvgPoolStep final : public NodeStep {
 public:
  explicit AdaptiveAvgPoolStep(const StepSetup& s)
      : NodeStep(s), layer_(input_shape(s), node_of(s).output, s.format) {}
  void forward(PassState&) override { layer_.forward(input(), output()); }
  void backward(std::span<const GradOut> in, float* scratch) override {
    produce_gradient(in[0], scratch, input_elements(),
                     [&](float* dx) { layer_.backward(output_grad(), dx); });
  }

 private:
  AdaptiveAvgPoolLayer layer_;
};

class DropoutStep final : public NodeStep {
 public:
  DropoutStep(const StepSetup& s, const models::DropoutAttrs& a)
      : NodeStep(s), layer_(a.p, input_shape(s), s.format) {}
  void forward(PassState& state) override {
    if (!state.training) {
      copy_elements(input(), output(), input_elements());
      return;
    }
    layer_.new_mask(derive_key(state.dropout_key, static_cast<uint64_t>(id_)));
    layer_.forward(input(), output());
  }
  void backward(std::span<const GradOut> in, float* scratch) override {
    produce_gradient(in[0], scratch, input_elements(),
                     [&](float* dx) { layer_.backward(output_grad(), dx); });
  }
  [[nodiscard]] int64_t saved_bytes() const override { return layer_.mask_bytes(); }

 private:
  DropoutLayer layer_;
};

class AddStep final : public NodeStep {
 public:
  explicit AddStep(const StepSetup& s) : NodeStep(s), srcs_(node_of(s).inputs.size()) {}
  void forward(PassState&) override {
    for (size_t k = 0; k < srcs_.size(); ++k) srcs_[k] = input(k);
    add_forward(srcs_, output(), input_elements());
  }
  void backward(std::span<const GradOut> in, float*) override {
    add_backward(output_grad(), in, input_elements());
  }

 private:
  std::vector<const float*> srcs_;
};

class ConcatStep final : public NodeStep {
 public:
  ConcatStep(const StepSetup& s, std::vector<Shape> ins)
      : NodeStep(s),
        layer_(std::move(ins), node_of(s).output, s.format),
        srcs_(node_of(s).inputs.size()) {}
  void forward(PassState&) override {
    for (size_t k = 0; k < srcs_.size(); ++k) srcs_[k] = input(k);
    layer_.forward(srcs_, output());
  }
  void backward(std::span<const GradOut> in, float*) override {
    layer_.backward(output_grad(), in);
  }

 private:
  ConcatLayer layer_;
  std::vector<const float*> srcs_;
};

class FlattenStep final : public NodeStep {
 public:
  explicit FlattenStep(const StepSetup& s)
      : NodeStep(s), layer_(*s.ctx, input_shape(s), s.format) {}
  void forward(PassState&) override {
    if (!layer_.is_view()) layer_.forward(input(), output());
  }
  void backward(std::span<const GradOut> in, float* scratch) override {
    // A view shares its input's gradient buffer: consumers already wrote there.
    if (layer_.is_view()) return;
    produce_gradient(in[0], scratch, input_elements(),
                     [&](float* dx) { layer_.backward(output_grad(), dx); });
  }

 private:
  FlattenLayer layer_;
};

class LossStep final : public NodeStep {
 public:
  explicit LossStep(const StepSetup& s)
      : NodeStep(s), layer_(input_shape(s).n, static_cast<int>(input_shape(s).per_image())) {}
  void forward(PassState& state) override { state.loss = layer_.forward(input(), state.labels); }
  void backward(std::span<const GradOut> in, float* scratch) override {
    produce_gradient(in[0], scratch, input_elements(), [&](float* dx) { layer_.backward(dx); });
  }
  [[nodiscard]] int64_t saved_bytes() const override { return layer_.state_bytes(); }

 private:
  SoftmaxCrossEntropyLayer layer_;
};

}  // namespace

std::unique_ptr<NodeStep> make_node_step(const StepSetup& s) {
  const Node& node = node_of(s);
  switch (node.op()) {
    case models::OpKind::Conv2d:
      return std::make_unique<ConvStep>(s, std::get<models::ConvAttrs>(node.attrs));
    case models::OpKind::BatchNorm:
      return std::make_unique<BatchNormStep>(s, std::get<models::BatchNormAttrs>(node.attrs));
    case models::OpKind::Activation:
      return std::make_unique<ActivationStep>(s, std::get<models::ActivationAttrs>(node.attrs));
    case models::OpKind::Pool:
      return std::make_unique<PoolStep>(s, std::get<models::PoolAttrs>(node.attrs));
    case models::OpKind::AdaptiveAvgPool:
      return std::make_unique<AdaptiveAvgPoolStep>(s);
    case models::OpKind::FullyConnected:
      return std::make_unique<FullyConnectedStep>(
          s, std::get<models::FullyConnectedAttrs>(node.attrs));
    case models::OpKind::Dropout:
      return std::make_unique<DropoutStep>(s, std::get<models::DropoutAttrs>(node.attrs));
    case models::OpKind::Add:
      return std::make_unique<AddStep>(s);
    case models::OpKind::Concat: {
      std::vector<Shape> ins;
      for (size_t k = 0; k < node.inputs.size(); ++k) ins.push_back(input_shape(s, k));
      return std::make_unique<ConcatStep>(s, std::move(ins));
    }
    case models::OpKind::Flatten:
      return std::make_unique<FlattenStep>(s);
    case models::OpKind::SoftmaxCrossEntropy:
      return std::make_unique<LossStep>(s);
    case models::OpKind::Input:
      break;
  }
  throw std::invalid_argument(std::string("the CPU backend has no step for ") +
                              models::op_name(node.op()) + " node '" + node.name + "'");
}

}  // namespace cnnbench::kernels::cpu
