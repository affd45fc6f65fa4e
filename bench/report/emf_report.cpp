#include "bench/report/emf_report.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench/report/gpu_metrics.h"

namespace cnnbench::bench {

GpuTelemetryEmfReporter::GpuTelemetryEmfReporter(std::ostream& out, EmfOptions options,
                                                 const telemetry::Sampler& sampler)
    : out_(out), options_(std::move(options)), sampler_(sampler) {
  if (auto why = check_emf_namespace(options_.metrics_namespace)) {
    throw std::invalid_argument("--metrics_namespace='" + options_.metrics_namespace + "': " + *why);
  }
}

void GpuTelemetryEmfReporter::header(const RunInfo& /*info*/) {}

void GpuTelemetryEmfReporter::step(const RunInfo& info, const StepStats& /*stats*/) {
  try {
    write(info, telemetry::gpu_metric_sets(sampler_.latest()), "gpu");
  } catch (const std::exception&) {
    ++failed_events_;
  }
}

void GpuTelemetryEmfReporter::summary(const RunInfo& info, const RunSummary& /*summary*/) {
  if (!report_) return;
  try {
    write(info, telemetry::gpu_metric_sets(*report_), "gpu_summary");
  } catch (const std::exception&) {
    ++failed_events_;
  }
}

void GpuTelemetryEmfReporter::write(const RunInfo& info,
                                    const std::vector<telemetry::GpuMetricSet>& sets,
                                    const char* event) {
  const int64_t now_ms =
      options_.clock_ms ? options_.clock_ms()
                        : std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
  for (auto& e : telemetry::make_gpu_events(options_.metrics_namespace, now_ms, info, sets, event)) {
    for (const auto& [key, value] : options_.context) e.property(key, value);
    const std::string line = e.to_line() + "\n";
    out_.write(line.data(), static_cast<std::streamsize>(line.size()));
    out_.flush();
    if (!out_) {
      ++failed_events_;
      out_.clear();
    }
  }
}

}  // namespace cnnbench::bench
