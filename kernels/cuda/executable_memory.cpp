// The CUDA executable's buffers: parameters, the layers' weight copies and the
// copy tables, activations and gradients, the steps' set-up (cuDNN and
// cuBLASLt plans), and parameter access from the host.
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
