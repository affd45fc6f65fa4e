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

}  // namespace

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

}  // namespace cnnbench::kernels::cuda
