// GPU telemetry in the result document (--result_json): the summary and every
// stored sample of every GPU. bench/telemetry/telemetry.schema.json (JSON Schema
// draft 2020-12) describes the object exactly.
#pragma once

#include <nlohmann/json.hpp>

#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench::telemetry {

/// The "telemetry" object:
///   available, reason ("" when available), source ("NVML"), library,
///   interval_ms, max_samples_per_gpu, and gpus: per GPU
///     index, uuid, name, error ("" when sampled),
///     figures: per figure key {supported, why_unsupported, failures, last_error},
///     summary: samples; per gauge {count, mean, min, max} (MiB, W, °C, MHz, %;
///       null when never read); clock_event_reasons {samples, power_throttled_share,
///       thermal_hw_throttled_share, throttled_share, shares: per reason key};
///       pcie_replays and nvlink_errors {count, first, last, increase},
///     samples: columns of equal length (stored, stride, time_ms [Unix epoch ms],
///       then one array per figure key, null where a sample did not read it).
/// Columns rather than one object per sample keep a long run's document small.
nlohmann::ordered_json telemetry_json(const TelemetryReport& report);

}  // namespace cnnbench::bench::telemetry
