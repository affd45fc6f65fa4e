// Internals of the CUDA executable shared by its source files (executable.cpp:
// construction; executable_plan.cpp: the host-only plan; executable_memory.cpp:
// buffers, layer set-up and parameter access; executable_step.cpp: the step and
// its CUDA-graph capture). Not part of the backend's interface.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cuda/executable.h"
#include "models/analysis.h"

namespace cnnbench::kernels::cuda::detail {

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

inline double seconds_between(SetupClock::time_point a, SetupClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

inline int64_t align_up(int64_t bytes) {
  return (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
}

inline size_t at(NodeId id) { return static_cast<size_t>(id); }

inline std::string gib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / double(int64_t{1} << 30));
  return buf;
}

inline std::string mib(int64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / double(int64_t{1} << 20));
  return buf;
}

inline std::string shape_text(const Shape& s) {
  return "[N=" + std::to_string(s.n) + ",C=" + std::to_string(s.c) + ",H=" + std::to_string(s.h) +
         ",W=" + std::to_string(s.w) + "]";
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

}  // namespace cnnbench::kernels::cuda::detail

namespace cnnbench::kernels::cuda {

// The executable's own source files share these names (internal header).
using detail::at;
using detail::ParamRoute;
using detail::StepPlan;
using models::NodeId;
using models::ParamSlot;

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

}  // namespace cnnbench::kernels::cuda
