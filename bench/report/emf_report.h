// What cnnbench writes as CloudWatch EMF lines (emf.h is the format). Every
// event carries the dimensions Model, Precision and NumGPUs and declares the
// dimension sets [Model, Precision, NumGPUs] and [Model], so a dashboard can plot
// images/sec by model, precision and GPU count, or by model alone. Step events
// hold ImagesPerSecond (Count/Second), StepTime (Milliseconds) and Loss (None);
// the summary event holds TotalImagesPerSecond (Count/Second),
// StepTimeP50/P90/P99 (Milliseconds), Loss (the final one) and Interrupted
// (Count, 0 or 1). GPU telemetry adds one event per GPU beside each of them
// (Event "gpu" at a step: its latest NVML sample; "gpu_summary": its means over
// the timed loop), built the same way plus the GPU and UUID dimensions of
// gpu_metrics.h.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "bench/report/emf.h"
#include "bench/report/gpu_metrics.h"
#include "bench/report/reporter.h"
#include "bench/telemetry/sampler.h"

namespace cnnbench::bench {

/// An event with cnnbench's dimensions for `info` (Model, Precision = the first
/// word of RunInfo::precision, NumGPUs = GPUs over all ranks, "0" for the CPU) and
/// the sets [Model, Precision, NumGPUs] and [Model], plus the context members
/// WorldSize, GlobalBatch, PerDeviceBatch and DeviceKind.
EmfEvent make_run_event(const std::string& metrics_namespace, int64_t timestamp_ms, const RunInfo& info);

/// One complete event per GPU: make_run_event(namespace, timestamp, info) with
/// add_gpu_metrics() and the context member Event = `event_name`. Write each with
/// EmfEvent::to_line().
std::vector<EmfEvent> make_gpu_events(const std::string& metrics_namespace, int64_t timestamp_ms,
                                      const RunInfo& info, const std::vector<GpuMetricSet>& sets,
                                      const std::string& event_name = "gpu");

/// How the EmfReporter writes.
struct EmfOptions {
  std::string metrics_namespace = "cnnbench";  ///< --metrics_namespace
  /// Milliseconds since the Unix epoch; empty = std::chrono::system_clock.
  std::function<int64_t()> clock_ms;
  /// Context members added to every event, e.g. {"Host", "ip-10-0-1-23"}. Keys
  /// must differ from the dimension, metric and context names above.
  std::vector<std::pair<std::string, std::string>> context;
  /// The latest NVML reading of each GPU (telemetry::Sampler::latest), read at
  /// each displayed step; empty = no GPU events (GPU telemetry off).
  std::function<std::vector<telemetry::GpuReading>()> gpu_readings;
};

/// Writes one EMF event per displayed step and one at the summary to `out`,
/// each followed by its GPUs' events, each alone on its line and flushed
/// (stdout, read by the awslogs driver). header() writes nothing. Never throws
/// from step() or summary(): an event that cannot be built or written is counted
/// in failed_events().
class EmfReporter final : public Reporter {
 public:
  /// Throws std::invalid_argument naming --metrics_namespace when it is invalid.
  EmfReporter(std::ostream& out, EmfOptions options);

  void header(const RunInfo& info) override;
  void step(const RunInfo& info, const StepStats& stats) override;
  void summary(const RunResult& result) override;

  [[nodiscard]] int failed_events() const { return failed_events_; }

 private:
  int64_t now_ms() const;
  EmfEvent base_event(const RunInfo& info, const char* event) const;
  void write(const EmfEvent& event);
  void write_gpu_events(const RunInfo& info, const std::vector<GpuMetricSet>& sets, const char* event);

  std::ostream& out_;
  EmfOptions options_;
  int failed_events_ = 0;
};

}  // namespace cnnbench::bench
