// The cuDNN graph-API layer (cudnn_graph.h). Longer than most files on purpose:
// descriptors, builders, heuristics, plans and autotuning share one set of
// attribute plumbing and error messages; split, each part would carry a copy.
#include "kernels/cuda/cudnn_graph.h"

#include <algorithm>
#include <array>
#include <limits>
#include <sstream>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::kernels::cuda {
namespace {

[[noreturn]] void throw_cudnn(cudnnStatus_t status, const std::string& what) {
  throw CudnnError("cuDNN " + cudnn_status_text(status) + " " + what, status);
}

std::string join_ints(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i != 0) s += ",";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

bool is_not_supported(cudnnStatus_t status) {
  return CUDNN_STATUS_CATEGORY(static_cast<int>(status)) == CUDNN_STATUS_NOT_SUPPORTED;
}

// The attribute CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE exists from cuDNN 9.2.
constexpr int64_t kEngineCfgWorkspaceSizeVersion = 90200;

}  // namespace

// --------------------------------------------------------------------------
// Names for messages.
// --------------------------------------------------------------------------

std::string cudnn_status_text(cudnnStatus_t status) {
  std::string text = cudnnGetErrorString(status);
  std::array<char, 1024> last{};
  cudnnGetLastErrorString(last.data(), last.size());
  if (last[0] != '\0') text += std::string(" (") + last.data() + ")";
  return text;
}

std::string attribute_name(cudnnBackendAttributeName_t name) {
  switch (name) {
#define CNNBENCH_ATTR(n) \
  case n: return #n;
    CNNBENCH_ATTR(CUDNN_ATTR_POINTWISE_MODE)
    CNNBENCH_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC)
    CNNBENCH_ATTR(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP)
    CNNBENCH_ATTR(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_COMP_TYPE)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_CONV_MODE)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_DILATIONS)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS)
    CNNBENCH_ATTR(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINEHEUR_RESULTS)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINECFG_ENGINE)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE)
    CNNBENCH_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE)
    CNNBENCH_ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)
    CNNBENCH_ATTR(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)
    CNNBENCH_ATTR(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE)
    CNNBENCH_ATTR(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_STRIDES)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL)
    CNNBENCH_ATTR(CUDNN_ATTR_TENSOR_IS_BY_VALUE)
    CNNBENCH_ATTR(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)
    CNNBENCH_ATTR(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)
    CNNBENCH_ATTR(CUDNN_ATTR_VARIANT_PACK_WORKSPACE)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINE_OPERATION_GRAPH)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINE_GLOBAL_INDEX)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINE_KNOB_INFO)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINE_NUMERICAL_NOTE)
    CNNBENCH_ATTR(CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE)
    CNNBENCH_ATTR(CUDNN_ATTR_REDUCTION_OPERATOR)
    CNNBENCH_ATTR(CUDNN_ATTR_REDUCTION_COMP_TYPE)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_XDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_YDESC)
    CNNBENCH_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_DESC)
#undef CNNBENCH_ATTR
    default: return "attribute #" + std::to_string(static_cast<int>(name));
  }
}

std::string descriptor_type_name(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: return "POINTWISE";
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: return "CONVOLUTION";
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR: return "ENGINE";
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR: return "ENGINECFG";
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR: return "ENGINEHEUR";
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: return "EXECUTION_PLAN";
    case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR: return "KNOB_CHOICE";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return "OPERATION_CONVOLUTION_FORWARD";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return "OPERATION_CONVOLUTION_BACKWARD_FILTER";
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return "OPERATION_CONVOLUTION_BACKWARD_DATA";
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return "OPERATION_POINTWISE";
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: return "OPERATIONGRAPH";
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: return "VARIANT_PACK";
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR: return "TENSOR";
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR: return "REDUCTION";
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return "OPERATION_REDUCTION";
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR: return "OPERATION_NORM_FORWARD";
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR: return "OPERATION_NORM_BACKWARD";
    default: return "descriptor type #" + std::to_string(static_cast<int>(type));
  }
}

