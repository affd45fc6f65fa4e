#include "bench/telemetry/session.h"

#include <utility>

namespace cnnbench::bench::telemetry {

TelemetrySession::TelemetrySession(std::string reason) : reason_(std::move(reason)) {}

TelemetrySession::TelemetrySession(std::vector<GpuId> gpus, int interval_ms, std::vector<std::string> notes,
                                   const std::string& nvml_library)
    : notes_(std::move(notes)), nvml_(std::make_unique<Nvml>(nvml_library)) {
  SamplerOptions options;
  options.interval_ms = interval_ms;
  // With NVML unavailable the sampler does nothing and its report says why.
  sampler_ = std::make_unique<Sampler>(*nvml_, std::move(gpus), options);
}

TelemetrySession::~TelemetrySession() {
  if (sampler_) sampler_->stop();
}

TelemetryReport TelemetrySession::report() const {
  if (!sampler_) return unavailable_report(reason_);
  return sampler_->report();
}

std::unique_ptr<TelemetrySession> make_telemetry_session(bool gpu_run, int interval_ms, std::vector<GpuId> gpus,
                                                         std::vector<std::string> notes) {
  if (!gpu_run) {
    return std::make_unique<TelemetrySession>("GPU telemetry off: this run trains on the CPU (NVML reads GPUs only)");
  }
  if (interval_ms <= 0) {
    return std::make_unique<TelemetrySession>("GPU telemetry off (--telemetry_interval_ms=0)");
  }
  return std::make_unique<TelemetrySession>(std::move(gpus), interval_ms, std::move(notes));
}

}  // namespace cnnbench::bench::telemetry
