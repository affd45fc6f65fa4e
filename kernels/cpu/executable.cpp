#include "kernels/cpu/executable.h"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cpu/dnnl_compat.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/error.h"
#include "kernels/init.h"

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
  std::vector<bool> has_params(nodes.size(), false);
  for (const auto& s : layout) {
    auto& p = param_ptrs[static_cast<size_t>(s.node)];
    const bool first = s.role == models::ParamRole::Weight || s.role == models::ParamRole::Scale;
    (first ? p.weight : p.bias) = params_.data() + s.offset;
    if (training) (first ? p.weight_grad : p.bias_grad) = grads_.data() + s.offset;
    has_params[static_cast<size_t>(s.node)] = true;
    if (param_groups_.empty() || param_groups_.back().node != s.node) {
      param_groups_.push_back({s.node, s.offset, 0});
    }
    param_groups_.back().count += s.count;
  }

  // Which nodes need a backward pass: those with parameters at or before them
  // whose output reaches the loss.
  std::vector<std::vector<NodeId>> consumers(nodes.size());
  std::vector<bool> upstream(nodes.size(), false), reaches(nodes.size(), false);
  for (NodeId i = 0; i < count; ++i) {
    const auto& node = nodes[static_cast<size_t>(i)];
    upstream[static_cast<size_t>(i)] = has_params[static_cast<size_t>(i)];
    for (NodeId j : node.inputs) {
      consumers[static_cast<size_t>(j)].push_back(i);
      if (upstream[static_cast<size_t>(j)]) upstream[static_cast<size_t>(i)] = true;
    }
  }
  for (NodeId i = count - 1; i >= 0; --i) {
    bool r = i == out;
    for (NodeId c : consumers[static_cast<size_t>(i)]) r = r || reaches[static_cast<size_t>(c)];
    reaches[static_cast<size_t>(i)] = r;
  }
  runs_backward_.assign(nodes.size(), false);
  std::vector<bool> needs_grad(nodes.size(), false);  // a gradient of the output is computed
  for (NodeId i = 1; i < count; ++i) {
    const auto k = static_cast<size_t>(i);
    runs_backward_[k] = training && upstream[k] && reaches[k];
    needs_grad[k] = runs_backward_[k] && i != out;
  }

  // Values: views and in-place activations share their input's buffer.
  std::vector<NodeId> value_owner(nodes.size());
  grad_parent_.assign(nodes.size(), -1);
  for (NodeId i = 0; i < count; ++i) {
    const auto& node = nodes[static_cast<size_t>(i)];
    value_owner[static_cast<size_t>(i)] = i;
    if (i == 0) continue;
    const NodeId j = node.inputs[0];
    const auto& in = nodes[static_cast<size_t>(j)];
    if (node.op() == OpKind::Flatten && FlattenLayer::is_view(in.output, options.format)) {
      value_owner[static_cast<size_t>(i)] = value_owner[static_cast<size_t>(j)];
      grad_parent_[static_cast<size_t>(i)] = j;
    } else if (node.op() == OpKind::Activation && consumers[static_cast<size_t>(j)].size() == 1 &&
               value_owner[static_cast<size_t>(j)] == j && output_unused_by_backward(in.op())) {
      value_owner[static_cast<size_t>(i)] = j;
    }
  }
  tensors_.value.assign(nodes.size(), nullptr);
  tensors_.grad.assign(nodes.size(), nullptr);
  int64_t activation_bytes = 0;
  for (NodeId i = 1; i < count; ++i) {
    const auto k = static_cast<size_t>(i);
    if (i == out) continue;
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

  // Gradients of activations. A gradient is written first by the backward of its
  // last consumer and read last by the backward of its producer; tensors whose
  // [first write, last read] intervals do not overlap share a buffer (best fit).
  grad_owner_.assign(nodes.size(), -1);
  if (training) {
    // An input read only by one add has exactly the add's output gradient: it
    // shares the add's gradient tensor instead of receiving a copy.
    for (NodeId i = 1; i < count; ++i) {
      const auto& node = nodes[static_cast<size_t>(i)];
      if (node.op() != OpKind::Add || !needs_grad[static_cast<size_t>(i)]) continue;
      for (NodeId j : node.inputs) {
        const auto k = static_cast<size_t>(j);
        if (j != 0 && consumers[k].size() == 1 && grad_parent_[k] < 0 && needs_grad[k]) {
          grad_parent_[k] = i;
        }
      }
    }
    const auto find_owner = [&](NodeId x) {
      while (grad_parent_[static_cast<size_t>(x)] >= 0) x = grad_parent_[static_cast<size_t>(x)];
      return x;
    };
    for (NodeId i = 1; i < count; ++i) {
      if (needs_grad[static_cast<size_t>(i)]) grad_owner_[static_cast<size_t>(i)] = find_owner(i);
    }
    // Per gradient tensor (owner): the backward that writes it first (the highest
    // writing consumer) and the one that reads it last (the lowest member: its
    // producer reads it; views read nothing but are never the lowest).
    std::vector<NodeId> last_consumer(nodes.size(), -1);
    std::vector<NodeId> last_reader(nodes.size(), count);
    for (NodeId i = 1; i < count; ++i) {
      const auto k = static_cast<size_t>(i);
      if (grad_owner_[k] >= 0) {
        auto& lr = last_reader[static_cast<size_t>(grad_owner_[k])];
        lr = std::min(lr, i);
      }
      if (!runs_backward_[k]) continue;
      for (NodeId j : nodes[k].inputs) {
        if (shares_gradient(j, i)) continue;
        const NodeId owner = grad_owner_[static_cast<size_t>(j)];
        if (owner >= 0) {
          auto& lc = last_consumer[static_cast<size_t>(owner)];
          lc = std::max(lc, i);
        }
      }
    }
    struct Buffer {
      int64_t elements;
      NodeId last_reader;  ///< backward runs in descending node id
    };
    std::vector<Buffer> buffers;
    std::vector<int> buffer_of(nodes.size(), -1);
    std::vector<NodeId> owners;
    for (NodeId i = 1; i < count; ++i) {
      if (grad_owner_[static_cast<size_t>(i)] == i) owners.push_back(i);
    }
    std::stable_sort(owners.begin(), owners.end(), [&](NodeId a, NodeId b) {
      return last_consumer[static_cast<size_t>(a)] > last_consumer[static_cast<size_t>(b)];
    });
    for (NodeId t : owners) {
      // Every member of a gradient group has the owner's shape (views keep the
      // element count, add inputs the add's shape).
      const int64_t need = nodes[static_cast<size_t>(t)].output.elements();
      const NodeId first_writer = last_consumer[static_cast<size_t>(t)];
      int best = -1;
      for (size_t b = 0; b < buffers.size(); ++b) {
        // Free once its last reader ran, strictly before this tensor's first writer.
        if (buffers[b].last_reader > first_writer && buffers[b].elements >= need &&
            (best < 0 || buffers[b].elements < buffers[static_cast<size_t>(best)].elements)) {
          best = static_cast<int>(b);
        }
      }
      if (best < 0) {
        buffers.push_back({need, count});
        best = static_cast<int>(buffers.size()) - 1;
      }
      buffers[static_cast<size_t>(best)].last_reader = last_reader[static_cast<size_t>(t)];
      buffer_of[static_cast<size_t>(t)] = best;
    }
    for (size_t b = 0; b < buffers.size(); ++b) {
      grad_buffers_.emplace_back(buffers[b].elements,
                                 "activation gradients (buffer " + std::to_string(b) + ")");
      activation_bytes += grad_buffers_.back().bytes();
    }
    int64_t largest = 0;
    for (NodeId i = 1; i < count; ++i) {
      const auto k = static_cast<size_t>(i);
      if (grad_owner_[k] < 0) continue;
      const int b = buffer_of[static_cast<size_t>(grad_owner_[k])];
      tensors_.grad[k] = grad_buffers_[static_cast<size_t>(b)].data();
      largest = std::max(largest, nodes[k].output.elements());
    }
    scratch_ = HostArray<float>(largest, "gradient accumulation scratch");
    written_.assign(nodes.size(), 0);
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

bool CpuExecutable::shares_gradient(models::NodeId input, models::NodeId consumer) const {
  return grad_parent_[static_cast<size_t>(input)] == consumer ||
         grad_parent_[static_cast<size_t>(consumer)] == input;
}

Batch CpuExecutable::synthetic_batch(uint64_t seed) {
  const ThreadScope threads(options_.num_threads);
  kernels::synthetic_batch(seed, options_.batch, image_channels_, options_.image_h,
                           options_.image_w, options_.format, num_classes_, images_.data(),
                           labels_.data());
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
      const NodeId owner = grad_owner_[j];
      if (owner < 0 || shares_gradient(inputs[in], i)) {
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

}  // namespace cnnbench::kernels::cpu
