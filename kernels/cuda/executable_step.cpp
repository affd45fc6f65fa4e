// The CUDA executable's step: the synthetic batch, forward, backward with the
// gradient-ready hook, the optimizer, and the capture of the whole step into a
// CUDA graph replayed from the second step on.
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


}  // namespace cnnbench::kernels::cuda