std::string attribute_type_name(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE: return "HANDLE";
    case CUDNN_TYPE_DATA_TYPE: return "DATA_TYPE";
    case CUDNN_TYPE_BOOLEAN: return "BOOLEAN";
    case CUDNN_TYPE_INT64: return "INT64";
    case CUDNN_TYPE_FLOAT: return "FLOAT";
    case CUDNN_TYPE_DOUBLE: return "DOUBLE";
    case CUDNN_TYPE_VOID_PTR: return "VOID_PTR";
    case CUDNN_TYPE_CONVOLUTION_MODE: return "CONVOLUTION_MODE";
    case CUDNN_TYPE_HEUR_MODE: return "HEUR_MODE";
    case CUDNN_TYPE_KNOB_TYPE: return "KNOB_TYPE";
    case CUDNN_TYPE_NUMERICAL_NOTE: return "NUMERICAL_NOTE";
    case CUDNN_TYPE_POINTWISE_MODE: return "POINTWISE_MODE";
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return "BACKEND_DESCRIPTOR";
    case CUDNN_TYPE_GENSTATS_MODE: return "GENSTATS_MODE";
    case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE: return "REDUCTION_OPERATOR_TYPE";
    case CUDNN_TYPE_BEHAVIOR_NOTE: return "BEHAVIOR_NOTE";
    case CUDNN_TYPE_RESAMPLE_MODE: return "RESAMPLE_MODE";
    case CUDNN_TYPE_PADDING_MODE: return "PADDING_MODE";
    case CUDNN_TYPE_INT32: return "INT32";
    case CUDNN_TYPE_CHAR: return "CHAR";
    case CUDNN_TYPE_FRACTION: return "FRACTION";
    case CUDNN_TYPE_NORM_MODE: return "NORM_MODE";
    case CUDNN_TYPE_NORM_FWD_PHASE: return "NORM_FWD_PHASE";
    default: return "attribute type #" + std::to_string(static_cast<int>(type));
  }
}

std::string data_type_name(cudnnDataType_t type) {
  switch (type) {
    case CUDNN_DATA_FLOAT: return "FLOAT";
    case CUDNN_DATA_DOUBLE: return "DOUBLE";
    case CUDNN_DATA_HALF: return "HALF";
    case CUDNN_DATA_BFLOAT16: return "BFLOAT16";
    case CUDNN_DATA_INT32: return "INT32";
    case CUDNN_DATA_INT64: return "INT64";
    case CUDNN_DATA_INT8: return "INT8";
    case CUDNN_DATA_UINT8: return "UINT8";
    case CUDNN_DATA_BOOLEAN: return "BOOLEAN";
    default: return "data type #" + std::to_string(static_cast<int>(type));
  }
}

std::string numerical_note_name(cudnnBackendNumericalNote_t note) {
  switch (note) {
    case CUDNN_NUMERICAL_NOTE_TENSOR_CORE: return "TENSOR_CORE";
    case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS: return "DOWN_CONVERT_INPUTS";
    case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION: return "REDUCED_PRECISION_REDUCTION";
    case CUDNN_NUMERICAL_NOTE_FFT: return "FFT";
    case CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: return "NONDETERMINISTIC";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD: return "WINOGRAD";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4: return "WINOGRAD_TILE_4x4";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6: return "WINOGRAD_TILE_6x6";
    case CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13: return "WINOGRAD_TILE_13x13";
#if CUDNN_VERSION >= 90100  // the enumerator exists from cuDNN 9.1
    case CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP: return "STRICT_NAN_PROP";
#endif
    default: return "numerical note #" + std::to_string(static_cast<int>(note));
  }
}

std::string behavior_note_name(cudnnBackendBehaviorNote_t note) {
  switch (note) {
    case CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION: return "RUNTIME_COMPILATION";
    case CUDNN_BEHAVIOR_NOTE_REQUIRES_FILTER_INT8x32_REORDER:
      return "REQUIRES_FILTER_INT8x32_REORDER";
    case CUDNN_BEHAVIOR_NOTE_REQUIRES_BIAS_INT8x32_REORDER: return "REQUIRES_BIAS_INT8x32_REORDER";
#if CUDNN_VERSION >= 90500  // from cuDNN 9.5
    case CUDNN_BEHAVIOR_NOTE_SUPPORTS_CUDA_GRAPH_NATIVE_API:
      return "SUPPORTS_CUDA_GRAPH_NATIVE_API";
#endif
#if CUDNN_VERSION >= 91500  // from cuDNN 9.15
    case CUDNN_BEHAVIOR_NOTE_CUBLASLT_DEPENDENCY: return "CUBLASLT_DEPENDENCY";
#endif
    default: return "behavior note #" + std::to_string(static_cast<int>(note));
  }
}

