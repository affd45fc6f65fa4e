// A thin RAII layer over cuDNN 9's backend graph API (cudnn_graph.h), in the
// order cudnn-frontend's samples follow: tensors → operations → operation graph
// → heuristics → engine configs → execution plans (the support check) →
// workspace size → variant pack → execute. No legacy cuDNN API is used.
//
// Errors: every failing cuDNN call throws CudnnError whose message names the
// call, the attribute (name, type, count), the descriptor's label (which op,
// which tensor, which shape) and cuDNN's own status and last error string.
// The one expected failure, an engine config that cannot run the graph
// (CUDNN.md §3, "finalize is the real support check"), is returned as a value by
// ExecutionPlan::try_build and recorded by find_plans. Nothing here prints.
#pragma once

#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/error.h"

namespace cnnbench::kernels::cuda {

/// A failed cuDNN backend call. status() is cuDNN's full status code; test its
/// category with CUDNN_STATUS_CATEGORY (e.g. 3000 = not supported).
class CudnnError : public BackendError {
 public:
  CudnnError(const std::string& what, cudnnStatus_t status) : BackendError(what), status_(status) {}
  [[nodiscard]] cudnnStatus_t status() const { return status_; }

 private:
  cudnnStatus_t status_;
};

/// Readable names for messages ("CUDNN_ATTR_TENSOR_STRIDES", "TENSOR", "INT64", ...).
std::string attribute_name(cudnnBackendAttributeName_t name);
std::string descriptor_type_name(cudnnBackendDescriptorType_t type);
std::string attribute_type_name(cudnnBackendAttributeType_t type);
std::string data_type_name(cudnnDataType_t type);
std::string numerical_note_name(cudnnBackendNumericalNote_t note);
std::string behavior_note_name(cudnnBackendBehaviorNote_t note);
/// cudnnGetErrorString(status) plus cudnnGetLastErrorString() when it has text.
std::string cudnn_status_text(cudnnStatus_t status);

/// The cuDNN attribute type that holds a C++ value of type T. Descriptor-valued
/// attributes (cudnnBackendDescriptor_t is void*) go through
/// BackendDescriptor::set_descriptor(s) instead, so a void* here is always a
/// data pointer (CUDNN_TYPE_VOID_PTR).
template <typename T>
constexpr cudnnBackendAttributeType_t attribute_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, int64_t>)
    return CUDNN_TYPE_INT64;
  else if constexpr (std::is_same_v<U, int32_t>)
    return CUDNN_TYPE_INT32;
  else if constexpr (std::is_same_v<U, float>)
    return CUDNN_TYPE_FLOAT;
  else if constexpr (std::is_same_v<U, double>)
    return CUDNN_TYPE_DOUBLE;
  else if constexpr (std::is_same_v<U, bool>)
    return CUDNN_TYPE_BOOLEAN;
  else if constexpr (std::is_same_v<U, char>)
    return CUDNN_TYPE_CHAR;
  else if constexpr (std::is_same_v<U, void*>)
    return CUDNN_TYPE_VOID_PTR;
  else if constexpr (std::is_same_v<U, cudnnHandle_t>)
    return CUDNN_TYPE_HANDLE;
  else if constexpr (std::is_same_v<U, cudnnDataType_t>)
    return CUDNN_TYPE_DATA_TYPE;
  else if constexpr (std::is_same_v<U, cudnnConvolutionMode_t>)
    return CUDNN_TYPE_CONVOLUTION_MODE;
  else if constexpr (std::is_same_v<U, cudnnBackendHeurMode_t>)
    return CUDNN_TYPE_HEUR_MODE;
  else if constexpr (std::is_same_v<U, cudnnBackendKnobType_t>)
    return CUDNN_TYPE_KNOB_TYPE;
  else if constexpr (std::is_same_v<U, cudnnBackendNumericalNote_t>)
    return CUDNN_TYPE_NUMERICAL_NOTE;
  else if constexpr (std::is_same_v<U, cudnnBackendBehaviorNote_t>)
    return CUDNN_TYPE_BEHAVIOR_NOTE;
  else if constexpr (std::is_same_v<U, cudnnPointwiseMode_t>)
    return CUDNN_TYPE_POINTWISE_MODE;
  else if constexpr (std::is_same_v<U, cudnnGenStatsMode_t>)
    return CUDNN_TYPE_GENSTATS_MODE;
  else if constexpr (std::is_same_v<U, cudnnReduceTensorOp_t>)
    return CUDNN_TYPE_REDUCTION_OPERATOR_TYPE;
  else if constexpr (std::is_same_v<U, cudnnResampleMode_t>)
    return CUDNN_TYPE_RESAMPLE_MODE;
  else if constexpr (std::is_same_v<U, cudnnPaddingMode_t>)
    return CUDNN_TYPE_PADDING_MODE;
  else if constexpr (std::is_same_v<U, cudnnFraction_t>)
    return CUDNN_TYPE_FRACTION;
  else if constexpr (std::is_same_v<U, cudnnBackendNormMode_t>)
    return CUDNN_TYPE_NORM_MODE;
  else if constexpr (std::is_same_v<U, cudnnBackendNormFwdPhase_t>)
    return CUDNN_TYPE_NORM_FWD_PHASE;
  else
    static_assert(sizeof(T) == 0, "no cuDNN attribute type for this C++ type");
}

