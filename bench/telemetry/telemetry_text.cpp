#include "bench/telemetry/telemetry_text.h"

#include <cstdio>

namespace cnnbench::bench::telemetry {
namespace {

/// How a gauge is written: its label, unit and decimals of the mean and the max.
struct GaugeFormat {
  Figure figure;
  const char* label;
  const char* unit;
  int mean_decimals;
  int max_decimals;
};

constexpr GaugeFormat kGaugeFormats[] = {
    {Figure::Utilization, "utilization", "%", 1, 0},
    {Figure::MemoryUsed, "memory used", "MiB", 0, 0},
    {Figure::Power, "power", "W", 1, 1},
    {Figure::Temperature, "temperature", "\u00b0C", 1, 0},
    {Figure::SmClock, "SM clock", "MHz", 0, 0},
    {Figure::MemoryClock, "memory clock", "MHz", 0, 0},
};

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string percent(double share) { return fixed(100.0 * share, 1) + "%"; }

std::string gpu_name(const GpuTelemetry& g) { return "GPU " + std::to_string(g.id.index) + " (" + g.id.uuid + ")"; }

/// "n/a (not supported)", "n/a (nvmlDeviceGetPowerUsage: GPU is lost)" or "n/a (no sample)".
std::string not_read(const GpuTelemetry& g, Figure figure) {
  const FigureStatus& s = g.figure(figure);
  if (!s.supported) return "n/a (" + s.why_unsupported + ")";
  if (!s.last_error.empty()) return "n/a (" + s.last_error + ")";
  return "n/a (no sample)";
}

std::string gpu_line(const GpuTelemetry& g) {
  std::string line = "  " + gpu_name(g) + ": ";
  if (!g.ok()) return line + "telemetry off: " + g.error;
  if (g.summary.samples() == 0) return line + "no sample taken";
  bool first = true;
  for (const GaugeFormat& f : kGaugeFormats) {
    if (!first) line += ", ";
    first = false;
    line += f.label;
    line += ' ';
    const GaugeStats& s = g.summary.gauge(f.figure);
    if (s.count == 0) {
      line += not_read(g, f.figure);
    } else {
      line += fixed(s.mean, f.mean_decimals) + " / " + fixed(s.max, f.max_decimals) + " " + f.unit;
    }
  }
  line += "; throttled: ";
  const std::optional<double> power = g.summary.power_throttled_share();
  const std::optional<double> thermal = g.summary.thermal_hw_throttled_share();
  if (power && thermal) {
    line += "power " + percent(*power) + ", thermal/HW " + percent(*thermal) + " of " +
            std::to_string(g.summary.reason_samples()) + " samples";
  } else {
    line += not_read(g, Figure::ClockEventReasons) + ", " + std::to_string(g.summary.samples()) + " samples";
  }
  if (g.summary.pcie_replays().increase() > 0) {
    line += "; PCIe replays +" + std::to_string(g.summary.pcie_replays().increase());
  }
  if (g.summary.nvlink_errors().increase() > 0) {
    line += "; NVLink errors +" + std::to_string(g.summary.nvlink_errors().increase());
  }
  return line;
}

}  // namespace

std::vector<std::string> throttle_warnings(const TelemetryReport& report) {
  std::vector<std::string> lines;
  if (!report.available()) return lines;
  for (const GpuTelemetry& g : report.gpus) {
    const std::optional<double> share = g.summary.throttled_share();
    if (!g.ok() || !share || *share <= 0) continue;
    lines.push_back("WARNING: " + gpu_name(g) + " was throttled in " + percent(*share) + " of samples (power cap " +
                    percent(g.summary.power_throttled_share().value_or(0)) + ", thermal/HW " +
                    percent(g.summary.thermal_hw_throttled_share().value_or(0)) +
                    "): images/sec of this run understate GPU " + std::to_string(g.id.index));
  }
  return lines;
}

std::vector<std::string> telemetry_lines(const TelemetryReport& report) {
  if (!report.available()) return {report.reason};
  std::vector<std::string> lines;
  lines.push_back("GPU telemetry (" + report.source + ", every " + std::to_string(report.interval_ms) +
                  " ms; mean / max):");
  for (const GpuTelemetry& g : report.gpus) lines.push_back(gpu_line(g));
  for (const GpuTelemetry& g : report.gpus) {
    if (!g.ok()) continue;
    for (int f = 0; f < kFigureCount; ++f) {
      const FigureStatus& s = g.status[static_cast<size_t>(f)];
      if (s.failures == 0) continue;
      lines.push_back("  " + gpu_name(g) + ": " + figure_key(static_cast<Figure>(f)) + " missing from " +
                      std::to_string(s.failures) + " of " + std::to_string(g.summary.samples()) +
                      " samples; last error: " + s.last_error);
    }
  }
  for (std::string& w : throttle_warnings(report)) lines.push_back(std::move(w));
  return lines;
}

}  // namespace cnnbench::bench::telemetry
