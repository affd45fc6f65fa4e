#include "kernels/cpu/executable.h"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/error.h"
#include "kernels/init.h"
#include "models/analysis.h"

namespace cnnbench::kernels::cpu {
namespace {

using models::NodeId;
using models::OpKind;

/// Sets the OpenMP thread count of the calling thread for the scope (oneDNN and
/// our loops read it when they start a parallel region) and restores it after,
/// so an executable's num_threads never leaks into the caller.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : previous_(omp_get_max_threads()), active_(threads > 0) {
    if (active_) omp_set_num_threads(threads);
  }
  ~ThreadScope() {
    if (active_) omp_set_num_threads(previous_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int previous_;
  bool active_;
};

void validate(const CompileOptions& o) {
  if (o.precision != Precision::Fp32) {
    throw std::invalid_argument(std::string("--precision=") + to_string(o.precision) +
                                " is not supported by the CPU backend; valid: fp32");
  }
  if (o.batch < 1) {
    throw std::invalid_argument("batch size " + std::to_string(o.batch) +
                                " is not supported by the CPU backend; valid: 1 or more images");
  }
  if (o.image_h < 1 || o.image_w < 1) {
    throw std::invalid_argument("image size " + std::to_string(o.image_h) + "x" +
                                std::to_string(o.image_w) +
                                " is not valid; both sides must be >= 1");
  }
  if (o.num_threads < 0) {
    throw std::invalid_argument("num_threads " + std::to_string(o.num_threads) +
                                " is not valid; valid: 0 (OpenMP's choice) or more");
  }
}

/// Producers whose output no backward pass reads once the next node consumed it
/// (their backward needs their input, a workspace or nothing), so a following
/// activation may overwrite it.
bool output_unused_by_backward(OpKind op) {
  switch (op) {
    case OpKind::Conv2d:
    case OpKind::BatchNorm:
    case OpKind::FullyConnected:
    case OpKind::Pool:
    case OpKind::AdaptiveAvgPool:
    case OpKind::Add:
    case OpKind::Concat:
    case OpKind::Dropout:
      return true;
    default:
      return false;
  }
}

}  // namespace

CpuExecutable::CpuExecutable(const models::Graph& graph, const CompileOptions& options)
    : options_(options), graph_(graph) {
  validate(options);
  if (!graph_.shapes_inferred_for(options.batch, options.image_h, options.image_w)) {
    graph_.infer_shapes(options.batch, options.image_h, options.image_w);
  }
  const auto& nodes = graph_.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  const NodeId out = graph_.output();
  if (nodes[static_cast<size_t>(out)].op() != OpKind::SoftmaxCrossEntropy) {
    throw std::invalid_argument("graph '" + graph_.name() +
                                "' does not end in a softmax cross-entropy node; the CPU backend "
                                "trains and evaluates graphs that do");
  }
  image_channels_ = std::get<models::InputAttrs>(nodes[0].attrs).channels;
  num_classes_ = static_cast<int>(
      nodes[static_cast<size_t>(nodes[static_cast<size_t>(out)].inputs[0])].output.per_image());
  const ThreadScope threads(options.num_threads);
  const bool training = options.training;

  // Parameters, gradients, momentum: three flat buffers in param_layout order.
  const std::vector<models::ParamSlot> layout = graph_.param_layout();
  int64_t param_count = 0;
  for (const auto& s : layout) param_count = std::max(param_count, s.offset + s.count);
  params_ = HostArray<float>(param_count, "parameters");
  init_parameters(layout, options.seed, params_.data());
  if (training) {
    grads_ = HostArray<float>(param_count, "gradients");
    momentum_ = HostArray<float>(param_count, "momentum");
  }
  std::vector<ParamPointers> param_ptrs(nodes.size());
  for (const auto& s : layout) {
    auto& p = param_ptrs[static_cast<size_t>(s.node)];
    const bool first = s.role == models::ParamRole::Weight || s.role == models::ParamRole::Scale;
    (first ? p.weight : p.bias) = params_.data() + s.offset;
    if (training) (first ? p.weight_grad : p.bias_grad) = grads_.data() + s.offset;
    if (param_groups_.empty() || param_groups_.back().node != s.node) {
      param_groups_.push_back({s.node, s.offset, 0});
    }
    param_groups_.back().count += s.count;
  }

  // What runs backward, where values live and how gradients share buffers
  // (models/analysis.h); the rules below are this backend's.
  const models::Consumers consumers = models::consumers(graph_);
  runs_backward_ = training ? models::backward_set(graph_, consumers) : std::vector<bool>(nodes.size(), false);
  const auto is_view = [&](NodeId i) {
    const auto& n = nodes[static_cast<size_t>(i)];
    return n.op() == OpKind::Flatten &&
           FlattenLayer::is_view(nodes[static_cast<size_t>(n.inputs[0])].output, options.format);
  };
  models::AliasRules alias;
  alias.is_view = is_view;
  alias.not_stored = [out](NodeId i) { return i == out; };
  alias.output_free_after_use = [&](NodeId j) { return output_unused_by_backward(nodes[static_cast<size_t>(j)].op()); };
  const std::vector<NodeId> value_owner = models::value_owners(graph_, consumers, alias);
  tensors_.value.assign(nodes.size(), nullptr);
  tensors_.grad.assign(nodes.size(), nullptr);
  int64_t activation_bytes = 0;
  for (NodeId i = 1; i < count; ++i) {
    const auto k = static_cast<size_t>(i);
    if (value_owner[k] < 0) continue;  // the loss
    if (value_owner[k] == i) {
      value_buffers_.emplace_back(nodes[k].output.elements(), "activations of " + nodes[k].name);
      activation_bytes += value_buffers_.back().bytes();
      tensors_.value[k] = value_buffers_.back().data();
    } else if (value_owner[k] == 0) {
      input_views_.push_back(i);  // points at each batch's images, set per pass
    } else {
      tensors_.value[k] = tensors_.value[static_cast<size_t>(value_owner[k])];
    }
  }

  // Gradients of activations: one unit of backward per node.
  if (training) {
    models::GradientRules rules;
    rules.is_view = is_view;
    // Every member of a gradient tensor has the owner's shape (views keep the
    // element count, add inputs the add's shape).
    rules.size = [&](NodeId t) { return nodes[static_cast<size_t>(t)].output.elements(); };
    for (NodeId i = 1; i < count; ++i) {
      if (runs_backward_[static_cast<size_t>(i)]) rules.units.push_back({i, nodes[static_cast<size_t>(i)].inputs});
    }
    gradients_ = models::plan_gradients(graph_, consumers, runs_backward_, rules);
    for (size_t b = 0; b < gradients_.buffer_sizes.size(); ++b) {
      grad_buffers_.emplace_back(gradients_.buffer_sizes[b],
                                 "activation gradients (buffer " + std::to_string(b) + ")");
      activation_bytes += grad_buffers_.back().bytes();
    }
    int64_t largest = 0;
    for (NodeId i = 1; i < count; ++i) {
      const auto k = static_cast<size_t>(i);
      const NodeId owner = gradients_.owner[k];
      if (owner < 0 || gradients_.buffer_of[static_cast<size_t>(owner)] < 0) continue;
      tensors_.grad[k] = grad_buffers_[static_cast<size_t>(gradients_.buffer_of[static_cast<size_t>(owner)])].data();
      largest = std::max(largest, nodes[k].output.elements());
    }
    scratch_ = HostArray<float>(largest, "gradient accumulation scratch");
    written_.assign(nodes.size(), 0);
  } else {
    gradients_.owner.assign(nodes.size(), -1);
  }

  // The layers.
  steps_.resize(nodes.size());
  input_grads_.resize(nodes.size());
  int64_t saved_bytes = 0, private_bytes = 0;
  for (NodeId i = 1; i < count; ++i) {
    const auto k = static_cast<size_t>(i);
    const StepSetup setup{.ctx = &ctx_,
                          .graph = &graph_,
                          .id = i,
                          .format = options.format,
                          .training = training,
                          .weight_format = WeightFormat::Auto,
                          .tensors = &tensors_,
                          .params = param_ptrs[k]};
    try {
      steps_[k] = make_node_step(setup);
    } catch (const dnnl::error& e) {
      throw BackendError(std::string("oneDNN could not create the primitives of ") +
                         models::op_name(nodes[k].op()) + " node '" + nodes[k].name +
                         "': " + e.what());
    }
    saved_bytes += steps_[k]->saved_bytes();
    private_bytes += steps_[k]->private_weight_bytes();
    input_grads_[k].resize(nodes[k].inputs.size());
  }
  node_done_.assign(nodes.size(), 0);
  ctx_.allocate_scratchpad();

  images_ =
      HostArray<float>(int64_t{options.batch} * image_channels_ * options.image_h * options.image_w,
                       "synthetic images");
  labels_ = HostArray<int32_t>(options.batch, "synthetic labels");

  memory_.parameters = params_.bytes() + momentum_.bytes();
  memory_.gradients = grads_.bytes();
  memory_.activations = activation_bytes + saved_bytes;
  memory_.workspace = ctx_.scratchpad_bytes() + private_bytes + scratch_.bytes();
  memory_.data = images_.bytes() + labels_.bytes();

  const int thread_count = options.num_threads > 0 ? options.num_threads : omp_get_max_threads();
  description_ = "oneDNN " + compat::library_version() + " (" + compat::effective_isa_name() +
                 "), " + std::to_string(thread_count) +
                 (thread_count == 1 ? " thread, " : " threads, ") + to_string(options.format) +
                 " fp32";
}

CpuExecutable::~CpuExecutable() = default;

Batch CpuExecutable::synthetic_batch(uint64_t seed) {
  const ThreadScope threads(options_.num_threads);
  kernels::synthetic_batch(seed, options_.batch, image_channels_, options_.image_h,
                           options_.image_w, options_.format, num_classes_, images_.data(),
                           labels_.data());
  return {images_.data(), labels_.data(), options_.batch};
}

Batch CpuExecutable::upload_batch(const float* images, const int32_t* labels) {
  std::copy_n(images, images_.count(), images_.data());
  std::copy_n(labels, labels_.count(), labels_.data());
  return {images_.data(), labels_.data(), options_.batch};
}

void CpuExecutable::check_batch(const Batch& batch) const {
  if (batch.n != options_.batch || batch.images == nullptr || batch.labels == nullptr) {
    throw std::invalid_argument("batch of " + std::to_string(batch.n) +
                                " images does not match the compiled batch size " +
                                std::to_string(options_.batch) + " (or has no data)");
  }
}

void CpuExecutable::run_forward(const Batch& batch, bool training) {
  // The images are only read; the table holds mutable pointers for uniformity.
  auto* images = const_cast<float*>(static_cast<const float*>(batch.images));
  tensors_.value[0] = images;
  for (NodeId view : input_views_) tensors_.value[static_cast<size_t>(view)] = images;
  PassState state{.training = training,
                  .labels = batch.labels,
                  .dropout_key = derive_key(derive_key(options_.seed, kDropoutStream), step_),
                  .loss = 0.0F};
  for (auto& step : steps_) {
    if (step) step->forward(state);
  }
  loss_ = state.loss;
}

void CpuExecutable::train_step(const Batch& batch, const GradReadyFn& on_grad_ready) {
  if (!options_.training) {
    throw std::logic_error("train_step on an executable compiled for forward-only runs");
  }
  check_batch(batch);
  const ThreadScope threads(options_.num_threads);
  run_forward(batch, true);
  ++step_;

  const auto& nodes = graph_.nodes();
  std::fill(written_.begin(), written_.end(), 0);
  for (const ParamGroup& g : param_groups_) {
    node_done_[static_cast<size_t>(g.node)] = runs_backward_[static_cast<size_t>(g.node)] ? 0 : 1;
  }
  size_t frontier = 0;
  const auto advance = [&] {
    while (frontier < param_groups_.size() &&
           node_done_[static_cast<size_t>(param_groups_[frontier].node)] != 0) {
      if (on_grad_ready)
        on_grad_ready(param_groups_[frontier].offset, param_groups_[frontier].count);
      ++frontier;
    }
  };
  advance();
  for (auto i = static_cast<NodeId>(nodes.size()) - 1; i >= 1; --i) {
    const auto k = static_cast<size_t>(i);
    if (!runs_backward_[k]) continue;
    auto& outs = input_grads_[k];
    const auto& inputs = nodes[k].inputs;
    for (size_t in = 0; in < inputs.size(); ++in) {
      const auto j = static_cast<size_t>(inputs[in]);
      const NodeId owner = gradients_.owner[j];
      if (owner < 0 || gradients_.shares_gradient(inputs[in], i)) {
        outs[in] = {};
        continue;
      }
      outs[in] = {tensors_.grad[j], written_[static_cast<size_t>(owner)] != 0};
      written_[static_cast<size_t>(owner)] = 1;
    }
    steps_[k]->backward(outs, scratch_.data());
    node_done_[k] = 1;
    advance();
  }
  if (frontier != param_groups_.size()) {
    throw std::logic_error("backward finished with parameter gradients not reported ready");
  }
  sgd_momentum_update(options_.optimizer, params_.data(), grads_.data(), momentum_.data(),
                      params_.count());
}

void CpuExecutable::forward_only(const Batch& batch) {
  check_batch(batch);
  const ThreadScope threads(options_.num_threads);
  run_forward(batch, false);
}

void CpuExecutable::synchronize() { ctx_.stream().wait(); }

BufferView CpuExecutable::parameters() { return {params_.data(), params_.count(), DType::F32}; }

BufferView CpuExecutable::gradients() { return {grads_.data(), grads_.count(), DType::F32}; }

void CpuExecutable::read_parameters(int64_t offset, int64_t count, float* out) {
  check_flat_range("parameters", offset, count, params_.count());
  std::copy_n(params_.data() + offset, count, out);
}

void CpuExecutable::read_gradients(int64_t offset, int64_t count, float* out) {
  check_flat_range("gradients", offset, count, grads_.count());
  std::copy_n(grads_.data() + offset, count, out);
}

void CpuExecutable::write_parameters(int64_t offset, const float* values, int64_t count) {
  check_flat_range("parameters", offset, count, params_.count());
  std::copy_n(values, count, params_.data() + offset);
}

ParamHashes CpuExecutable::parameter_hashes(const std::vector<models::ParamSlot>& layout) {
  int64_t end = 0;
  for (const auto& slot : layout) end = std::max(end, slot.offset + slot.count);
  check_flat_range("parameters", 0, end, params_.count());
  return hash_parameters_host(params_.data(), layout);
}

}  // namespace cnnbench::kernels::cpu
