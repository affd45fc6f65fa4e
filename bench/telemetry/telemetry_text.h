// GPU telemetry in the text report: returned as lines (without newlines) for the
// text reporter to print after the totals; nothing here prints.
#pragma once

#include <string>
#include <vector>

#include "bench/telemetry/telemetry_report.h"

namespace cnnbench::bench::telemetry {

/// The telemetry block. When telemetry did not run: one line, the reason (e.g.
/// "NVML not found (libnvidia-ml.so.1): GPU telemetry off"). Otherwise a title
/// line, then per GPU one line of mean / max of each gauge and the shares of
/// samples throttled, e.g.
///   GPU telemetry (NVML, every 1000 ms; mean / max):
///     GPU 0 (GPU-5d5b...): utilization 97.5 / 100 %, memory used 61234 / 61300 MiB,
///     power 652.1 / 699.8 W, temperature 61.2 / 66 °C, SM clock 1980 / 1980 MHz,
///     memory clock 2619 / 2619 MHz; throttled: power 0.0%, thermal/HW 0.0% of 120 samples
///     (one line in fact), with "PCIe replays +N" and "NVLink errors +N" when they grew,
/// a line per GPU whose reads failed, and last throttle_warnings().
/// A figure not read says why: "power n/a (not supported)".
std::vector<std::string> telemetry_lines(const TelemetryReport& report);

/// One line per GPU throttled for power or thermal/hardware reasons in any
/// sample, e.g. "WARNING: GPU 2 (GPU-5d5b...) was throttled in 45.0% of samples
/// (power cap 45.0%, thermal/HW 0.0%): images/sec of this run understate GPU 2".
std::vector<std::string> throttle_warnings(const TelemetryReport& report);

}  // namespace cnnbench::bench::telemetry