/// Owns one cudnnBackendDescriptor_t (created in the constructor, destroyed in
/// the destructor). Move-only. `label` says what the descriptor is for, e.g.
/// "tensor x (uid 1) of conv fprop NHWC fp16 x[32,64,56,56] ...", and appears in
/// every error message about it.
class BackendDescriptor {
 public:
  BackendDescriptor() = default;  ///< empty; get() is nullptr
  BackendDescriptor(cudnnBackendDescriptorType_t type, std::string label);
  ~BackendDescriptor();
  BackendDescriptor(BackendDescriptor&& o) noexcept;
  BackendDescriptor& operator=(BackendDescriptor&& o) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  [[nodiscard]] cudnnBackendDescriptor_t get() const { return d_; }
  [[nodiscard]] cudnnBackendDescriptorType_t type() const { return type_; }
  [[nodiscard]] const std::string& label() const { return label_; }
  [[nodiscard]] bool empty() const { return d_ == nullptr; }

  /// Sets a one-element attribute; the cuDNN attribute type follows from T.
  template <typename T>
  void set(cudnnBackendAttributeName_t name, const T& value) {
    set_raw(name, attribute_type_of<T>(), 1, &value);
  }
  /// Sets an array attribute (dims, strides, paddings, data pointers, ...).
  template <typename T>
  void set(cudnnBackendAttributeName_t name, std::span<const T> values) {
    set_raw(name, attribute_type_of<T>(), static_cast<int64_t>(values.size()), values.data());
  }
  template <typename T>
  void set(cudnnBackendAttributeName_t name, const std::vector<T>& values) {
    set(name, std::span<const T>(values));
  }
  /// Sets a descriptor-valued attribute (CUDNN_TYPE_BACKEND_DESCRIPTOR).
  void set_descriptor(cudnnBackendAttributeName_t name, const BackendDescriptor& value);
  void set_descriptors(cudnnBackendAttributeName_t name,
                       std::span<const BackendDescriptor* const> values);

  /// Finalizes; throws CudnnError on failure.
  void finalize();
  /// Finalizes and returns the status instead of throwing (the support check).
  [[nodiscard]] cudnnStatus_t try_finalize();
  [[nodiscard]] bool finalized() const { return finalized_; }

  /// Reads a one-element attribute.
  template <typename T>
  [[nodiscard]] T get(cudnnBackendAttributeName_t name) const {
    T value{};
    int64_t count = 0;
    get_raw(name, attribute_type_of<T>(), 1, &count, &value);
    return value;
  }
  /// Reads up to `max_count` elements of an array attribute.
  template <typename T>
  [[nodiscard]] std::vector<T> get_array(cudnnBackendAttributeName_t name,
                                         int64_t max_count) const {
    std::vector<T> values(static_cast<size_t>(max_count));
    int64_t count = 0;
    get_raw(name, attribute_type_of<T>(), max_count, &count, values.data());
    values.resize(static_cast<size_t>(std::min(count, max_count)));
    return values;
  }
  /// Element count of an attribute (GetAttribute with requested = 0, no buffer).
  [[nodiscard]] int64_t get_count(cudnnBackendAttributeName_t name,
                                  cudnnBackendAttributeType_t type) const;
  /// Reads a descriptor-valued attribute: creates up to `max_count` descriptors
  /// of `element_type` (cuDNN fills descriptors we own; CUDNN.md §1) and returns
  /// the ones cuDNN wrote.
  [[nodiscard]] std::vector<BackendDescriptor> get_descriptors(
      cudnnBackendAttributeName_t name, cudnnBackendDescriptorType_t element_type,
      int64_t max_count, const std::string& element_label) const;