// --------------------------------------------------------------------------
// BackendDescriptor.
// --------------------------------------------------------------------------

BackendDescriptor::BackendDescriptor(cudnnBackendDescriptorType_t type, std::string label)
    : type_(type), label_(std::move(label)) {
  const cudnnStatus_t st = cudnnBackendCreateDescriptor(type, &d_);
  if (st != CUDNN_STATUS_SUCCESS) {
    d_ = nullptr;
    throw_cudnn(st, "creating a " + descriptor_type_name(type) + " descriptor for " + label_);
  }
}

BackendDescriptor::~BackendDescriptor() { reset(); }

BackendDescriptor::BackendDescriptor(BackendDescriptor&& o) noexcept
    : d_(std::exchange(o.d_, nullptr)),
      type_(o.type_),
      label_(std::move(o.label_)),
      finalized_(std::exchange(o.finalized_, false)) {}

BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& o) noexcept {
  if (this != &o) {
    reset();
    d_ = std::exchange(o.d_, nullptr);
    type_ = o.type_;
    label_ = std::move(o.label_);
    finalized_ = std::exchange(o.finalized_, false);
  }
  return *this;
}

void BackendDescriptor::reset() noexcept {
  if (d_ != nullptr) (void)cudnnBackendDestroyDescriptor(d_);
  d_ = nullptr;
  finalized_ = false;
}

void BackendDescriptor::set_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                int64_t count, const void* data) {
  if (d_ == nullptr) {
    throw BackendError("setting " + attribute_name(name) + " on an empty descriptor (" + label_ +
                       ")");
  }
  const cudnnStatus_t st = cudnnBackendSetAttribute(d_, name, type, count, data);
  if (st != CUDNN_STATUS_SUCCESS) {
    throw_cudnn(st, "setting " + attribute_name(name) + " [" + attribute_type_name(type) + " x" +
                        std::to_string(count) + "] on " + descriptor_type_name(type_) +
                        " descriptor for " + label_);
  }
}

void BackendDescriptor::set_descriptor(cudnnBackendAttributeName_t name,
                                       const BackendDescriptor& value) {
  if (value.empty()) {
    throw BackendError("setting " + attribute_name(name) + " on " + descriptor_type_name(type_) +
                       " descriptor for " + label_ + " to an empty descriptor");
  }
  cudnnBackendDescriptor_t raw = value.get();
  set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

void BackendDescriptor::set_descriptors(cudnnBackendAttributeName_t name,
                                        std::span<const BackendDescriptor* const> values) {
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(values.size());
  for (const BackendDescriptor* v : values) {
    if (v == nullptr || v->empty()) {
      throw BackendError("setting " + attribute_name(name) + " on " + descriptor_type_name(type_) +
                         " descriptor for " + label_ + ": element " + std::to_string(raw.size()) +
                         " is empty");
    }
    raw.push_back(v->get());
  }
  set_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()), raw.data());
}

