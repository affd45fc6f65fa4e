#include "kernels/cuda/executable.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/batchnorm.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/param_hash.cuh"
#include "kernels/cuda/plan_cache_file.h"
#include "kernels/cuda/step_events.h"
#include "kernels/error.h"
#include "kernels/init.h"
#include "models/analysis.h"

namespace cnnbench::kernels::cuda {
namespace {

using models::Node;
using models::NodeId;
using models::OpKind;
using models::ParamRole;
using models::ParamSlot;
using models::Shape;

/// Eager steps before a pass is captured: every plan and kernel has then run
/// once on the stream outside a capture (CUDNN.md §4).
constexpr int kEagerStepsBeforeCapture = 2;
/// Channels the first convolution's NHWC input is padded to (conv.h): 16 bytes
/// per pixel, what vectorised and tensor-core engines need for the 7×7 stem —
/// 8 channels in fp16/bf16, 4 in fp32/tf32.
constexpr int padded_input_channels(DType dtype) { return dtype == DType::F32 ? 4 : 8; }
/// torch.cuda.amp.GradScaler's defaults: init_scale 2^16, growth_interval 2000.
constexpr float kInitialLossScale = 65536.0F;
constexpr int kLossScaleGrowthInterval = 2000;
/// Every tensor carved out of a shared buffer starts on this boundary, so all
/// pointers the layers see honour the 16-byte alignment their plans promise.
constexpr int64_t kSlotAlignment = 256;
/// Device memory left aside when judging whether a batch fits: library handles,
/// plan workspaces and autotuning buffers are not in the estimate.
constexpr int64_t kMemoryReserve = int64_t{1} << 30;

using SetupClock = std::chrono::steady_clock;

double seconds_between(SetupClock::time_point a, SetupClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int64_t align_up(int64_t bytes) {
  return (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
}

size_t at(NodeId id) { return static_cast<size_t>(id); }

std::string gib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / double(int64_t{1} << 30));
  return buf;
}

std::string mib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / double(int64_t{1} << 20));
  return buf;
}

std::string shape_text(const Shape& s) {
  return "[N=" + std::to_string(s.n) + ",C=" + std::to_string(s.c) + ",H=" + std::to_string(s.h) +
         ",W=" + std::to_string(s.w) + "]";
}

void validate(const CompileOptions& o) {
  if (o.batch < 1) {
    throw std::invalid_argument("batch size " + std::to_string(o.batch) +
                                " is not supported by the CUDA backend; valid: 1 or more images");
  }
  if (o.image_h < 1 || o.image_w < 1) {
    throw std::invalid_argument("image size " + std::to_string(o.image_h) + "x" +
                                std::to_string(o.image_w) +
                                " is not valid; both sides must be >= 1");
  }
  int count = 0;
  CNNBENCH_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (o.device < 0 || o.device >= count) {
    throw std::invalid_argument("device " + std::to_string(o.device) +
                                " is not valid: the CUDA runtime sees " + std::to_string(count) +
                                " device(s), valid: 0.." + std::to_string(count - 1));
  }
  if (o.precision == Precision::Bf16) {
    int major = 0;
    CNNBENCH_CHECK_CUDA(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, o.device));
    if (major < 8) {
      throw std::invalid_argument(
          "--precision=bf16 needs a GPU of compute capability 8.0 or newer; "
          "device " +
          std::to_string(o.device) + " is " + std::to_string(major) +
          ".x; valid there: fp32, fp16");
    }
  }
}

bool is_relu(const Node& n) {
  const auto* a = std::get_if<models::ActivationAttrs>(&n.attrs);
  return a != nullptr && a->kind == models::ActivationAttrs::Kind::Relu;
}

bool flatten_is_view(const Shape& in, DataFormat format) {
  return format == DataFormat::NCHW || int64_t{in.h} * in.w == 1;
}

/// One step of the compiled graph before its buffers exist.
struct StepPlan {
  std::vector<NodeId> members;  ///< ascending; the last one is the step's output
  BatchNormFusion fusion;
  std::vector<NodeId> inputs;  ///< external inputs
  bool runs_backward = false;
  std::vector<NodeId> input_owner;      ///< per input: the gradient owner it writes to, or −1
  std::vector<bool> input_accumulate;   ///< per input
  std::vector<int64_t> scratch_offset;  ///< per input: bytes into the gradient scratch, or −1
  [[nodiscard]] NodeId output() const { return members.back(); }
};

/// Splits the graph into steps in forward order and recognises the fusions:
/// BatchNorm → ReLU, BatchNorm → Add (→ ReLU), each link being the only use of
/// the value before it. Flatten views get no step (`view` marks them).
std::vector<StepPlan> plan_steps(const models::Graph& g,
                                 const std::vector<std::vector<NodeId>>& consumers,
                                 DataFormat format, std::vector<bool>& view) {
  const auto& nodes = g.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  std::vector<NodeId> group_output(nodes.size(), -1);  // member → its group's output
  std::vector<StepPlan> groups(nodes.size());          // indexed by group output
  for (NodeId b = 1; b < count; ++b) {
    if (nodes[at(b)].op() != OpKind::BatchNorm || consumers[at(b)].size() != 1) continue;
    const NodeId c = consumers[at(b)][0];
    if (group_output[at(c)] >= 0) continue;
    const Node& next = nodes[at(c)];
    StepPlan s;
    s.members = {b, c};
    if (is_relu(next)) {
      s.fusion.relu = c;
    } else if (next.op() == OpKind::Add && next.inputs.size() == 2 &&
               next.inputs[0] != next.inputs[1]) {
      s.fusion.add = c;
      s.fusion.z = next.inputs[0] == b ? next.inputs[1] : next.inputs[0];
      if (consumers[at(c)].size() == 1) {
        const NodeId r = consumers[at(c)][0];
        if (is_relu(nodes[at(r)]) && group_output[at(r)] < 0) {
          s.fusion.relu = r;
          s.members.push_back(r);
        }
      }
    } else {
      continue;
    }
    s.inputs = {nodes[at(b)].inputs[0]};
    if (s.fusion.add >= 0) s.inputs.push_back(s.fusion.z);
    for (const NodeId m : s.members) group_output[at(m)] = s.output();
    groups[at(s.output())] = std::move(s);
  }

  std::vector<StepPlan> steps;
  view.assign(nodes.size(), false);
  for (NodeId i = 1; i < count; ++i) {
    const Node& n = nodes[at(i)];
    if (group_output[at(i)] == i) {
      steps.push_back(std::move(groups[at(i)]));
    } else if (group_output[at(i)] >= 0) {
      continue;  // computed by the group ending later
    } else if (n.op() == OpKind::Flatten &&
               flatten_is_view(nodes[at(n.inputs[0])].output, format)) {
      view[at(i)] = true;
    } else {
      StepPlan s;
      s.members = {i};
      s.inputs = n.inputs;
      steps.push_back(std::move(s));
    }
  }
  return steps;
}

