// What the telemetry of a run amounts to, as the text report, the EMF lines and
// the result JSON consume it: a copy, taken from the Sampler (Sampler::report())
// or built by hand (tests, a run without telemetry).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/telemetry/gpu_sample.h"
#include "bench/telemetry/gpu_summary.h"
#include "bench/telemetry/nvml_library.h"

namespace cnnbench::bench::telemetry {

/// One GPU's telemetry.
struct GpuTelemetry {
  GpuId id;
  std::string name;   ///< as NVML names it; empty if unknown
  std::string error;  ///< empty when sampled; else why this GPU is not (e.g. its UUID unknown to NVML)
  std::array<FigureStatus, kFigureCount> status;  ///< per Figure
  GpuSummary summary;                             ///< over every sample taken
  std::vector<GpuSample> samples;                 ///< the stored series (SampleSeries)
  int64_t stride = 1;                             ///< samples[i] is the (i × stride)-th sample taken

  [[nodiscard]] bool ok() const { return error.empty(); }
  [[nodiscard]] const FigureStatus& figure(Figure f) const { return status[static_cast<size_t>(f)]; }
};

/// The whole telemetry of a run.
struct TelemetryReport {
  std::string reason;  ///< empty when telemetry ran; else the one line saying why not
  std::string source = "NVML";
  std::string library;  ///< the library loaded, e.g. "libnvidia-ml.so.1"
  int interval_ms = 0;  ///< sampling interval
  size_t max_samples_per_gpu = 0;
  std::vector<GpuTelemetry> gpus;

  [[nodiscard]] bool available() const { return reason.empty(); }
};

/// A report for telemetry that did not run, e.g. "GPU telemetry off
/// (--telemetry_interval_ms=0)", or an NVML reason.
TelemetryReport unavailable_report(std::string reason);

}  // namespace cnnbench::bench::telemetry
