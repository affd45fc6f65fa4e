// GPU telemetry of one run: NVML loaded and a Sampler over the GPUs rank 0 can
// see, or the one line saying why there is none.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/report.h"
#include "bench/telemetry/nvml_library.h"
#include "bench/telemetry/sampler.h"
#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench {

/// Owns NVML and the sampler (NVML must outlive it). The sampler thread runs
/// only between start() and stop() (the timed loop: Trainer::use_timed_loop_hooks).
class TelemetrySession {
 public:
  /// No telemetry, for `reason` ("GPU telemetry off: this run trains on the CPU").
  explicit TelemetrySession(std::string reason);
  /// Samples `gpus` (index = CUDA ordinal, UUID) every `interval_ms` (> 0).
  /// `notes` are extra lines for the text report (GPUs of other hosts that are
  /// not sampled). NVML that cannot be loaded makes a sampler that samples
  /// nothing and whose report carries NVML's reason. `nvml_library`: the soname,
  /// or a path (tests load a fake).
  TelemetrySession(const std::vector<DeviceEntry>& gpus, int interval_ms, std::vector<std::string> notes = {},
                   const std::string& nvml_library = telemetry::kNvmlLibrary);
  ~TelemetrySession();
  TelemetrySession(const TelemetrySession&) = delete;
  TelemetrySession& operator=(const TelemetrySession&) = delete;

  /// Null without telemetry.
  [[nodiscard]] telemetry::Sampler* sampler() { return sampler_.get(); }
  /// The report so far (or the reason there is none).
  [[nodiscard]] telemetry::TelemetryReport report() const;
  /// telemetry_lines(report()) followed by the notes.
  [[nodiscard]] std::vector<std::string> text_lines() const;

 private:
  std::string reason_;
  std::vector<std::string> notes_;
  std::unique_ptr<telemetry::Nvml> nvml_;
  std::unique_ptr<telemetry::Sampler> sampler_;
};

/// The session of a run on `device_kind` ("cpu" or "gpu") over `gpus`: off with
/// its reason on the CPU and with --telemetry_interval_ms=0, else sampling every
/// `interval_ms`.
std::unique_ptr<TelemetrySession> make_telemetry_session(const std::string& device_kind, int interval_ms,
                                                         const std::vector<DeviceEntry>& gpus,
                                                         std::vector<std::string> notes = {});

}  // namespace cnnbench::bench