/// How one parameter tensor reaches its layer and how its gradient comes back.
struct ParamRoute {
  // Layer side of the weight: straight from the masters, or a slot of the
  // layers' weight buffer filled by the to-layers copy.
  bool direct_read = true;
  int64_t layer_offset = 0;  ///< bytes into the layers' weight buffer
  // Gradient: straight into the flat buffer, or staged (bytes into staging).
  bool direct_grad = true;
  bool staged_fp32 = false;  ///< FC, staged only for alignment: a plain copy back
  int64_t staging_offset = 0;
  ParamCopyEntry entry;  ///< dims and layout (pointers filled after allocation)
};

}  // namespace

// ---------------------------------------------------------------------------
// The plan: host-only decisions, before any device memory is taken.
// ---------------------------------------------------------------------------

struct CudaExecutable::Plan {
  models::Consumers consumers;
  bool pad_input = false;
  std::vector<bool> view;           ///< per node: a flatten that is a view
  std::vector<StepPlan> steps;      ///< forward order
  std::vector<int> step_of_output;  ///< per node: the step whose output it is, or −1
  std::vector<bool> backward;       ///< per node: runs a backward pass when training
  std::vector<NodeId> value_owner;  ///< per node: whose buffer holds its output (−1: none)
  models::GradientPlan gradients;   ///< gradient tensors and their buffers (bytes)
  int64_t grad_scratch_bytes = 0;
  std::vector<ParamSlot> layout;
  std::vector<ParamRoute> routes;  ///< per slot
  int64_t layer_param_bytes = 0, staging_bytes = 0, bn_stat_bytes = 0;
  // Footprint, bytes.
  int64_t value_bytes = 0, grad_buffer_bytes = 0, argmax_bytes = 0, fc_flat_bytes = 0;
  int64_t bn_scratch_bytes = 0, input_bytes = 0;

  [[nodiscard]] bool runs_backward(NodeId i, bool training) const { return training && backward[at(i)]; }
  /// Bytes that grow with the batch: activations, their gradients, scratch,
  /// max-pool argmax, FC flatten buffers, the images.
  [[nodiscard]] int64_t per_batch_bytes() const {
    return value_bytes + grad_buffer_bytes + grad_scratch_bytes + argmax_bytes + fc_flat_bytes +
           input_bytes;
  }
  /// Bytes independent of the batch: parameters, gradients, momentum, the
  /// layers' copies, staging, BatchNorm statistics (running and saved) and scratch.
  [[nodiscard]] int64_t fixed_bytes(int64_t param_count, bool training) const {
    return param_count * 4 * (training ? 3 : 1) + layer_param_bytes + staging_bytes +
           2 * bn_stat_bytes + bn_scratch_bytes;
  }
};

