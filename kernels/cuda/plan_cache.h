// Caches of cuDNN convolution plans, owned by an executable (or one per
// DeviceContext and thread; no global state, not thread-safe). ResNet-50 has
// 53 convolutions but far fewer distinct shapes, so plans are keyed by
// everything that defines them and built once per key:
//   PlanCache         key → finalized ConvPlan (shared with the layers using it)
//   EngineChoiceCache key → (engine global index, knob choices), kept apart so
//                     that a later feature can persist autotune results and
//                     rebuild plans without timing them again.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cuda/conv.h"
#include "kernels/cuda/cudnn_graph.h"

namespace cnnbench::kernels::cuda {

/// Which graph a plan computes.
enum class PlanOp : int32_t { ConvFprop = 0, ConvDgrad = 1, ConvWgrad = 2 };

/// One tensor of a plan's graph, as cuDNN sees it.
struct TensorKey {
  std::array<int64_t, 4> dims{};
  std::array<int64_t, 4> strides{};
  int32_t data_type = 0;  ///< cudnnDataType_t
  int64_t alignment = 0;  ///< bytes promised
  friend bool operator==(const TensorKey&, const TensorKey&) = default;
};

/// Everything that makes two plans interchangeable: op kind, tensors (dims,
/// strides, data types, alignments), convolution parameters, compute type,
/// alpha/beta, the engine filter (precision rules, determinism), the cuDNN
/// version and the device ordinal (CUDNN.md §4).
struct PlanKey {
  PlanOp op = PlanOp::ConvFprop;
  std::array<TensorKey, 3> tensors{};  ///< x/dx, w/dw, y/dy
  int32_t compute_type = 0;            ///< cudnnDataType_t
  std::array<int64_t, 2> pre_padding{};
  std::array<int64_t, 2> post_padding{};
  std::array<int64_t, 2> stride{};
  std::array<int64_t, 2> dilation{};
  float alpha = 1.0F;
  float beta = 0.0F;
  uint32_t engine_filter = 0;  ///< EngineFilter::bits()
  int64_t cudnn_version = 0;   ///< cudnnGetVersion() of the loaded library
  int device = 0;              ///< CUDA ordinal
  friend bool operator==(const PlanKey&, const PlanKey&) = default;
  [[nodiscard]] std::string to_string() const;
};

/// Hash of every PlanKey field (equal keys hash equal; +0 and −0 alike).
struct PlanKeyHash {
  size_t operator()(const PlanKey& key) const noexcept;
};

/// The key of a convolution config on a cuDNN version and device. Pure: needs
/// no GPU.
PlanKey conv_plan_key(const ConvConfig& config, int64_t cudnn_version, int device);

/// key → engine choice (the autotuner's winner, or the heuristics' first
/// working config). Separate from the plans so it can be saved and loaded.
class EngineChoiceCache {
 public:
  [[nodiscard]] const EngineChoice* find(const PlanKey& key) const;
  void insert(const PlanKey& key, EngineChoice choice);  ///< replaces an existing entry
  [[nodiscard]] size_t size() const { return choices_.size(); }
  /// All entries, for persisting.
  [[nodiscard]] std::vector<std::pair<PlanKey, EngineChoice>> entries() const;

 private:
  std::unordered_map<PlanKey, EngineChoice, PlanKeyHash> choices_;
};

/// Counts for the run report.
struct PlanCacheStats {
  int64_t hits = 0;    ///< lookups answered from the cache
  int64_t builds = 0;  ///< plans built (cache misses)
  /// Builds that reused an engine choice from the EngineChoiceCache instead of
  /// searching the heuristics (and autotuning).
  int64_t engine_choice_reuses = 0;
  int64_t autotuned = 0;  ///< builds that timed more than one candidate
  double build_s = 0;     ///< wall time of all builds (seconds), autotuning included
  double autotune_s = 0;  ///< of which timing candidates
};

/// key → ConvPlan. A plan is built on first request with the options of that
/// request (autotune, candidates, workspace limit are not part of the key; a
/// later request with other options gets the cached plan).
class PlanCache {
 public:
  PlanCache() = default;
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  /// The plan for `config` on ctx's device and cuDNN: cached, or built now (from
  /// the engine-choice cache when it has an entry for the key, else by search).
  std::shared_ptr<const ConvPlan> conv_plan(const DeviceContext& ctx, const ConvConfig& config,
                                            const ConvBuildOptions& options = {});

  [[nodiscard]] const PlanCacheStats& stats() const { return stats_; }
  [[nodiscard]] size_t size() const { return plans_.size(); }
  /// The largest workspace any cached plan needs (bytes).
  [[nodiscard]] int64_t max_workspace_bytes() const;
  [[nodiscard]] EngineChoiceCache& engine_choices() { return choices_; }
  [[nodiscard]] const EngineChoiceCache& engine_choices() const { return choices_; }

 private:
  std::unordered_map<PlanKey, std::shared_ptr<const ConvPlan>, PlanKeyHash> plans_;
  EngineChoiceCache choices_;
  PlanCacheStats stats_;
};

}  // namespace cnnbench::kernels::cuda
