#include "bench/report/gpu_metrics.h"

#include <optional>
#include <utility>

namespace cnnbench::bench {

using telemetry::Figure;
using telemetry::GaugeStats;
using telemetry::GpuReading;
using telemetry::GpuTelemetry;
using telemetry::TelemetryReport;
namespace {

/// The five metrics, by the figure they carry.
struct MetricDef {
  Figure figure;
  const char* name;
  EmfUnit unit;
};

constexpr MetricDef kMetrics[] = {
    {Figure::Utilization, "GPUUtilization", EmfUnit::Percent},
    {Figure::MemoryUsed, "GPUMemoryUsed", EmfUnit::Megabytes},
    {Figure::Power, "GPUPower", EmfUnit::None},
    {Figure::Temperature, "GPUTemperature", EmfUnit::None},
    {Figure::SmClock, "GPUSMClock", EmfUnit::None},
};

}  // namespace

std::vector<GpuMetricSet> gpu_metric_sets(const std::vector<GpuReading>& latest) {
  std::vector<GpuMetricSet> sets;
  for (const GpuReading& r : latest) {
    GpuMetricSet set{r.id.index, r.id.uuid, r.sample.time_ms, {}};
    for (const MetricDef& m : kMetrics) {
      if (const std::optional<double> v = r.sample.value(m.figure)) set.metrics.push_back({m.name, m.unit, *v});
    }
    if (!set.metrics.empty()) sets.push_back(std::move(set));
  }
  return sets;
}

std::vector<GpuMetricSet> gpu_metric_sets(const TelemetryReport& report) {
  std::vector<GpuMetricSet> sets;
  if (!report.available()) return sets;
  for (const GpuTelemetry& g : report.gpus) {
    if (!g.ok() || g.summary.samples() == 0) continue;
    GpuMetricSet set{g.id.index, g.id.uuid, g.samples.empty() ? 0 : g.samples.back().time_ms, {}};
    for (const MetricDef& m : kMetrics) {
      const GaugeStats& s = g.summary.gauge(m.figure);
      if (s.count > 0) set.metrics.push_back({m.name, m.unit, s.mean});
    }
    if (!set.metrics.empty()) sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace cnnbench::bench