void CudaExecutable::make_plan(Plan& p) {
  const auto& nodes = graph_.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  const NodeId out = graph_.output();
  const bool training = options_.training;
  const int64_t esize = dtype_size(dtype_);

  // ---- structure: consumers, input padding, steps and fusions ----------------
  p.consumers = models::consumers(graph_);
  const int pad_to = padded_input_channels(dtype_);
  p.pad_input = options_.format == DataFormat::NHWC && image_channels_ < pad_to &&
                !p.consumers[0].empty();
  for (const NodeId c : p.consumers[0]) {
    const auto* conv = std::get_if<models::ConvAttrs>(&nodes[at(c)].attrs);
    if (conv == nullptr || conv->groups != 1) p.pad_input = false;
  }
  stored_channels_ = p.pad_input ? pad_to : image_channels_;
  p.steps = plan_steps(graph_, p.consumers, options_.format, p.view);
  p.step_of_output.assign(nodes.size(), -1);
  for (size_t s = 0; s < p.steps.size(); ++s)
    p.step_of_output[at(p.steps[s].output())] = static_cast<int>(s);

  // ---- what runs backward, where values live, how activation gradients share
  // buffers (models/analysis.h), with this backend's rules: views share their
  // input's buffer; a fused member or the loss stores nothing; a ReLU/ReLU6
  // overwrites an input that its producer's backward does not read ----------
  p.backward = models::backward_set(graph_, p.consumers);
  for (StepPlan& s : p.steps) s.runs_backward = p.runs_backward(s.output(), training);
  const auto producer_reads_output = [&](NodeId j) {
    const int s = p.step_of_output[at(j)];
    if (s < 0) return true;  // the images
    const StepPlan& producer = p.steps[static_cast<size_t>(s)];
    if (producer.members.size() > 1) return producer.fusion.relu >= 0;
    return nodes[at(j)].op() == OpKind::Activation;
  };
  models::AliasRules alias;
  alias.is_view = [&](NodeId i) { return static_cast<bool>(p.view[at(i)]); };
  alias.not_stored = [&](NodeId i) { return p.step_of_output[at(i)] < 0 || i == out; };
  alias.output_free_after_use = [&](NodeId j) { return !producer_reads_output(j); };
  p.value_owner = models::value_owners(graph_, p.consumers, alias);

  models::GradientRules rules;
  rules.has_tensor = [&](NodeId i) { return p.view[at(i)] || p.step_of_output[at(i)] >= 0; };
  rules.is_view = alias.is_view;
  rules.size = [&](NodeId t) { return align_up(nodes[at(t)].output.elements() * esize); };
  if (training) {
    for (const StepPlan& s : p.steps) {
      if (s.runs_backward) rules.units.push_back({s.output(), s.inputs});
    }
  }
  p.gradients = models::plan_gradients(graph_, p.consumers, training ? p.backward : std::vector<bool>(nodes.size()),
                                       rules);

  // ---- static backward plan: visiting steps in reverse, the first gradient
  // written into a tensor overwrites, later ones add; scratch regions where an
  // op cannot add itself or computes a gradient nothing needs ----------------
  {
    std::vector<uint8_t> written(nodes.size(), 0);
    for (auto it = p.steps.rbegin(); it != p.steps.rend(); ++it) {
      StepPlan& s = *it;
      s.input_owner.assign(s.inputs.size(), -1);
      s.input_accumulate.assign(s.inputs.size(), false);
      s.scratch_offset.assign(s.inputs.size(), -1);
      if (!s.runs_backward) continue;
      const OpKind op = nodes[at(s.members.front())].op();
      const Shape& in0 = nodes[at(s.inputs.front())].output;
      const bool fc_flattens = op == OpKind::FullyConnected &&
                               options_.format == DataFormat::NHWC && int64_t{in0.h} * in0.w > 1;
      int64_t offset = 0;
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        // An input sharing the step's own gradient (an Add's sole-use input) needs no write.
        const NodeId owner = p.gradients.shares_gradient(s.inputs[k], s.output())
                                 ? -1
                                 : p.gradients.owner[at(s.inputs[k])];
        if (owner >= 0) {
          s.input_owner[k] = owner;
          s.input_accumulate[k] = written[at(owner)] != 0;
          written[at(owner)] = 1;
        }
        if (step_needs_grad_scratch(op, k, owner >= 0, s.input_accumulate[k], fc_flattens)) {
          s.scratch_offset[k] = offset;
          offset += align_up(nodes[at(s.inputs[k])].output.elements() * esize);
        }
      }
      p.grad_scratch_bytes = std::max(p.grad_scratch_bytes, offset);
    }
  }

  // ---- parameters: where each tensor is read and its gradient written -------
  p.layout = graph_.param_layout();
  param_count_ = 0;
  for (const auto& slot : p.layout) param_count_ = std::max(param_count_, slot.offset + slot.count);
  p.routes.assign(p.layout.size(), {});
  int64_t node_staging = 0;
  for (size_t i = 0; i < p.layout.size(); ++i) {
    const ParamSlot& slot = p.layout[i];
    if (i == 0 || p.layout[i - 1].node != slot.node) node_staging = 0;
    const Node& n = nodes[at(slot.node)];
    ParamRoute& r = p.routes[i];
    if (n.op() == OpKind::BatchNorm) continue;  // fp32 masters and gradients, any alignment
    ParamCopyEntry& e = r.entry;
    if (n.op() == OpKind::Conv2d && slot.role == ParamRole::Weight) {
      e.k = slot.dims[0];
      e.c = slot.dims[1];
      e.rs = slot.dims[2] * slot.dims[3];
      e.stored_c = p.pad_input && n.inputs[0] == 0 ? stored_channels_ : e.c;
      e.krsc = options_.format == DataFormat::NHWC ? 1 : 0;
    } else {
      e.k = slot.count;  // [count, 1, 1]: the same in every layout
    }
    // KRSC equals KCRS when C or R·S is 1 and nothing is padded.
    const bool same_layout = e.stored_c == e.c && (e.krsc == 0 || e.c == 1 || e.rs == 1);
    const bool aligned = (slot.offset * 4) % 16 == 0;
    const int64_t layer_bytes = align_up(e.layer_elements() * esize);
    r.direct_read = dtype_ == DType::F32 && same_layout && aligned;
    if (!r.direct_read) {
      r.layer_offset = p.layer_param_bytes;
      p.layer_param_bytes += layer_bytes;
    }
    if (n.op() == OpKind::FullyConnected) {
      r.direct_grad = aligned;  // the layer writes fp32 [out, in] and [out]
      r.staged_fp32 = !aligned;
      if (r.staged_fp32) {
        r.staging_offset = node_staging;
        node_staging += align_up(slot.count * 4);
      }
    } else {
      r.direct_grad = dtype_ == DType::F32 && same_layout && aligned;
      if (!r.direct_grad) {
        r.staging_offset = node_staging;
        node_staging += layer_bytes;
      }
    }
    if (training) p.staging_bytes = std::max(p.staging_bytes, node_staging);
  }
  for (const Node& n : nodes) {
    if (n.op() == OpKind::BatchNorm) p.bn_stat_bytes += 2 * align_up(int64_t{n.output.c} * 4);
  }

  // ---- footprint ----------------------------------------------------------------
  for (NodeId i = 1; i < count; ++i) {
    const Node& n = nodes[at(i)];
    if (p.value_owner[at(i)] == i) p.value_bytes += align_up(n.output.elements() * esize);
    const Shape& in = nodes[at(n.inputs[0])].output;
    if (n.op() == OpKind::BatchNorm) {
      p.bn_scratch_bytes = std::max(p.bn_scratch_bytes, batchnorm_scratch_bytes(in));
    }
    const auto* pool = std::get_if<models::PoolAttrs>(&n.attrs);
    if (training && pool != nullptr && pool->kind == models::PoolAttrs::Kind::Max) {
      p.argmax_bytes += align_up(n.output.elements());
    }
    if (n.op() == OpKind::FullyConnected && options_.format == DataFormat::NHWC &&
        int64_t{in.h} * in.w > 1) {
      p.fc_flat_bytes += align_up(in.elements() * esize) * (p.runs_backward(i, training) ? 2 : 1);
    }
  }
  for (const int64_t b : p.gradients.buffer_sizes) p.grad_buffer_bytes += b;
  p.input_bytes = align_up(int64_t{options_.batch} * stored_channels_ * options_.image_h *
                           options_.image_w * esize);
}

std::string CudaExecutable::batch_text() const {
  return "batch size " + std::to_string(options_.batch) + " on CUDA device " +
         std::to_string(options_.device);
}

std::string CudaExecutable::fitting_batch_text(const Plan& plan) const {
  const int64_t per_image = std::max<int64_t>(1, plan.per_batch_bytes() / options_.batch);
  const int64_t usable = device_free_bytes_ - kMemoryReserve;
  const int64_t fit = (usable - plan.fixed_bytes(param_count_, options_.training)) / per_image;
  const std::string per = "activations need about " + mib(per_image) + " per image; ";
  return fit >= 1 ? per + "a batch of about " + std::to_string(fit) + " images should fit"
                  : per + "not even one image fits next to the parameters";
}

void CudaExecutable::check_memory(const Plan& plan) {
  size_t free_bytes = 0, total_bytes = 0;
  CNNBENCH_CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  device_free_bytes_ = static_cast<int64_t>(free_bytes);
  const int64_t per_batch = plan.per_batch_bytes();
  const int64_t fixed = plan.fixed_bytes(param_count_, options_.training);
  const int64_t usable = static_cast<int64_t>(free_bytes) - kMemoryReserve;
  if (per_batch + fixed <= usable) return;
  throw OutOfMemoryError(
      "CUDA out of memory: " + batch_text() + " needs about " + gib(per_batch + fixed) +
          " (activations, their gradients and the batch " + gib(per_batch) +
          ", parameters and optimizer state " + gib(fixed) + ") but " +
          gib(static_cast<int64_t>(free_bytes)) + " of " + gib(static_cast<int64_t>(total_bytes)) +
          " are free and " + gib(kMemoryReserve) + " is kept for library workspaces; " +
          fitting_batch_text(plan),
      "activations and gradients of '" + graph_.name() + "' at " + batch_text(), per_batch + fixed);
}