cudnnStatus_t BackendDescriptor::try_finalize() {
  if (d_ == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  const cudnnStatus_t st = cudnnBackendFinalize(d_);
  finalized_ = st == CUDNN_STATUS_SUCCESS;
  return st;
}

void BackendDescriptor::finalize() {
  const cudnnStatus_t st = try_finalize();
  if (st != CUDNN_STATUS_SUCCESS) {
    throw_cudnn(st, "finalizing " + descriptor_type_name(type_) + " descriptor for " + label_);
  }
}

void BackendDescriptor::get_raw(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                int64_t requested, int64_t* count, void* data) const {
  if (d_ == nullptr) {
    throw BackendError("reading " + attribute_name(name) + " from an empty descriptor (" + label_ +
                       ")");
  }
  const cudnnStatus_t st = cudnnBackendGetAttribute(d_, name, type, requested, count, data);
  if (st != CUDNN_STATUS_SUCCESS) {
    throw_cudnn(st, "reading " + attribute_name(name) + " [" + attribute_type_name(type) + " x" +
                        std::to_string(requested) + "] from " + descriptor_type_name(type_) +
                        " descriptor for " + label_);
  }
}

int64_t BackendDescriptor::get_count(cudnnBackendAttributeName_t name,
                                     cudnnBackendAttributeType_t type) const {
  int64_t count = 0;
  get_raw(name, type, 0, &count, nullptr);
  return count;
}

std::vector<BackendDescriptor> BackendDescriptor::get_descriptors(
    cudnnBackendAttributeName_t name, cudnnBackendDescriptorType_t element_type, int64_t max_count,
    const std::string& element_label) const {
  std::vector<BackendDescriptor> out;
  if (max_count <= 0) return out;
  out.reserve(static_cast<size_t>(max_count));
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(static_cast<size_t>(max_count));
  for (int64_t i = 0; i < max_count; ++i) {
    out.emplace_back(element_type, element_label + " #" + std::to_string(i));
    raw.push_back(out.back().get());
  }
  int64_t count = 0;
  get_raw(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, max_count, &count, raw.data());
  out.resize(static_cast<size_t>(std::clamp<int64_t>(count, 0, max_count)));
  // cuDNN hands back finalized descriptors (heuristic results, engine, knobs).
  for (auto& d : out) d.finalized_ = true;
  return out;
}

// --------------------------------------------------------------------------
// Builders.
// --------------------------------------------------------------------------

BackendDescriptor make_tensor(const TensorSpec& spec, const std::string& context) {
  const std::string label = "tensor " + spec.name + " (uid " + std::to_string(spec.uid) + ", " +
                            data_type_name(spec.data_type) + ", dims " + join_ints(spec.dims) +
                            ", strides " + join_ints(spec.strides) + ", align " +
                            std::to_string(spec.byte_alignment) + ") of " + context;
  if (spec.dims.empty() || spec.dims.size() > CUDNN_DIM_MAX ||
      spec.dims.size() != spec.strides.size()) {
    throw BackendError("invalid " + label + ": dims and strides need 1.." +
                       std::to_string(CUDNN_DIM_MAX) + " elements each, equal counts");
  }
  BackendDescriptor t(CUDNN_BACKEND_TENSOR_DESCRIPTOR, label);
  t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, spec.uid);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, spec.data_type);
  t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, spec.dims);
  t.set(CUDNN_ATTR_TENSOR_STRIDES, spec.strides);
  t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, spec.byte_alignment);
  if (spec.is_virtual) t.set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, true);
  if (spec.is_by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, true);
  t.finalize();
  return t;
}

BackendDescriptor make_convolution(const ConvolutionSpec& spec, const std::string& context) {
  const auto spatial = static_cast<int64_t>(spec.strides.size());
  const std::string label = "convolution (compute " + data_type_name(spec.compute_type) +
                            ", pre-pad " + join_ints(spec.pre_paddings) + ", post-pad " +
                            join_ints(spec.post_paddings) + ", stride " + join_ints(spec.strides) +
                            ", dilation " + join_ints(spec.dilations) + ") of " + context;
  if (spatial < 1 || static_cast<int64_t>(spec.pre_paddings.size()) != spatial ||
      static_cast<int64_t>(spec.post_paddings.size()) != spatial ||
      static_cast<int64_t>(spec.dilations.size()) != spatial) {
    throw BackendError("invalid " + label +
                       ": paddings, strides and dilations need one value per spatial dimension");
  }
  BackendDescriptor c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, label);
  c.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, spec.compute_type);
  c.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_CROSS_CORRELATION);
  c.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, spatial);
  c.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, spec.pre_paddings);
  c.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, spec.post_paddings);
  c.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, spec.dilations);
  c.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, spec.strides);
  c.finalize();
  return c;
}

BackendDescriptor make_conv_forward(const BackendDescriptor& x, const BackendDescriptor& w,
                                    const BackendDescriptor& y, const BackendDescriptor& conv,
                                    float alpha, float beta, const std::string& context) {
  BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                       "convolution forward operation of " + context);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, alpha);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, beta);
  op.finalize();
  return op;
}

