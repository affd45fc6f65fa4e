// GPU telemetry as CloudWatch metrics, one Embedded Metric Format event per GPU
// (bench/report/emf.h). Metric names follow the meaning of their DCGM-exporter
// counterparts, so dashboards built on either read alike:
//   GPUUtilization  Percent    DCGM_FI_DEV_GPU_UTIL     nvmlDeviceGetUtilizationRates().gpu
//   GPUMemoryUsed   Megabytes  DCGM_FI_DEV_FB_USED      MiB, as DCGM reports frame buffer use
//   GPUPower        None       DCGM_FI_DEV_POWER_USAGE  watts
//   GPUTemperature  None       DCGM_FI_DEV_GPU_TEMP     degrees Celsius
//   GPUSMClock      None       DCGM_FI_DEV_SM_CLOCK     MHz
// (CloudWatch has no unit for watts, degrees or hertz: those are None, with the
// unit in the name's documentation.) A figure the GPU does not report is left out
// of its event, never sent as 0.
//
// Dimensions: each event carries the run's dimensions (emf_report.h, make_run_event: Model,
// Precision, NumGPUs) plus GPU (the run's GPU index) and UUID (the GPU's UUID),
// and declares two more dimension sets: [Model, Precision, NumGPUs, GPU], to
// plot each GPU of a configuration, and [UUID], to follow one physical GPU across
// runs and tasks. The run's own sets aggregate over the GPUs (e.g. the mean
// utilization of all GPUs of resnet50 runs). Each distinct UUID is a distinct
// CloudWatch metric: a fleet of N GPUs makes 5 × N of them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/report/emf.h"
#include "bench/telemetry/sampler.h"
#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench {

/// Dimension keys.
inline constexpr const char* kGpuDimension = "GPU";
inline constexpr const char* kUuidDimension = "UUID";

/// One metric value.
struct GpuMetric {
  const char* name = "";  ///< "GPUUtilization", ...
  EmfUnit unit = EmfUnit::None;
  double value = 0;
};

/// The metrics of one GPU, with what its GPU and UUID dimensions say.
struct GpuMetricSet {
  int index = -1;
  std::string uuid;
  int64_t time_ms = 0;             ///< when the figures were read (Unix epoch ms)
  std::vector<GpuMetric> metrics;  ///< only figures read
};

/// From each GPU's latest sample (Sampler::latest()): for the step events. A GPU
/// that read none of the five figures (a MIG device, say) gets no set.
std::vector<GpuMetricSet> gpu_metric_sets(const std::vector<telemetry::GpuReading>& latest);
/// From each GPU's means over the run (the summary event); GPUs without samples
/// are left out. time_ms is that of the last stored sample.
std::vector<GpuMetricSet> gpu_metric_sets(const telemetry::TelemetryReport& report);

/// Adds a GPU's dimensions, dimension sets and metrics to `event`, an event made
/// by make_run_event() (or EmfReporter's own base event) that holds no other
/// metrics: GPU metrics in an event whose dimension sets lack GPU would be
/// aggregated with the run's. Throws std::invalid_argument as EmfEvent does.
inline void add_gpu_metrics(EmfEvent& event, const GpuMetricSet& set) {
  event.dimension(kGpuDimension, std::to_string(set.index)).dimension(kUuidDimension, set.uuid);
  event.dimension_set({"Model", "Precision", "NumGPUs", kGpuDimension}).dimension_set({kUuidDimension});
  for (const GpuMetric& m : set.metrics) event.metric(m.name, m.unit, m.value);
}

}  // namespace cnnbench::bench