std::vector<ParamPointers> CudaExecutable::allocate_parameters(const Plan& plan) {
  const auto& nodes = graph_.nodes();
  const bool training = options_.training;
  const cudaStream_t stream = ctx_->stream.get();
  // Uploads are ordered on the (non-blocking) compute stream, so the work
  // enqueued after them sees the data; a copy from pageable host memory has
  // staged it before it returns, so the host vectors may go right after.
  const auto upload_to = [&](void* dst, const void* src, size_t bytes) {
    if (bytes > 0)
      CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  };

  master_ = DeviceBuffer(param_count_ * 4, "fp32 master parameters");
  if (training) {
    grads_ = DeviceBuffer(param_count_ * 4, "fp32 gradients");
    momentum_ = DeviceBuffer(param_count_ * 4, "fp32 momentum");
    staging_ = DeviceBuffer(plan.staging_bytes, "parameter gradient staging");
    if (param_count_ > 0) {
      CNNBENCH_CHECK_CUDA(
          cudaMemsetAsync(grads_.get(), 0, static_cast<size_t>(grads_.bytes()), stream));
      CNNBENCH_CHECK_CUDA(
          cudaMemsetAsync(momentum_.get(), 0, static_cast<size_t>(momentum_.bytes()), stream));
    }
  }
  layer_params_ = DeviceBuffer(plan.layer_param_bytes, "the layers' weight copies");
  bn_stats_ = DeviceBuffer(plan.bn_stat_bytes, "BatchNorm running statistics");
  {
    std::vector<float> host(static_cast<size_t>(param_count_));
    init_parameters(plan.layout, options_.seed, host.data());
    upload_to(master_.get(), host.data(), host.size() * 4);
  }

  // Per node: its parameter pointers; per group: its gradient conversions.
  std::vector<ParamPointers> params(nodes.size());
  std::vector<ParamCopyEntry> to_layers, to_flat;
  std::vector<std::pair<size_t, size_t>> to_flat_range;  // per group: entries [first, last)
  group_of_node_.assign(nodes.size(), -1);
  auto* master = master_.as<float>();
  auto* grads = grads_.as<float>();
  auto* layer_base = layer_params_.as<char>();
  auto* staging_base = staging_.as<char>();
  for (size_t i = 0; i < plan.layout.size(); ++i) {
    const ParamSlot& slot = plan.layout[i];
    const ParamRoute& r = plan.routes[i];
    if (param_groups_.empty() || param_groups_.back().node != slot.node) {
      ParamGroup g;
      g.node = slot.node;
      g.offset = slot.offset;
      param_groups_.push_back(std::move(g));
      group_of_node_[at(slot.node)] = static_cast<int>(param_groups_.size()) - 1;
      to_flat_range.emplace_back(to_flat.size(), to_flat.size());
    }
    ParamGroup& group = param_groups_.back();
    group.count += slot.count;
    ParamPointers& ptrs = params[at(slot.node)];
    const bool first = slot.role == ParamRole::Weight || slot.role == ParamRole::Scale;
    const void* read = master + slot.offset;
    if (!r.direct_read) {
      ParamCopyEntry e = r.entry;
      e.src = master + slot.offset;
      e.dst = layer_base + r.layer_offset;
      read = e.dst;
      to_layers.push_back(e);
    }
    (first ? ptrs.weight : ptrs.bias) = read;
    if (!training) continue;
    void* grad = grads + slot.offset;
    if (r.staged_fp32) {
      grad = staging_base + r.staging_offset;
      group.fp32_copies.emplace_back(grad, grads + slot.offset);
      group.fp32_copy_bytes.push_back(slot.count * 4);
    } else if (!r.direct_grad) {
      ParamCopyEntry e = r.entry;
      grad = staging_base + r.staging_offset;
      e.src = grad;
      e.dst = grads + slot.offset;
      to_flat.push_back(e);
      to_flat_range.back().second = to_flat.size();
    }
    (first ? ptrs.weight_grad : ptrs.bias_grad) = grad;
  }

  // The copy tables: all weights at once after the optimizer; each group's
  // gradients after its backward (a node's slots, hence its entries, are
  // consecutive).
  std::vector<ParamCopyChunk> to_layers_chunks, to_flat_chunks;
  append_param_copy_chunks(to_layers, 0, to_layers.size(), ParamCopyDirection::ToLayers,
                           to_layers_chunks);
  to_layers_chunk_count_ = static_cast<int64_t>(to_layers_chunks.size());
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    param_groups_[g].copy_chunk_begin =
        append_param_copy_chunks(to_flat, to_flat_range[g].first, to_flat_range[g].second,
                                 ParamCopyDirection::ToFlat, to_flat_chunks);
    param_groups_[g].copy_chunk_end = static_cast<int64_t>(to_flat_chunks.size());
  }
  const auto upload = [&](DeviceBuffer& dst, const void* src, size_t bytes, const char* what) {
    dst = DeviceBuffer(static_cast<int64_t>(bytes), what);
    upload_to(dst.get(), src, bytes);
  };
  upload(to_layers_entries_, to_layers.data(), to_layers.size() * sizeof(ParamCopyEntry),
         "weight copy table");
  upload(to_layers_chunks_, to_layers_chunks.data(),
         to_layers_chunks.size() * sizeof(ParamCopyChunk), "weight copy chunks");
  upload(to_flat_entries_, to_flat.data(), to_flat.size() * sizeof(ParamCopyEntry),
         "gradient copy table");
  upload(to_flat_chunks_, to_flat_chunks.data(), to_flat_chunks.size() * sizeof(ParamCopyChunk),
         "gradient copy chunks");

  // BatchNorm running statistics: mean 0, variance 1 (torch.nn.BatchNorm2d).
  std::vector<float> stats(static_cast<size_t>(plan.bn_stat_bytes / 4), 0.0F);
  int64_t offset = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op() != OpKind::BatchNorm) continue;
    const int64_t c = nodes[i].output.c;
    const int64_t slot = align_up(c * 4) / 4;
    params[i].running_mean = bn_stats_.as<float>() + offset;
    params[i].running_var = bn_stats_.as<float>() + offset + slot;
    std::fill_n(stats.begin() + offset + slot, c, 1.0F);
    offset += 2 * slot;
  }
  upload_to(bn_stats_.get(), stats.data(), stats.size() * 4);
  node_done_.assign(param_groups_.size(), 0);
  return params;
}

