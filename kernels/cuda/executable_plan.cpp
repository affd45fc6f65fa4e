// The CUDA executable's plan: steps and fusions, buffer ownership, the backward
// plan, parameter routes and the memory footprint, decided on the host before
// any device memory is taken (executable_internal.h).
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
#include "kernels/cuda/executable_internal.h"
#include "kernels/cuda/loss.cuh"
#include "kernels/cuda/param_hash.cuh"
#include "kernels/cuda/plan_cache_file.h"
#include "kernels/cuda/step_events.h"
#include "kernels/error.h"
#include "kernels/init.h"
#include "models/analysis.h"

namespace cnnbench::kernels::cuda {
using namespace detail;  // the executable's own internals (executable_internal.h)

namespace {

bool is_relu(const Node& n) {
  const auto* a = std::get_if<models::ActivationAttrs>(&n.attrs);
  return a != nullptr && a->kind == models::ActivationAttrs::Kind::Relu;
}

bool flatten_is_view(const Shape& in, DataFormat format) {
  return format == DataFormat::NCHW || int64_t{in.h} * in.w == 1;
}

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


}  // namespace

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


}  // namespace cnnbench::kernels::cuda
