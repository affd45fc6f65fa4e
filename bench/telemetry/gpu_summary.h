// The per-GPU summary of a run's samples: mean and extremes of each gauge, the
// share of samples in which the clocks were held down, and how much the error
// counters grew.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "bench/telemetry/gpu_sample.h"

namespace cnnbench::bench::telemetry {

/// Mean and extremes of one gauge over the samples that read it.
struct GaugeStats {
  int64_t count = 0;  ///< samples that read it
  double mean = 0;
  double min = 0;
  double max = 0;
};

/// A cumulative counter's first and last readings.
struct CounterStats {
  int64_t count = 0;  ///< samples that read it
  uint64_t first = 0;
  uint64_t last = 0;
  /// How much it grew between the first and the last sample that read it.
  [[nodiscard]] uint64_t increase() const { return last >= first ? last - first : 0; }
};

/// Accumulates every sample of one GPU (add()), in constant memory.
class GpuSummary {
 public:
  void add(const GpuSample& sample);

  /// Samples taken, whatever they read.
  [[nodiscard]] int64_t samples() const { return samples_; }
  /// Statistics of a gauge (Figure in kGaugeFigures); count 0 when never read.
  [[nodiscard]] const GaugeStats& gauge(Figure figure) const;
  [[nodiscard]] const CounterStats& pcie_replays() const { return pcie_replays_; }
  [[nodiscard]] const CounterStats& nvlink_errors() const { return nvlink_errors_; }

  /// Samples that read the clock event reasons.
  [[nodiscard]] int64_t reason_samples() const { return reason_samples_; }
  /// Samples in which `bit` (one nvmlClocksEventReason* bit) was set.
  [[nodiscard]] int64_t reason_count(uint64_t bit) const;
  /// Share (0..1) of reason_samples() with any bit of power_throttle_mask() set;
  /// std::nullopt when the reasons were never read.
  [[nodiscard]] std::optional<double> power_throttled_share() const;
  /// Likewise for thermal_hw_throttle_mask().
  [[nodiscard]] std::optional<double> thermal_hw_throttled_share() const;
  /// Share with either: the samples in which the clocks were held below what the
  /// work asked for, so images/sec understate the GPU.
  [[nodiscard]] std::optional<double> throttled_share() const;

 private:
  std::optional<double> share(int64_t count) const;

  int64_t samples_ = 0;
  std::array<GaugeStats, kGaugeFigures.size()> gauges_{};
  std::array<double, kGaugeFigures.size()> sums_{};
  CounterStats pcie_replays_;
  CounterStats nvlink_errors_;
  int64_t reason_samples_ = 0;
  std::array<int64_t, 64> reason_bits_{};  ///< per bit position
  int64_t power_throttled_ = 0;
  int64_t thermal_hw_throttled_ = 0;
  int64_t throttled_ = 0;
};

}  // namespace cnnbench::bench::telemetry