void CudaExecutable::allocate_activations(const Plan& plan) {
  const auto& nodes = graph_.nodes();
  const auto count = static_cast<NodeId>(nodes.size());
  const int64_t esize = dtype_size(dtype_);
  const cudaStream_t stream = ctx_->stream.get();

  tensors_.value.assign(nodes.size(), nullptr);
  tensors_.grad.assign(nodes.size(), nullptr);
  for (NodeId i = 1; i < count; ++i) {
    if (plan.value_owner[at(i)] != i) continue;
    value_buffers_.emplace_back(align_up(nodes[at(i)].output.elements() * esize),
                                "activations of " + nodes[at(i)].name);
    tensors_.value[at(i)] = value_buffers_.back().get();
  }
  input_aliases_.assign(1, 0);
  for (NodeId i = 1; i < count; ++i) {
    const NodeId owner = plan.value_owner[at(i)];
    if (owner > 0 && owner != i) tensors_.value[at(i)] = tensors_.value[at(owner)];
    if (owner == 0) input_aliases_.push_back(i);
  }
  const models::GradientPlan& g = plan.gradients;
  for (size_t b = 0; b < g.buffer_sizes.size(); ++b) {
    grad_buffers_.emplace_back(g.buffer_sizes[b], "activation gradients (buffer " + std::to_string(b) + ")");
  }
  for (NodeId i = 1; i < count; ++i) {
    const NodeId owner = g.owner[at(i)];
    if (owner >= 0 && g.buffer_of[at(owner)] >= 0) {
      tensors_.grad[at(i)] = grad_buffers_[static_cast<size_t>(g.buffer_of[at(owner)])].get();
    }
  }
  grad_scratch_ = DeviceBuffer(plan.grad_scratch_bytes, "gradient accumulation scratch");
  bn_scratch_ = DeviceBuffer(plan.bn_scratch_bytes, "BatchNorm scratch");
  loss_scratch_ = DeviceBuffer(softmax_cross_entropy_scratch_bytes(options_.batch), "loss scratch");
  input_ = DeviceBuffer(plan.input_bytes, "input images");
  labels_ = DeviceBuffer(int64_t{options_.batch} * 4, "labels");

  // Device scalars: [0] loss (fp32), [8] dropout step (uint64), [16] loss scaler.
  scalars_ = DeviceBuffer(64, "loss, dropout step and loss scaler");
  CNNBENCH_CHECK_CUDA(cudaMemsetAsync(scalars_.get(), 0, 64, stream));
  loss_device_ = scalars_.as<float>();
  dropout_step_ = reinterpret_cast<uint64_t*>(scalars_.as<char>() + 8);
  if (options_.precision == Precision::Fp16) {
    scaler_ = reinterpret_cast<LossScalerState*>(scalars_.as<char>() + 16);
    loss_scaler_init(scaler_, kInitialLossScale, stream);
  }
}

void CudaExecutable::build_steps(const Plan& plan, const std::vector<ParamPointers>& params) {
  const auto& nodes = graph_.nodes();
  resources_.ctx = ctx_.get();
  resources_.plans = &plans_;
  resources_.conv_build.autotune = options_.cudnn_autotune;
  resources_.conv_build.runtime_compiled_engines = options_.cudnn_runtime_compiled_engines;
  resources_.precision = options_.precision;
  resources_.format = options_.format;
  resources_.dtype = dtype_;
  resources_.seed = options_.seed;
  resources_.dropout_step = dropout_step_;
  resources_.loss_scale = scaler_ != nullptr ? &scaler_->scale : nullptr;
  resources_.loss = loss_device_;
  resources_.bn_scratch = bn_scratch_.get();
  resources_.bn_scratch_bytes = bn_scratch_.bytes();
  resources_.loss_scratch = loss_scratch_.get();
  resources_.loss_scratch_bytes = loss_scratch_.bytes();

  int64_t workspace = 0;
  for (const StepPlan& s : plan.steps) {
    const Node& first = nodes[at(s.members.front())];
    StepSetup setup;
    setup.res = &resources_;
    setup.graph = &graph_;
    setup.members = s.members;
    setup.fusion = s.fusion;
    setup.tensors = &tensors_;
    setup.params = params[at(s.members.front())];
    setup.training = options_.training;
    setup.runs_backward = s.runs_backward;
    setup.inputs = s.inputs;
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      GradTarget t;
      if (s.input_owner[k] >= 0) {
        t.data = tensors_.grad[at(s.input_owner[k])];
        t.accumulate = s.input_accumulate[k];
      }
      setup.input_grads.push_back(t);
      setup.input_scratch.push_back(
          s.scratch_offset[k] >= 0 ? grad_scratch_.as<char>() + s.scratch_offset[k] : nullptr);
    }
    setup.padded_input_channels =
        plan.pad_input && first.op() == OpKind::Conv2d && s.inputs[0] == 0 ? stored_channels_ : 0;
    const std::string where = std::string(models::op_name(first.op())) + " node '" + first.name +
                              "' (input " + shape_text(nodes[at(s.inputs[0])].output) + ", " +
                              to_string(options_.format) + " " + to_string(options_.precision) +
                              ")";
    try {
      steps_.push_back(make_node_step(setup));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + ": " + e.what());
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const BackendError& e) {
      throw BackendError("setting up " + where + ": " + e.what());
    }
    step_nodes_.push_back(s.members);
    step_runs_backward_.push_back(s.runs_backward);
    workspace = std::max(workspace, steps_.back()->workspace_bytes());
    if (std::string note = steps_.back()->setup_note(); !note.empty()) {
      setup_.notes.push_back(std::move(note));
    }
    if (first.op() == OpKind::Dropout) has_dropout_ = true;
  }
  ctx_->reserve_workspace(workspace);
}

// ---------------------------------------------------------------------------
// Construction.
// ---------------------------------------------------------------------------