BackendDescriptor make_conv_backward_data(const BackendDescriptor& dx, const BackendDescriptor& w,
                                          const BackendDescriptor& dy,
                                          const BackendDescriptor& conv, float alpha, float beta,
                                          const std::string& context) {
  BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                       "convolution backward-data operation of " + context);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, dx);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, dy);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, alpha);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, beta);
  op.finalize();
  return op;
}

BackendDescriptor make_conv_backward_filter(const BackendDescriptor& dw, const BackendDescriptor& x,
                                            const BackendDescriptor& dy,
                                            const BackendDescriptor& conv, float alpha, float beta,
                                            const std::string& context) {
  BackendDescriptor op(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                       "convolution backward-filter operation of " + context);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, dw);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, dy);
  op.set_descriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, conv);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, alpha);
  op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, beta);
  op.finalize();
  return op;
}

// --------------------------------------------------------------------------
// OperationGraph.
// --------------------------------------------------------------------------

OperationGraph::OperationGraph(cudnnHandle_t handle, std::vector<BackendDescriptor> descriptors,
                               std::vector<BackendDescriptor> ops, std::string description)
    : descriptors_(std::move(descriptors)),
      ops_(std::move(ops)),
      description_(std::move(description)) {
  if (ops_.empty()) throw BackendError("operation graph with no operations: " + description_);
  graph_ = BackendDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                             "operation graph of " + description_);
  std::vector<const BackendDescriptor*> op_ptrs;
  op_ptrs.reserve(ops_.size());
  for (const auto& op : ops_) op_ptrs.push_back(&op);
  graph_.set_descriptors(CUDNN_ATTR_OPERATIONGRAPH_OPS, op_ptrs);
  // Deprecated in 9.19 and optional from 9.8, but required by older 9.x
  // runtimes, which the GPU host may have (CUDNN.md §3): always set.
  graph_.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, handle);
  graph_.finalize();
}

int64_t OperationGraph::engine_global_count() const {
  return graph_.get<int64_t>(CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT);
}

// --------------------------------------------------------------------------
// Engines and heuristics.
// --------------------------------------------------------------------------

std::string EngineChoice::to_string() const {
  std::string s = "eng" + std::to_string(global_index);
  for (const auto& k : knobs) {
    s += " k" + std::to_string(static_cast<int>(k.type)) + "=" + std::to_string(k.value);
  }
  return s;
}

bool EngineConfigInfo::has(cudnnBackendNumericalNote_t note) const {
  return std::find(numerical_notes.begin(), numerical_notes.end(), note) != numerical_notes.end();
}

bool EngineConfigInfo::has(cudnnBackendBehaviorNote_t note) const {
  return std::find(behavior_notes.begin(), behavior_notes.end(), note) != behavior_notes.end();
}

std::string EngineConfigInfo::to_string() const {
  std::string s = choice.to_string();
  for (auto n : numerical_notes) {
    s += ' ';
    s += numerical_note_name(n);
  }
  for (auto n : behavior_notes) {
    s += ' ';
    s += behavior_note_name(n);
  }
  return s;
}

EngineConfigInfo describe_engine_config(const BackendDescriptor& engine_config) {
  EngineConfigInfo info;
  auto engines =
      engine_config.get_descriptors(CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR, 1,
                                    "engine of " + engine_config.label());
  if (engines.empty()) {
    throw BackendError("engine config without an engine: " + engine_config.label());
  }
  const BackendDescriptor& engine = engines.front();
  info.choice.global_index = engine.get<int64_t>(CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
  info.numerical_notes = engine.get_array<cudnnBackendNumericalNote_t>(
      CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  info.behavior_notes = engine.get_array<cudnnBackendBehaviorNote_t>(
      CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT);
  // At most one choice per knob type, so CUDNN_KNOB_TYPE_COUNTS bounds the count.
  auto knobs = engine_config.get_descriptors(
      CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
      CUDNN_KNOB_TYPE_COUNTS, "knob choice of " + engine_config.label());
  for (const auto& k : knobs) {
    info.choice.knobs.push_back(
        KnobChoice{k.get<cudnnBackendKnobType_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE),
                   k.get<int64_t>(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE)});
  }
  return info;
}

std::vector<BackendDescriptor> heuristic_engine_configs(const OperationGraph& graph,
                                                        cudnnBackendHeurMode_t mode) {
  const std::string mode_name = mode == CUDNN_HEUR_MODE_A          ? "A"
                                : mode == CUDNN_HEUR_MODE_B        ? "B"
                                : mode == CUDNN_HEUR_MODE_FALLBACK ? "FALLBACK"
                                                                   : "INSTANT";
  BackendDescriptor heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR,
                         "heuristics (mode " + mode_name + ") of " + graph.description());
  heur.set_descriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph.descriptor());
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, mode);
  heur.finalize();
  const int64_t count =
      heur.get_count(CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR);
  return heur.get_descriptors(
      CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, count,
      "engine config (heuristics " + mode_name + ") of " + graph.description());
}

