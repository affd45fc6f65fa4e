// GPU telemetry of one run: NVML loaded and a Sampler over the GPUs rank 0 can
// see, or the one line saying why there is none.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bench/telemetry/gpu_sample.h"
#include "bench/telemetry/nvml_library.h"
#include "bench/telemetry/sampler.h"
#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench::telemetry {

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
  TelemetrySession(std::vector<GpuId> gpus, int interval_ms, std::vector<std::string> notes = {},
                   const std::string& nvml_library = kNvmlLibrary);
  ~TelemetrySession();
  TelemetrySession(const TelemetrySession&) = delete;
  TelemetrySession& operator=(const TelemetrySession&) = delete;

  /// Null without telemetry.
  [[nodiscard]] Sampler* sampler() { return sampler_.get(); }
  /// The report so far (or the reason there is none).
  [[nodiscard]] TelemetryReport report() const;
  /// Lines the text report prints after the telemetry (GPUs not sampled).
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }

 private:
  std::string reason_;
  std::vector<std::string> notes_;
  std::unique_ptr<Nvml> nvml_;
  std::unique_ptr<Sampler> sampler_;
};

/// The session of a run over `gpus` (`gpu_run` false: the run trains on the
/// CPU): off with its reason on the CPU and with --telemetry_interval_ms=0, else
/// sampling every `interval_ms`.
std::unique_ptr<TelemetrySession> make_telemetry_session(bool gpu_run, int interval_ms, std::vector<GpuId> gpus,
                                                         std::vector<std::string> notes = {});

}  // namespace cnnbench::bench::telemetry