CudaExecutable::CudaExecutable(const models::Graph& graph, const CompileOptions& options)
    : options_(options), graph_(graph) {
  validate(options);
  const ScopedDevice current(options.device);
  if (!graph_.shapes_inferred_for(options.batch, options.image_h, options.image_w)) {
    graph_.infer_shapes(options.batch, options.image_h, options.image_w);
  }
  const auto& nodes = graph_.nodes();
  const NodeId out = graph_.output();
  if (nodes[at(out)].op() != OpKind::SoftmaxCrossEntropy) {
    throw std::invalid_argument("graph '" + graph_.name() +
                                "' does not end in a softmax cross-entropy node; the CUDA backend "
                                "trains and evaluates graphs that do");
  }
  dtype_ = storage_dtype(options.precision);
  image_channels_ = std::get<models::InputAttrs>(nodes[0].attrs).channels;
  num_classes_ = static_cast<int>(nodes[at(nodes[at(out)].inputs[0])].output.per_image());

  Plan plan;
  make_plan(plan);
  check_memory(plan);
  cudaDeviceProp prop{};
  CNNBENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, options.device));
  try {
    const auto t0 = SetupClock::now();
    ctx_ = std::make_unique<DeviceContext>(options.device);
    const std::vector<ParamPointers> params = allocate_parameters(plan);
    allocate_activations(plan);
    const auto t1 = SetupClock::now();
    load_plan_cache_file(prop.name);
    build_steps(plan, params);
    const auto t2 = SetupClock::now();
    // The layers' weights from the masters, then wait for all set-up work.
    enqueue_weight_copy();
    ctx_->stream.synchronize();
    const auto t3 = SetupClock::now();
    save_plan_cache_file(prop.name);
    const PlanCacheStats& st = plans_.stats();
    setup_.allocation_s = seconds_between(t0, t1) + seconds_between(t2, t3);
    setup_.autotune_s = st.autotune_s;
    setup_.plans_s = std::max(0.0, seconds_between(t1, t2) - st.autotune_s);
    setup_.plans_built = st.builds;
    setup_.plans_autotuned = st.autotuned;
    setup_.plans_from_cache = st.engine_choice_reuses;
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(
        std::string(e.what()) + " (" + batch_text() + "; " + fitting_batch_text(plan) + ")",
        e.allocation(), e.bytes());
  }

  int64_t activation_bytes = 0, saved_bytes = 0;
  for (const auto& b : value_buffers_) activation_bytes += b.bytes();
  for (const auto& b : grad_buffers_) activation_bytes += b.bytes();
  for (const auto& step : steps_) saved_bytes += step->saved_bytes();
  memory_.parameters =
      master_.bytes() + momentum_.bytes() + layer_params_.bytes() + bn_stats_.bytes();
  memory_.gradients = grads_.bytes() + staging_.bytes();
  memory_.activations = activation_bytes + saved_bytes;
  memory_.workspace = ctx_->workspace_bytes() + grad_scratch_.bytes() + bn_scratch_.bytes() +
                      loss_scratch_.bytes() + scalars_.bytes() + to_layers_entries_.bytes() +
                      to_layers_chunks_.bytes() + to_flat_entries_.bytes() +
                      to_flat_chunks_.bytes();
  memory_.data = input_.bytes() + labels_.bytes();

  // "cuDNN 9.10.2 (runtime; built with 9.19.0) / cuBLASLt 13.1.0, NVIDIA H200,
  // NHWC fp16, CUDA graph on, 42 cuDNN plans (40 autotuned)".
  const DnnLibraryVersions v = dnn_library_versions();
  description_ =
      "cuDNN " + format_library_version(v.cudnn_runtime) + " (runtime; built with " +
      format_library_version(v.cudnn_compiled) + ") / cuBLASLt " +
      format_library_version(v.cublaslt_runtime) + ", " + prop.name + ", " +
      to_string(options.format) + " " + to_string(options.precision) +
      (plan.pad_input ? " (input padded to " + std::to_string(stored_channels_) + " channels)"
                      : "") +
      ", CUDA graph " + (options.cuda_graph ? "on" : "off") + ", " + std::to_string(plans_.size()) +
      " cuDNN plans (" + std::to_string(plans_.stats().autotuned) + " autotuned)";
}

void CudaExecutable::load_plan_cache_file(const std::string& gpu_name) {
  const std::string& path = options_.plan_cache_path;
  if (path.empty()) return;
  const PlanCacheLoad load =
      read_plan_cache(path, {gpu_name, ctx_->cudnn_version}, options_.device);
  if (!load.warning.empty()) {
    setup_.notes.push_back("plan cache " + path + " " + load.warning);
    return;
  }
  for (const auto& [key, choice] : load.entries) plans_.engine_choices().insert(key, choice);
  if (load.existed) {
    setup_.notes.push_back("plan cache " + path + ": " + std::to_string(load.entries.size()) +
                           " engine choices read");
  }
}

void CudaExecutable::save_plan_cache_file(const std::string& gpu_name) {
  const std::string& path = options_.plan_cache_path;
  if (path.empty()) return;
  const PlanCacheStats& st = plans_.stats();
  if (st.builds == st.engine_choice_reuses) return;  // every plan came from the file
  try {
    write_plan_cache(path, {gpu_name, ctx_->cudnn_version}, plans_.engine_choices().entries());
    setup_.notes.push_back("plan cache " + path + ": written with " +
                           std::to_string(plans_.engine_choices().size()) + " engine choices");
  } catch (const BackendError& e) {
    // The run itself is unaffected; the next one searches again.
    setup_.notes.push_back(std::string("plan cache not saved: ") + e.what());
  }
}

std::unique_ptr<StepEvents> CudaExecutable::make_step_events() {
  return std::make_unique<CudaStepEvents>(options_.device, stream());
}

CudaExecutable::~CudaExecutable() {
  if (ctx_ != nullptr) {
    // Pending work may still use the buffers freed next.
    const ScopedDevice current(options_.device);
    (void)cudaStreamSynchronize(ctx_->stream.get());
  }
}

// ---------------------------------------------------------------------------
// Steps.
// ---------------------------------------------------------------------------

Batch CudaExecutable::synthetic_batch(uint64_t seed) {
  const ScopedDevice current(options_.device);
  const Shape shape{
      .n = options_.batch, .c = image_channels_, .h = options_.image_h, .w = options_.image_w};
  with_storage_type(dtype_, [&]<typename T>() {
    synthetic_images<T>(input_.as<T>(), shape, stored_channels_, options_.format, seed, stream());
  });
  synthetic_labels(labels_.as<int32_t>(), options_.batch, num_classes_, seed, stream());
  return {input_.get(), labels_.as<int32_t>(), options_.batch};
}

