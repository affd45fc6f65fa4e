#include "bench/telemetry/gpu_summary.h"

#include <algorithm>
#include <bit>

namespace cnnbench::bench::telemetry {
namespace {

void add_counter(CounterStats& c, uint64_t value) {
  if (c.count == 0) c.first = value;
  c.last = value;
  ++c.count;
}

}  // namespace

void GpuSummary::add(const GpuSample& sample) {
  ++samples_;
  for (size_t i = 0; i < kGaugeFigures.size(); ++i) {
    const std::optional<double> v = sample.value(kGaugeFigures[i]);
    if (!v) continue;
    GaugeStats& g = gauges_[i];
    if (g.count == 0) {
      g.min = *v;
      g.max = *v;
    } else {
      g.min = std::min(g.min, *v);
      g.max = std::max(g.max, *v);
    }
    ++g.count;
    sums_[i] += *v;
    g.mean = sums_[i] / static_cast<double>(g.count);
  }
  if (sample.has(Figure::PcieReplays)) add_counter(pcie_replays_, sample.pcie_replays);
  if (sample.has(Figure::NvLinkErrors)) add_counter(nvlink_errors_, sample.nvlink_errors);
  if (sample.has(Figure::ClockEventReasons)) {
    const uint64_t r = sample.clock_event_reasons;
    ++reason_samples_;
    for (uint64_t bits = r; bits != 0; bits &= bits - 1) ++reason_bits_[static_cast<size_t>(std::countr_zero(bits))];
    const bool power = (r & power_throttle_mask()) != 0;
    const bool thermal = (r & thermal_hw_throttle_mask()) != 0;
    power_throttled_ += power ? 1 : 0;
    thermal_hw_throttled_ += thermal ? 1 : 0;
    throttled_ += (power || thermal) ? 1 : 0;
  }
}

const GaugeStats& GpuSummary::gauge(Figure figure) const {
  const auto it = std::find(kGaugeFigures.begin(), kGaugeFigures.end(), figure);
  static const GaugeStats kNone{};
  return it == kGaugeFigures.end() ? kNone : gauges_[static_cast<size_t>(it - kGaugeFigures.begin())];
}

int64_t GpuSummary::reason_count(uint64_t bit) const {
  if (!std::has_single_bit(bit)) return 0;
  return reason_bits_[static_cast<size_t>(std::countr_zero(bit))];
}

std::optional<double> GpuSummary::share(int64_t count) const {
  if (reason_samples_ == 0) return std::nullopt;
  return static_cast<double>(count) / static_cast<double>(reason_samples_);
}

std::optional<double> GpuSummary::power_throttled_share() const { return share(power_throttled_); }
std::optional<double> GpuSummary::thermal_hw_throttled_share() const { return share(thermal_hw_throttled_); }
std::optional<double> GpuSummary::throttled_share() const { return share(throttled_); }

}  // namespace cnnbench::bench::telemetry