 private:
  void set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
               const void* data);
  void get_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
               int64_t requested, int64_t* count, void* data) const;
  void reset() noexcept;

  cudnnBackendDescriptor_t d_ = nullptr;
  cudnnBackendDescriptorType_t type_ = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
  std::string label_;
  bool finalized_ = false;
};

// ---------------------------------------------------------------------------
// Builders. Each returns a finalized descriptor or throws CudnnError.
// ---------------------------------------------------------------------------

/// A tensor of the graph. Dims are always in logical N, C, H, W order (for
/// filters K, C/groups, R, S); the layout is carried by the strides (CUDNN.md §1).
struct TensorSpec {
  std::string name;  ///< "x", "w", "dy", ... for messages
  int64_t uid = 0;   ///< unique within the graph; the variant pack refers to it
  cudnnDataType_t data_type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims;     ///< ≤ CUDNN_DIM_MAX elements
  std::vector<int64_t> strides;  ///< elements, same count as dims
  /// Bytes: a promise that every runtime pointer bound to this uid is aligned
  /// so (16 for tensor-core paths; CUDNN.md §1).
  int64_t byte_alignment = 16;
  bool is_virtual = false;   ///< graph intermediate; never in the variant pack
  bool is_by_value = false;  ///< host scalar ([1,1,1,1]); its variant-pack entry is a host pointer
};
BackendDescriptor make_tensor(const TensorSpec& spec, const std::string& context);

/// CONVOLUTION_DESCRIPTOR for 2-D cross-correlation (the PyTorch convention).
struct ConvolutionSpec {
  cudnnDataType_t compute_type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> pre_paddings;   ///< {pad_h, pad_w}
  std::vector<int64_t> post_paddings;  ///< {pad_h, pad_w}
  std::vector<int64_t> strides;        ///< {stride_h, stride_w}
  std::vector<int64_t> dilations;      ///< {dilation_h, dilation_w}
};
BackendDescriptor make_convolution(const ConvolutionSpec& spec, const std::string& context);

/// Convolution operations. alpha/beta are FLOAT attributes (compute type FLOAT)
/// baked into the op: out = alpha·op(...) + beta·out. A different beta needs
/// another graph and plan.
BackendDescriptor make_conv_forward(const BackendDescriptor& x, const BackendDescriptor& w,
                                    const BackendDescriptor& y, const BackendDescriptor& conv,
                                    float alpha, float beta, const std::string& context);
BackendDescriptor make_conv_backward_data(const BackendDescriptor& dx, const BackendDescriptor& w,
                                          const BackendDescriptor& dy,
                                          const BackendDescriptor& conv, float alpha, float beta,
                                          const std::string& context);
BackendDescriptor make_conv_backward_filter(const BackendDescriptor& dw, const BackendDescriptor& x,
                                            const BackendDescriptor& dy,
                                            const BackendDescriptor& conv, float alpha, float beta,
                                            const std::string& context);

/// A finalized operation graph and every descriptor it references (tensors,
/// op-level descriptors such as the convolution descriptor, operations), kept
/// alive together because engine configs and plans made from the graph refer
/// to it. Shared by the candidate plans through std::shared_ptr.
class OperationGraph {
 public:
  /// `descriptors`: finalized tensors and op-level descriptors to keep alive;
  /// `ops`: finalized operations in topological order. `description` names the
  /// graph in messages (e.g. "conv fprop NHWC fp16 x[...] w[...] y[...]").
  OperationGraph(cudnnHandle_t handle, std::vector<BackendDescriptor> descriptors,
                 std::vector<BackendDescriptor> ops, std::string description);
  OperationGraph(const OperationGraph&) = delete;
  OperationGraph& operator=(const OperationGraph&) = delete;
  OperationGraph(OperationGraph&&) = default;
  OperationGraph& operator=(OperationGraph&&) = default;
  ~OperationGraph() = default;

  [[nodiscard]] const BackendDescriptor& descriptor() const { return graph_; }
  [[nodiscard]] const std::string& description() const { return description_; }
  /// CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT: engine ids are 0..count-1.
  [[nodiscard]] int64_t engine_global_count() const;

 private:
  // Declaration order = construction order; the graph is destroyed first.
  std::vector<BackendDescriptor> descriptors_;
  std::vector<BackendDescriptor> ops_;
  BackendDescriptor graph_;
  std::string description_;
};