Batch CudaExecutable::upload_batch(const float* images, const int32_t* labels) {
  const ScopedDevice current(options_.device);
  const int64_t count =
      int64_t{options_.batch} * image_channels_ * options_.image_h * options_.image_w;
  if (uploaded_f32_.get() == nullptr) {
    uploaded_f32_ = DeviceBuffer(count * 4, "uploaded images (fp32)");
    uploaded_images_ = dtype_ == DType::F32 ? DeviceBuffer()
                                            : DeviceBuffer(count * dtype_size(dtype_), "uploaded images");
  }
  const cudaStream_t s = stream();
  ctx_->stream.synchronize();  // the previous batch may still be read
  CNNBENCH_CHECK_CUDA(cudaMemcpy(uploaded_f32_.get(), images, static_cast<size_t>(count) * 4,
                                 cudaMemcpyHostToDevice));
  CNNBENCH_CHECK_CUDA(cudaMemcpy(labels_.get(), labels, static_cast<size_t>(options_.batch) * 4,
                                 cudaMemcpyHostToDevice));
  const void* stored = uploaded_f32_.get();
  if (dtype_ == DType::F16) {
    cast<float, __half>(uploaded_f32_.as<float>(), uploaded_images_.as<__half>(), count, s);
    stored = uploaded_images_.get();
  } else if (dtype_ == DType::BF16) {
    cast<float, __nv_bfloat16>(uploaded_f32_.as<float>(), uploaded_images_.as<__nv_bfloat16>(),
                               count, s);
    stored = uploaded_images_.get();
  }
  ctx_->stream.synchronize();
  return {stored, labels_.as<int32_t>(), options_.batch};
}

void CudaExecutable::check_batch(const Batch& batch) const {
  if (batch.n != options_.batch || batch.images == nullptr || batch.labels == nullptr) {
    throw std::invalid_argument("batch of " + std::to_string(batch.n) +
                                " images does not match the compiled batch size " +
                                std::to_string(options_.batch) + " (or has no data)");
  }
}

const void* CudaExecutable::bind_input(const Batch& batch) {
  if (stored_channels_ == image_channels_ || batch.images == input_.get()) return batch.images;
  // A batch from elsewhere, (N, H, W, 3): pad it into the stored form.
  const int64_t rows = int64_t{options_.batch} * options_.image_h * options_.image_w;
  with_storage_type(dtype_, [&]<typename T>() {
    pad_channels_nhwc<T>(static_cast<const T*>(batch.images), input_.as<T>(), rows, image_channels_,
                         stored_channels_, stream());
  });
  return input_.get();
}

void CudaExecutable::enqueue_forward(const Batch& batch, bool training) {
  const void* images = bind_input(batch);
  // The table holds mutable pointers for uniformity; the images are only read.
  for (const NodeId a : input_aliases_) tensors_.value[at(a)] = const_cast<void*>(images);
  const PassState state{.training = training, .labels = batch.labels};
  for (auto& step : steps_) {
    try {
      step->forward(state);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("forward of " + step->describe() + ": " + e.what());
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const BackendError& e) {
      throw BackendError("forward of " + step->describe() + ": " + e.what());
    }
  }
}

void CudaExecutable::enqueue_backward(const GradReadyFn& on_grad_ready) {
  const cudaStream_t s = stream();
  for (size_t g = 0; g < param_groups_.size(); ++g) node_done_[g] = 0;
  // Parameters of steps without a backward pass keep zero gradients: ready now.
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (step_runs_backward_[i]) continue;
    for (const NodeId m : step_nodes_[i]) {
      if (group_of_node_[at(m)] >= 0) node_done_[static_cast<size_t>(group_of_node_[at(m)])] = 1;
    }
  }
  size_t frontier = 0;
  const auto advance = [&] {
    while (frontier < param_groups_.size() && node_done_[frontier] != 0) {
      if (on_grad_ready)
        on_grad_ready(param_groups_[frontier].offset, param_groups_[frontier].count);
      ++frontier;
    }
  };
  advance();
  for (size_t i = steps_.size(); i-- > 0;) {
    if (!step_runs_backward_[i]) continue;
    NodeStep& step = *steps_[i];
    try {
      step.backward();
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("backward of " + step.describe() + ": " + e.what());
    } catch (const OutOfMemoryError&) {
      throw;
    } catch (const BackendError& e) {
      throw BackendError("backward of " + step.describe() + ": " + e.what());
    }
    for (const NodeId m : step_nodes_[i]) {
      const int gi = group_of_node_[at(m)];
      if (gi < 0) continue;
      const ParamGroup& g = param_groups_[static_cast<size_t>(gi)];
      launch_param_copy(to_flat_entries_.as<ParamCopyEntry>(), to_flat_chunks_.as<ParamCopyChunk>(),
                        g.copy_chunk_begin, g.copy_chunk_end, ParamCopyDirection::ToFlat, dtype_,
                        s);
      for (size_t c = 0; c < g.fp32_copies.size(); ++c) {
        CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(g.fp32_copies[c].second, g.fp32_copies[c].first,
                                            static_cast<size_t>(g.fp32_copy_bytes[c]),
                                            cudaMemcpyDeviceToDevice, s));
      }
      node_done_[static_cast<size_t>(gi)] = 1;
    }
    advance();
  }
  if (frontier != param_groups_.size()) {
    throw std::logic_error("backward finished with parameter gradients not reported ready");
  }
}

void CudaExecutable::enqueue_weight_copy() {
  launch_param_copy(to_layers_entries_.as<ParamCopyEntry>(), to_layers_chunks_.as<ParamCopyChunk>(),
                    0, to_layers_chunk_count_, ParamCopyDirection::ToLayers, dtype_, stream());
}

void CudaExecutable::enqueue_optimizer() {
  const cudaStream_t s = stream();
  if (param_count_ > 0) {
    if (scaler_ != nullptr)
      nonfinite_check<float>(grads_.as<float>(), param_count_, &scaler_->found_nonfinite, s);
    sgd_momentum_update<float, float>(
        grads_.as<float>(), master_.as<float>(), momentum_.as<float>(), nullptr, param_count_,
        options_.optimizer, scaler_ != nullptr ? &scaler_->scale : nullptr,
        scaler_ != nullptr ? &scaler_->found_nonfinite : nullptr, s);
    enqueue_weight_copy();
  }
  if (scaler_ != nullptr) loss_scale_update(scaler_, kLossScaleGrowthInterval, s);
  if (has_dropout_) dropout_step_advance(dropout_step_, s);
}

void CudaExecutable::enqueue_train_step(const Batch& batch, const GradReadyFn& on_grad_ready) {
  enqueue_forward(batch, true);
  enqueue_backward(on_grad_ready);
  enqueue_optimizer();
}

