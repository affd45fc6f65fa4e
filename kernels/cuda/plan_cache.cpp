#include "kernels/cuda/plan_cache.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <sstream>

namespace cnnbench::kernels::cuda {
namespace {

// 64-bit hash combining (the finaliser of SplitMix64 over a running state).
uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t z = h ^ (v + 0x9E3779B97F4A7C15ULL + (h << 6U) + (h >> 2U));
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

uint64_t float_bits(float v) {
  if (v == 0.0F) v = 0.0F;  // +0 and −0 compare equal, so they must hash equal
  return std::bit_cast<uint32_t>(v);
}

template <size_t N>
uint64_t mix_all(uint64_t h, const std::array<int64_t, N>& a) {
  for (int64_t v : a) h = mix(h, static_cast<uint64_t>(v));
  return h;
}

PlanOp plan_op(ConvKind kind) {
  switch (kind) {
    case ConvKind::Fprop: return PlanOp::ConvFprop;
    case ConvKind::Dgrad: return PlanOp::ConvDgrad;
    case ConvKind::Wgrad: return PlanOp::ConvWgrad;
  }
  return PlanOp::ConvFprop;
}

TensorKey tensor_key(const TensorLayout& l, cudnnDataType_t type, int64_t alignment) {
  TensorKey t;
  t.dims = l.dims;
  t.strides = l.strides;
  t.data_type = static_cast<int32_t>(type);
  t.alignment = alignment;
  return t;
}

std::string ints(const std::array<int64_t, 4>& a) {
  std::string s(1, '[');
  for (size_t i = 0; i < a.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(a[i]);
  }
  s += ']';
  return s;
}

}  // namespace

size_t PlanKeyHash::operator()(const PlanKey& key) const noexcept {
  uint64_t h = mix(0, static_cast<uint64_t>(key.op));
  for (const TensorKey& t : key.tensors) {
    h = mix_all(h, t.dims);
    h = mix_all(h, t.strides);
    h = mix(h, static_cast<uint64_t>(t.data_type));
    h = mix(h, static_cast<uint64_t>(t.alignment));
  }
  h = mix(h, static_cast<uint64_t>(key.compute_type));
  h = mix_all(h, key.pre_padding);
  h = mix_all(h, key.post_padding);
  h = mix_all(h, key.stride);
  h = mix_all(h, key.dilation);
  h = mix(h, float_bits(key.alpha));
  h = mix(h, float_bits(key.beta));
  h = mix(h, key.engine_filter);
  h = mix(h, static_cast<uint64_t>(key.cudnn_version));
  h = mix(h, static_cast<uint64_t>(key.device));
  return static_cast<size_t>(h);
}

std::string PlanKey::to_string() const {
  static constexpr std::array<const char*, 3> kOps{"conv_fprop", "conv_dgrad", "conv_wgrad"};
  std::ostringstream s;
  s << kOps.at(static_cast<size_t>(op));
  static constexpr std::array<const char*, 3> kNames{"x", "w", "y"};
  for (size_t i = 0; i < tensors.size(); ++i) {
    s << " " << kNames.at(i) << ints(tensors[i].dims) << "/" << ints(tensors[i].strides) << ":"
      << data_type_name(static_cast<cudnnDataType_t>(tensors[i].data_type)) << "@"
      << tensors[i].alignment;
  }
  s << " compute " << data_type_name(static_cast<cudnnDataType_t>(compute_type)) << " pad "
    << pre_padding[0] << "," << pre_padding[1] << "/" << post_padding[0] << "," << post_padding[1]
    << " stride " << stride[0] << "," << stride[1] << " dil " << dilation[0] << "," << dilation[1]
    << " alpha " << alpha << " beta " << beta << " filter " << engine_filter << " cudnn "
    << cudnn_version << " device " << device;
  return s.str();
}

PlanKey conv_plan_key(const ConvConfig& config, int64_t cudnn_version, int device) {
  const ConvShape& sh = config.shape;
  const cudnnDataType_t io = to_cudnn(storage_dtype(config.precision));
  PlanKey key;
  key.op = plan_op(config.kind);
  key.tensors[0] = tensor_key(conv_x_layout(sh, config.format), io, config.alignment);
  key.tensors[1] = tensor_key(conv_w_layout(sh, config.format), io, config.alignment);
  key.tensors[2] = tensor_key(conv_y_layout(sh, config.format), io, config.alignment);
  key.compute_type = static_cast<int32_t>(CUDNN_DATA_FLOAT);
  key.pre_padding = {sh.pad_h, sh.pad_w};
  key.post_padding = {sh.pad_h, sh.pad_w};
  key.stride = {sh.stride_h, sh.stride_w};
  key.dilation = {sh.dilation_h, sh.dilation_w};
  key.alpha = config.alpha;
  key.beta = config.beta;
  key.engine_filter = config.engine_filter().bits();
  key.cudnn_version = cudnn_version;
  key.device = device;
  return key;
}

const EngineChoice* EngineChoiceCache::find(const PlanKey& key) const {
  const auto it = choices_.find(key);
  return it == choices_.end() ? nullptr : &it->second;
}

void EngineChoiceCache::insert(const PlanKey& key, EngineChoice choice) {
  choices_.insert_or_assign(key, std::move(choice));
}

std::vector<std::pair<PlanKey, EngineChoice>> EngineChoiceCache::entries() const {
  return {choices_.begin(), choices_.end()};
}

std::shared_ptr<const ConvPlan> PlanCache::conv_plan(const DeviceContext& ctx,
                                                     const ConvConfig& config,
                                                     const ConvBuildOptions& options) {
  const PlanKey key = conv_plan_key(config, ctx.cudnn_version, ctx.device);
  if (const auto it = plans_.find(key); it != plans_.end()) {
    ++stats_.hits;
    return it->second;
  }
  const EngineChoice* preferred = choices_.find(key);
  const auto start = std::chrono::steady_clock::now();
  auto plan = std::make_shared<const ConvPlan>(ctx, config, options, preferred);
  stats_.build_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats_.autotune_s += plan->autotune_seconds();
  ++stats_.builds;
  if (plan->from_preferred_choice()) ++stats_.engine_choice_reuses;
  if (plan->candidates() > 1 && plan->autotuned_ms() >= 0.0F) ++stats_.autotuned;
  choices_.insert(key, plan->engine().choice);
  plans_.emplace(key, plan);
  return plan;
}

int64_t PlanCache::max_workspace_bytes() const {
  int64_t bytes = 0;
  for (const auto& entry : plans_) bytes = std::max(bytes, entry.second->workspace_bytes());
  return bytes;
}

}  // namespace cnnbench::kernels::cuda
