// GPU telemetry as CloudWatch EMF lines beside the run's own (emf.h): one event
// per GPU at each displayed step (its latest NVML sample) and one per GPU at the
// summary (its means over the timed loop). Metrics and dimensions are those of
// bench/telemetry/telemetry_emf.h.
#pragma once

#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "bench/report/emf.h"
#include "bench/telemetry/sampler.h"
#include "bench/report/gpu_metrics.h"
#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench {

/// Writes the per-GPU events of a run whose GPUs `sampler` samples. Events carry
/// Event = "gpu" (steps) or "gpu_summary" (summary) and the options' context
/// members. Never throws from its Reporter methods: an event that cannot be built
/// or written is counted in failed_events().
class GpuTelemetryEmfReporter final : public Reporter {
 public:
  /// `out` and `sampler` must outlive the reporter. Throws std::invalid_argument
  /// naming --metrics_namespace when it is invalid.
  GpuTelemetryEmfReporter(std::ostream& out, EmfOptions options, const telemetry::Sampler& sampler);

  /// The run's telemetry for the summary events; without it summary() writes none.
  void set_report(telemetry::TelemetryReport report) { report_ = std::move(report); }

  void header(const RunInfo& info) override;
  void step(const RunInfo& info, const StepStats& stats) override;
  void summary(const RunInfo& info, const RunSummary& summary) override;

  [[nodiscard]] int failed_events() const { return failed_events_; }

 private:
  void write(const RunInfo& info, const std::vector<telemetry::GpuMetricSet>& sets, const char* event);

  std::ostream& out_;
  EmfOptions options_;
  const telemetry::Sampler& sampler_;
  std::optional<telemetry::TelemetryReport> report_;
  int failed_events_ = 0;
};

}  // namespace cnnbench::bench