BackendDescriptor make_engine_config(const OperationGraph& graph, const EngineChoice& choice) {
  const std::string label = "engine config " + choice.to_string() + " of " + graph.description();
  const int64_t count = graph.engine_global_count();
  if (choice.global_index < 0 || choice.global_index >= count) {
    throw BackendError("cannot rebuild " + label + ": the graph has engines 0.." +
                       std::to_string(count - 1));
  }
  BackendDescriptor engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine of " + label);
  engine.set_descriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph.descriptor());
  engine.set(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, choice.global_index);
  engine.finalize();
  std::vector<BackendDescriptor> knobs;
  knobs.reserve(choice.knobs.size());
  for (const auto& k : choice.knobs) {
    BackendDescriptor kc(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                         "knob " + std::to_string(static_cast<int>(k.type)) + " of " + label);
    kc.set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, k.type);
    kc.set(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, k.value);
    kc.finalize();
    knobs.push_back(std::move(kc));
  }
  BackendDescriptor cfg(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, label);
  cfg.set_descriptor(CUDNN_ATTR_ENGINECFG_ENGINE, engine);
  if (!knobs.empty()) {
    std::vector<const BackendDescriptor*> ptrs;
    ptrs.reserve(knobs.size());
    for (const auto& k : knobs) ptrs.push_back(&k);
    cfg.set_descriptors(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, ptrs);
  }
  cfg.finalize();
  return cfg;
}

std::string EngineFilter::reject_reason(const EngineConfigInfo& info) const {
  if (!allow_tensor_core && info.has(CUDNN_NUMERICAL_NOTE_TENSOR_CORE))
    return "numerical note TENSOR_CORE";
  if (!allow_down_convert_inputs && info.has(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) {
    return "numerical note DOWN_CONVERT_INPUTS";
  }
  if (!allow_reduced_precision_reduction &&
      info.has(CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)) {
    return "numerical note REDUCED_PRECISION_REDUCTION";
  }
  if (!allow_nondeterministic && info.has(CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC)) {
    return "numerical note NONDETERMINISTIC";
  }
  if (!allow_runtime_compilation && info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) {
    return "behavior note RUNTIME_COMPILATION";
  }
  return {};
}

uint32_t EngineFilter::bits() const {
  return (allow_tensor_core ? 1U : 0U) | (allow_down_convert_inputs ? 2U : 0U) |
         (allow_reduced_precision_reduction ? 4U : 0U) | (allow_nondeterministic ? 8U : 0U) |
         (allow_runtime_compilation ? 16U : 0U);
}

// --------------------------------------------------------------------------
// Variant pack and execution plans.
// --------------------------------------------------------------------------

VariantPack::VariantPack(std::span<const int64_t> uids, std::span<void* const> pointers,
                         void* workspace, const std::string& context) {
  if (uids.size() != pointers.size()) {
    throw BackendError("variant pack of " + context + ": " + std::to_string(uids.size()) +
                       " uids but " + std::to_string(pointers.size()) + " pointers");
  }
  pack_ = BackendDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, "variant pack of " + context);
  pack_.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, uids);
  pack_.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, pointers);
  pack_.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, workspace);
  pack_.finalize();
}