// ---------------------------------------------------------------------------
// Engines, heuristics, engine configs.
// ---------------------------------------------------------------------------

/// One knob setting of an engine config.
struct KnobChoice {
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_SWIZZLE;
  int64_t value = 0;
  friend bool operator==(const KnobChoice&, const KnobChoice&) = default;
};

/// What identifies an engine config across runs on the same graph, cuDNN
/// version and GPU: the engine's global index and its knob choices. This is
/// what the autotuner's winner is cached (and could be persisted) as.
struct EngineChoice {
  int64_t global_index = -1;
  std::vector<KnobChoice> knobs;
  [[nodiscard]] std::string to_string() const;  ///< "eng42 k2=1 k3=0"
  friend bool operator==(const EngineChoice&, const EngineChoice&) = default;
};

/// An engine config's identity and notes.
struct EngineConfigInfo {
  EngineChoice choice;
  std::vector<cudnnBackendNumericalNote_t> numerical_notes;
  std::vector<cudnnBackendBehaviorNote_t> behavior_notes;
  [[nodiscard]] bool has(cudnnBackendNumericalNote_t note) const;
  [[nodiscard]] bool has(cudnnBackendBehaviorNote_t note) const;
  [[nodiscard]] std::string to_string() const;  ///< choice and notes, for messages
};

/// Reads the engine (global index, notes) and knob choices of a finalized ENGINECFG.
EngineConfigInfo describe_engine_config(const BackendDescriptor& engine_config);

/// The finalized engine configs the heuristics propose for `graph` in `mode`,
/// best first (possibly none). Heuristic mode A is fast, B slower and better,
/// FALLBACK lists engines that should support anything (CUDNN.md §3).
std::vector<BackendDescriptor> heuristic_engine_configs(const OperationGraph& graph,
                                                        cudnnBackendHeurMode_t mode);

/// An engine config rebuilt from a cached EngineChoice (ENGINE with the global
/// index on `graph`, KNOB_CHOICE per knob, ENGINECFG). Throws CudnnError when
/// the choice does not fit the graph (e.g. an index out of range).
BackendDescriptor make_engine_config(const OperationGraph& graph, const EngineChoice& choice);

/// Which engines a precision or a run admits, by their notes.
struct EngineFilter {
  /// false for strict fp32: drops TENSOR_CORE engines, which run FLOAT-compute
  /// fp32 convolutions in TF32 on sm80+ (CUDNN.md §3).
  bool allow_tensor_core = true;
  /// DOWN_CONVERT_INPUTS engines convert the inputs to a narrower type first.
  bool allow_down_convert_inputs = true;
  /// REDUCED_PRECISION_REDUCTION engines add split partial sums in the I/O
  /// type (fp16/bf16) rather than in FLOAT.
  bool allow_reduced_precision_reduction = true;
  bool allow_nondeterministic = true;
  bool allow_runtime_compilation = true;
  /// Empty when the config is admitted, else why not ("numerical note TENSOR_CORE").
  [[nodiscard]] std::string reject_reason(const EngineConfigInfo& info) const;
  /// Bit set of the fields, for cache keys.
  [[nodiscard]] uint32_t bits() const;
};

// ---------------------------------------------------------------------------
// Execution plans and the variant pack.
// ---------------------------------------------------------------------------

/// A finalized VARIANT_PACK: data pointers by tensor uid and the workspace.
/// Cheap to build (CUDNN.md §3); one plan runs with any variant pack whose
/// pointers honour the graph's alignment promises.
class VariantPack {
 public:
  VariantPack(std::span<const int64_t> uids, std::span<void* const> pointers, void* workspace,
              const std::string& context);
  [[nodiscard]] const BackendDescriptor& descriptor() const { return pack_; }

 private:
  BackendDescriptor pack_;
};

struct PlanAttempt;

/// A finalized EXECUTION_PLAN with what it was made from. Move-only.
class ExecutionPlan {
 public:
  /// Builds and finalizes a plan for `engine_config` on `graph` (the support
  /// check). A failing finalize is returned in the PlanAttempt, not thrown:
  /// heuristic results that do not support the graph are normal (CUDNN.md §8).
  /// Failures to create or set the descriptor throw CudnnError.
  static PlanAttempt try_build(cudnnHandle_t handle, std::shared_ptr<const OperationGraph> graph,
                               BackendDescriptor engine_config);

