#include "bench/telemetry_session.h"

#include <utility>

#include "bench/telemetry/telemetry_text.h"

namespace cnnbench::bench {

TelemetrySession::TelemetrySession(std::string reason) : reason_(std::move(reason)) {}

TelemetrySession::TelemetrySession(const std::vector<DeviceEntry>& gpus, int interval_ms,
                                   std::vector<std::string> notes, const std::string& nvml_library)
    : notes_(std::move(notes)), nvml_(std::make_unique<telemetry::Nvml>(nvml_library)) {
  std::vector<telemetry::GpuId> ids;
  for (const auto& g : gpus) ids.push_back({g.ordinal, g.uuid});
  telemetry::SamplerOptions options;
  options.interval_ms = interval_ms;
  // With NVML unavailable the sampler does nothing and its report says why.
  sampler_ = std::make_unique<telemetry::Sampler>(*nvml_, std::move(ids), options);
}

TelemetrySession::~TelemetrySession() {
  if (sampler_) sampler_->stop();
}

telemetry::TelemetryReport TelemetrySession::report() const {
  if (!sampler_) return telemetry::unavailable_report(reason_);
  return sampler_->report();
}

std::vector<std::string> TelemetrySession::text_lines() const {
  std::vector<std::string> lines = telemetry::telemetry_lines(report());
  lines.insert(lines.end(), notes_.begin(), notes_.end());
  return lines;
}

std::unique_ptr<TelemetrySession> make_telemetry_session(const std::string& device_kind, int interval_ms,
                                                         const std::vector<DeviceEntry>& gpus,
                                                         std::vector<std::string> notes) {
  if (device_kind != "gpu") {
    return std::make_unique<TelemetrySession>("GPU telemetry off: this run trains on the CPU (NVML reads GPUs only)");
  }
  if (interval_ms <= 0) {
    return std::make_unique<TelemetrySession>("GPU telemetry off (--telemetry_interval_ms=0)");
  }
  return std::make_unique<TelemetrySession>(gpus, interval_ms, std::move(notes));
}

}  // namespace cnnbench::bench