PlanAttempt ExecutionPlan::try_build(cudnnHandle_t handle,
                                     std::shared_ptr<const OperationGraph> graph,
                                     BackendDescriptor engine_config) {
  PlanAttempt attempt;
  ExecutionPlan p;
  p.info_ = describe_engine_config(engine_config);
  p.plan_ = BackendDescriptor(
      CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR,
      "execution plan " + p.info_.choice.to_string() + " of " + graph->description());
  p.plan_.set_descriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, engine_config);
  // Deprecated in 9.19 and optional from 9.8, required before: always set.
  p.plan_.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, handle);
  attempt.status = p.plan_.try_finalize();
  if (attempt.status != CUDNN_STATUS_SUCCESS) {
    attempt.message = p.info_.to_string() + ": finalize " + cudnn_status_text(attempt.status);
    return attempt;
  }
  p.workspace_bytes_ = p.plan_.get<int64_t>(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
  p.engine_config_ = std::move(engine_config);
  p.graph_ = std::move(graph);
  attempt.plan = std::move(p);
  return attempt;
}

cudnnStatus_t ExecutionPlan::try_execute(cudnnHandle_t handle, const VariantPack& pack) const {
  return cudnnBackendExecute(handle, plan_.get(), pack.descriptor().get());
}

void ExecutionPlan::execute(cudnnHandle_t handle, const VariantPack& pack) const {
  const cudnnStatus_t st = try_execute(handle, pack);
  if (st != CUDNN_STATUS_SUCCESS) {
    throw_cudnn(st, "executing plan " + info_.choice.to_string() + " (workspace " +
                        std::to_string(workspace_bytes_) + " bytes) of " + graph_->description());
  }
}

std::string no_plan_message(const std::string& description, int64_t cudnn_version,
                            size_t configs_tried, const std::vector<std::string>& rejected) {
  std::ostringstream msg;
  msg << "cuDNN " << cudnn_version / 10000 << "." << (cudnn_version / 100) % 100 << "."
      << cudnn_version % 100 << " has no execution plan for " << description << ": "
      << configs_tried << " engine config(s) tried";
  if (configs_tried == 0) msg << " (the heuristics proposed none)";
  msg << ", " << rejected.size() << " rejected";
  for (const auto& r : rejected) msg << "\n  " << r;
  return msg.str();
}