  [[nodiscard]] const BackendDescriptor& descriptor() const { return plan_; }
  [[nodiscard]] const EngineConfigInfo& engine() const { return info_; }
  [[nodiscard]] int64_t workspace_bytes() const { return workspace_bytes_; }
  [[nodiscard]] const OperationGraph& graph() const { return *graph_; }

  /// Runs on the stream bound to `handle` (cudnnSetStream). Throws CudnnError
  /// naming the graph and engine on failure.
  void execute(cudnnHandle_t handle, const VariantPack& pack) const;
  /// As execute() but returns the status (used while autotuning).
  [[nodiscard]] cudnnStatus_t try_execute(cudnnHandle_t handle, const VariantPack& pack) const;

 private:
  ExecutionPlan() = default;
  // Declaration order = construction order; the plan is destroyed first.
  std::shared_ptr<const OperationGraph> graph_;
  BackendDescriptor engine_config_;
  BackendDescriptor plan_;
  EngineConfigInfo info_;
  int64_t workspace_bytes_ = 0;
};

/// The outcome of ExecutionPlan::try_build.
struct PlanAttempt {
  std::optional<ExecutionPlan> plan;  ///< set on success
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  std::string message;  ///< why not, when plan is empty
};

/// How find_plans searches.
struct PlanSearchOptions {
  EngineFilter filter;
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  /// Continue with FALLBACK heuristics when `mode` yields fewer than
  /// min(2, max_plans) plans: one plan is enough without autotuning, and two
  /// from `mode` are enough to autotune among (FALLBACK engines are rarely the
  /// fastest, and each costs a finalize).
  bool use_fallback = true;
  /// Engines with the RUNTIME_COMPILATION behaviour note compile a kernel with
  /// NVRTC when finalized (seconds each). When true they are set aside and
  /// finalized only if no other engine yields a plan.
  bool defer_runtime_compilation = false;
  /// Stop after this many plans finalized (1 without autotuning).
  int max_plans = 1;
  /// Plans needing more workspace are skipped (bytes).
  int64_t max_workspace_bytes = int64_t{256} << 20;
  /// cudnnGetVersion() of the loaded library: gates attributes newer than 9.0
  /// (ENGINECFG_WORKSPACE_SIZE needs 9.2; CUDNN.md §8).
  int64_t cudnn_version = 0;
};

/// Builds up to max_plans execution plans for `graph`, in heuristic order:
/// configs of `mode`, then of FALLBACK (see use_fallback), duplicates skipped,
/// each filtered by its notes and workspace and then finalized (configs that do
/// not finalize, or whose attributes cannot be read, are skipped and recorded).
/// Throws BackendError when none is left: no_plan_message() names the graph,
/// the cuDNN version, the number of engine configs tried and why each was
/// rejected.
std::vector<ExecutionPlan> find_plans(cudnnHandle_t handle,
                                      const std::shared_ptr<const OperationGraph>& graph,
                                      const PlanSearchOptions& options);

/// The message of find_plans' error when no engine runs `description` (e.g.
/// "conv wgrad NHWC fp16 x[...] w[...] y[...] ..."): the description, the
/// loaded cuDNN version ("9.19.0" from 91900), how many engine configs the
/// heuristics proposed, and one line per rejected config with the reason.
/// Pure; needs no GPU.
std::string no_plan_message(const std::string& description, int64_t cudnn_version,
                            size_t configs_tried, const std::vector<std::string>& rejected);

/// Times each plan on `stream` (bound to `handle`) with CUDA events: one
/// untimed run (lazy initialisation), then up to `iterations` timed runs, the
/// candidate's time being its fastest run; a candidate whose fastest run is
/// slower than best / 0.95 stops early (CUDNN.md §3). Plans whose execution
/// fails are skipped. `uids`/`pointers` must point at throwaway buffers of the
/// graph's shapes (outputs are overwritten), `workspace` at ≥ every plan's
/// workspace. Returns the index of the fastest plan; `times_ms` gets each
/// plan's time (a negative time marks a failed plan). Throws BackendError when
/// every plan fails or the stream is being captured.
size_t autotune_plans(cudnnHandle_t handle, cudaStream_t stream,
                      std::span<const ExecutionPlan> plans, std::span<const int64_t> uids,
                      std::span<void* const> pointers, void* workspace, int iterations,
                      std::vector<float>* times_ms);

}  // namespace cnnbench::kernels::cuda