template <class Enqueue>
void CudaExecutable::run_pass(CapturedPass& pass, const Batch& batch, bool with_callback,
                              Enqueue&& enqueue) {
  if (!options_.cuda_graph) {
    enqueue();
    return;
  }
  if (pass.images != batch.images || pass.labels != batch.labels ||
      pass.with_callback != with_callback) {
    pass.exec.reset();
    pass.images = batch.images;
    pass.labels = batch.labels;
    pass.with_callback = with_callback;
    pass.eager_runs = 0;
  }
  const cudaStream_t s = stream();
  if (!pass.exec.empty()) {
    CNNBENCH_CHECK_CUDA(cudaGraphLaunch(pass.exec.get(), s));
    ++graph_launches_;
    return;
  }
  if (pass.eager_runs < kEagerStepsBeforeCapture) {
    enqueue();
    ++pass.eager_runs;
    return;
  }
  const auto capture_start = SetupClock::now();
  CNNBENCH_CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(s, &partial);
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();
    throw;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t st = cudaStreamEndCapture(s, &graph);
  if (st != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw BackendError(std::string("capturing the step of '") + graph_.name() +
                       "' into a CUDA graph failed: " + cudaGetErrorName(st) + " (" +
                       cudaGetErrorString(st) +
                       "); cudaErrorStreamCaptureUnjoined means a stream that on_grad_ready forked "
                       "from the compute stream was not joined back before its last call returned, "
                       "cudaErrorStreamCaptureUnsupported/Invalidated a call that is illegal while "
                       "capturing (a synchronisation or an allocation); run with cuda_graph off to "
                       "compare");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t ist = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  if (ist != cudaSuccess) {
    (void)cudaGetLastError();
    throw BackendError(std::string("instantiating the CUDA graph of the step of '") +
                       graph_.name() + "' failed: " + cudaGetErrorName(ist) + " (" +
                       cudaGetErrorString(ist) + ")");
  }
  pass.exec = GraphExec(exec);
  ++graph_captures_;
  setup_.capture_s += seconds_between(capture_start, SetupClock::now());
  // Capturing ran nothing: this step runs now, from the graph.
  CNNBENCH_CHECK_CUDA(cudaGraphLaunch(pass.exec.get(), s));
  ++graph_launches_;
}

void CudaExecutable::train_step(const Batch& batch, const GradReadyFn& on_grad_ready) {
  if (!options_.training) {
    throw std::logic_error("train_step on an executable compiled for forward-only runs");
  }
  check_batch(batch);
  const ScopedDevice current(options_.device);
  run_pass(train_pass_, batch, static_cast<bool>(on_grad_ready),
           [&] { enqueue_train_step(batch, on_grad_ready); });
}

void CudaExecutable::forward_only(const Batch& batch) {
  check_batch(batch);
  const ScopedDevice current(options_.device);
  run_pass(infer_pass_, batch, false, [&] { enqueue_forward(batch, false); });
}

float CudaExecutable::loss() {
  const ScopedDevice current(options_.device);
  ctx_->stream.synchronize();
  float host = 0.0F;
  CNNBENCH_CHECK_CUDA(cudaMemcpy(&host, loss_device_, sizeof host, cudaMemcpyDeviceToHost));
  return host;
}

float CudaExecutable::loss_scale() const {
  if (scaler_ == nullptr) return 1.0F;
  const ScopedDevice current(options_.device);
  ctx_->stream.synchronize();
  LossScalerState host;
  CNNBENCH_CHECK_CUDA(cudaMemcpy(&host, scaler_, sizeof host, cudaMemcpyDeviceToHost));
  return host.scale;
}

void CudaExecutable::synchronize() {
  const ScopedDevice current(options_.device);
  ctx_->stream.synchronize();
}

BufferView CudaExecutable::parameters() { return {master_.get(), param_count_, DType::F32}; }

BufferView CudaExecutable::gradients() {
  return {grads_.get(), grads_.get() ? param_count_ : 0, DType::F32};
}

void CudaExecutable::read_parameters(int64_t offset, int64_t count, float* out) {
  check_flat_range("parameters", offset, count, param_count_);
  const ScopedDevice current(options_.device);
  ctx_->stream.synchronize();
  if (count > 0) {
    CNNBENCH_CHECK_CUDA(cudaMemcpy(out, master_.as<float>() + offset, static_cast<size_t>(count) * 4,
                                   cudaMemcpyDeviceToHost));
  }
}

void CudaExecutable::read_gradients(int64_t offset, int64_t count, float* out) {
  check_flat_range("gradients", offset, count, grads_.get() != nullptr ? param_count_ : 0);
  const ScopedDevice current(options_.device);
  ctx_->stream.synchronize();
  if (count > 0) {
    CNNBENCH_CHECK_CUDA(cudaMemcpy(out, grads_.as<float>() + offset, static_cast<size_t>(count) * 4,
                                   cudaMemcpyDeviceToHost));
  }
}

void CudaExecutable::write_parameters(int64_t offset, const float* values, int64_t count) {
  check_flat_range("parameters", offset, count, param_count_);
  const ScopedDevice current(options_.device);
  ctx_->stream.synchronize();
  if (count > 0) {
    CNNBENCH_CHECK_CUDA(cudaMemcpy(master_.as<float>() + offset, values,
                                   static_cast<size_t>(count) * 4, cudaMemcpyHostToDevice));
  }
  enqueue_weight_copy();
  ctx_->stream.synchronize();
}

ParamHashes CudaExecutable::parameter_hashes(const std::vector<models::ParamSlot>& layout) {
  int64_t end = 0;
  for (const auto& slot : layout) end = std::max(end, slot.offset + slot.count);
  check_flat_range("parameters", 0, end, param_count_);
  const std::vector<ParamHashChunk> chunks = param_hash_chunks(layout);
  const ScopedDevice current(options_.device);
  const auto count = static_cast<int64_t>(chunks.size());
  // Outside any step: two small buffers for this call only.
  DeviceBuffer d_chunks(std::max<int64_t>(1, count) * int64_t{sizeof(ParamHashChunk)},
                        "parameter hash chunks");
  DeviceBuffer d_sums(std::max<int64_t>(1, count) * 8, "parameter hash sums");
  const cudaStream_t s = stream();
  std::vector<uint64_t> sums(chunks.size());
  if (count > 0) {
    CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(d_chunks.get(), chunks.data(),
                                        chunks.size() * sizeof(ParamHashChunk),
                                        cudaMemcpyHostToDevice, s));
    launch_param_hash_chunks(master_.as<float>(), d_chunks.as<ParamHashChunk>(), count,
                             d_sums.as<uint64_t>(), s);
    CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(sums.data(), d_sums.get(), sums.size() * 8,
                                        cudaMemcpyDeviceToHost, s));
  }
  ctx_->stream.synchronize();
  return param_hashes_from_sums(tensor_sums_from_chunks(chunks, sums, layout.size()));
}

}  // namespace cnnbench::kernels::cuda