std::vector<ExecutionPlan> find_plans(cudnnHandle_t handle,
                                      const std::shared_ptr<const OperationGraph>& graph,
                                      const PlanSearchOptions& options) {
  std::vector<ExecutionPlan> plans;
  std::vector<EngineChoice> seen;
  std::vector<std::string> rejected;
  std::vector<std::pair<BackendDescriptor, EngineConfigInfo>> deferred;
  size_t tried = 0;
  const int max_plans = std::max(1, options.max_plans);

  // Finalizes one admitted config into a plan, or records why not.
  auto build = [&](BackendDescriptor cfg, const EngineConfigInfo& info) {
    PlanAttempt attempt = ExecutionPlan::try_build(handle, graph, std::move(cfg));
    if (!attempt.plan) {
      rejected.push_back(attempt.message +
                         (is_not_supported(attempt.status) ? " (not supported)" : ""));
      return;
    }
    if (attempt.plan->workspace_bytes() > options.max_workspace_bytes) {
      rejected.push_back(info.to_string() + ": workspace " +
                         std::to_string(attempt.plan->workspace_bytes()) + " bytes > limit " +
                         std::to_string(options.max_workspace_bytes));
      return;
    }
    plans.push_back(std::move(*attempt.plan));
  };

  auto consider = [&](cudnnBackendHeurMode_t mode) {
    std::vector<BackendDescriptor> configs;
    try {
      configs = heuristic_engine_configs(*graph, mode);
    } catch (const CudnnError& e) {
      // One mode failing (e.g. not supported for this graph) leaves the other.
      rejected.push_back(std::string("heuristics query failed: ") + e.what());
      return;
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      if (static_cast<int>(plans.size()) >= max_plans) return;
      BackendDescriptor& cfg = configs[i];
      EngineConfigInfo info;
      try {
        info = describe_engine_config(cfg);
      } catch (const BackendError& e) {
        // One config whose engine or knobs cannot be read is skipped; the
        // search goes on with the others.
        ++tried;
        rejected.push_back("engine config #" + std::to_string(i) +
                           ": attributes unreadable (" + e.what() + ")");
        continue;
      }
      if (std::find(seen.begin(), seen.end(), info.choice) != seen.end()) continue;
      seen.push_back(info.choice);
      ++tried;
      if (std::string why = options.filter.reject_reason(info); !why.empty()) {
        rejected.push_back(info.to_string() + ": filtered out (" + why + ")");
        continue;
      }
#if CUDNN_VERSION >= 90200  // the attribute exists from cuDNN 9.2
      if (options.cudnn_version >= kEngineCfgWorkspaceSizeVersion) {
        // Cheap pre-check before the (possibly slow) plan finalize; an engine
        // that cannot answer is left to the plan's own workspace size below.
        int64_t ws = 0;
        try {
          ws = cfg.get<int64_t>(CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE);
        } catch (const CudnnError&) {
          ws = 0;
        }
        if (ws > options.max_workspace_bytes) {
          rejected.push_back(info.to_string() + ": workspace " + std::to_string(ws) +
                             " bytes > limit " + std::to_string(options.max_workspace_bytes));
          continue;
        }
      }
#endif
      if (options.defer_runtime_compilation && info.has(CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION)) {
        deferred.emplace_back(std::move(cfg), info);
        continue;
      }
      build(std::move(cfg), info);
    }
  };

  consider(options.mode);
  if (static_cast<int>(plans.size()) < std::min(2, max_plans) && options.use_fallback &&
      options.mode != CUDNN_HEUR_MODE_FALLBACK) {
    consider(CUDNN_HEUR_MODE_FALLBACK);
  }
  if (plans.empty()) {
    // Only runtime-compiled engines are left: compiling one beats failing.
    for (auto& [cfg, info] : deferred) {
      if (!plans.empty()) break;
      build(std::move(cfg), info);
    }
  }
  if (plans.empty()) {
    throw BackendError(
        no_plan_message(graph->description(), options.cudnn_version, tried, rejected));
  }
  return plans;
}

size_t autotune_plans(cudnnHandle_t handle, cudaStream_t stream,
                      std::span<const ExecutionPlan> plans, std::span<const int64_t> uids,
                      std::span<void* const> pointers, void* workspace, int iterations,
                      std::vector<float>* times_ms) {
  if (plans.empty()) throw BackendError("autotune: no plans");
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CNNBENCH_CHECK_CUDA(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    throw BackendError(
        "autotune of " + plans.front().graph().description() +
        " while the stream is being captured into a CUDA graph: build plans at set-up");
  }
  const VariantPack pack(uids, pointers, workspace, plans.front().graph().description());
  const Event start;
  const Event stop;
  std::vector<float> times(plans.size(), -1.0F);
  float best = std::numeric_limits<float>::infinity();
  size_t best_index = plans.size();
  constexpr float kStopRatio = 0.95F;  // CUDNN.md §3: stop once clearly slower than the best
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].try_execute(handle, pack) != CUDNN_STATUS_SUCCESS) continue;  // untimed warm-up
    CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    float fastest = std::numeric_limits<float>::infinity();
    bool failed = false;
    for (int it = 0; it < std::max(1, iterations); ++it) {
      start.record(stream);
      if (plans[i].try_execute(handle, pack) != CUDNN_STATUS_SUCCESS) {
        failed = true;
        break;
      }
      stop.record(stream);
      CNNBENCH_CHECK_CUDA(cudaEventSynchronize(stop.get()));
      fastest = std::min(fastest, stop.elapsed_ms_since(start));
      if (fastest * kStopRatio > best) break;
    }
    CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
    if (failed) continue;
    times[i] = fastest;
    if (fastest < best) {
      best = fastest;
      best_index = i;
    }
  }
  if (times_ms != nullptr) *times_ms = times;
  if (best_index == plans.size()) {
    throw BackendError("autotune: every candidate plan failed to execute for " +
                       plans.front().graph().description());
  }
  return best_index;
}

}  // namespace cnnbench::kernels::cuda
