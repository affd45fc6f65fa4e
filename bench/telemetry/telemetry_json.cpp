#include "bench/telemetry/telemetry_json.h"

#include <cmath>

namespace cnnbench::bench::telemetry {
namespace {

using ordered_json = nlohmann::ordered_json;

ordered_json number_or_null(double v) { return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr); }

ordered_json share_json(const std::optional<double>& share) {
  return share ? number_or_null(*share) : ordered_json(nullptr);
}

ordered_json gauge_json(const GaugeStats& s) {
  ordered_json j;
  j["count"] = s.count;
  j["mean"] = s.count > 0 ? number_or_null(s.mean) : ordered_json(nullptr);
  j["min"] = s.count > 0 ? number_or_null(s.min) : ordered_json(nullptr);
  j["max"] = s.count > 0 ? number_or_null(s.max) : ordered_json(nullptr);
  return j;
}

ordered_json counter_json(const CounterStats& c) {
  ordered_json j;
  j["count"] = c.count;
  j["first"] = c.count > 0 ? ordered_json(c.first) : ordered_json(nullptr);
  j["last"] = c.count > 0 ? ordered_json(c.last) : ordered_json(nullptr);
  j["increase"] = c.count > 0 ? ordered_json(c.increase()) : ordered_json(nullptr);
  return j;
}

ordered_json summary_json(const GpuSummary& s) {
  ordered_json j;
  j["samples"] = s.samples();
  for (const Figure f : kGaugeFigures) j[figure_key(f)] = gauge_json(s.gauge(f));
  ordered_json reasons;
  reasons["samples"] = s.reason_samples();
  reasons["power_throttled_share"] = share_json(s.power_throttled_share());
  reasons["thermal_hw_throttled_share"] = share_json(s.thermal_hw_throttled_share());
  reasons["throttled_share"] = share_json(s.throttled_share());
  ordered_json shares = ordered_json::object();
  for (const ClockEventReason& r : clock_event_reasons()) {
    shares[r.key] =
        s.reason_samples() > 0
            ? ordered_json(static_cast<double>(s.reason_count(r.bit)) / static_cast<double>(s.reason_samples()))
            : ordered_json(nullptr);
  }
  reasons["shares"] = std::move(shares);
  j["clock_event_reasons"] = std::move(reasons);
  j["pcie_replays"] = counter_json(s.pcie_replays());
  j["nvlink_errors"] = counter_json(s.nvlink_errors());
  return j;
}

ordered_json samples_json(const GpuTelemetry& g) {
  ordered_json j;
  j["stored"] = g.samples.size();
  j["stride"] = g.stride;
  ordered_json time = ordered_json::array();
  for (const GpuSample& s : g.samples) time.push_back(s.time_ms);
  j["time_ms"] = std::move(time);
  for (int i = 0; i < kFigureCount; ++i) {
    const auto f = static_cast<Figure>(i);
    ordered_json column = ordered_json::array();
    for (const GpuSample& s : g.samples) {
      if (!s.has(f)) {
        column.push_back(nullptr);
      } else if (f == Figure::ClockEventReasons) {
        column.push_back(s.clock_event_reasons);
      } else if (f == Figure::PcieReplays) {
        column.push_back(s.pcie_replays);
      } else if (f == Figure::NvLinkErrors) {
        column.push_back(s.nvlink_errors);
      } else {
        column.push_back(number_or_null(*s.value(f)));
      }
    }
    j[figure_key(f)] = std::move(column);
  }
  return j;
}

ordered_json gpu_json(const GpuTelemetry& g) {
  ordered_json j;
  j["index"] = g.id.index;
  j["uuid"] = g.id.uuid;
  j["name"] = g.name;
  j["error"] = g.error;
  ordered_json figures = ordered_json::object();
  for (int i = 0; i < kFigureCount; ++i) {
    const FigureStatus& s = g.status[static_cast<size_t>(i)];
    ordered_json f;
    f["supported"] = s.supported;
    f["why_unsupported"] = s.why_unsupported;
    f["failures"] = s.failures;
    f["last_error"] = s.last_error;
    figures[figure_key(static_cast<Figure>(i))] = std::move(f);
  }
  j["figures"] = std::move(figures);
  j["summary"] = summary_json(g.summary);
  j["samples"] = samples_json(g);
  return j;
}

}  // namespace

ordered_json telemetry_json(const TelemetryReport& report) {
  ordered_json j;
  j["available"] = report.available();
  j["reason"] = report.reason;
  j["source"] = report.source;
  j["library"] = report.library;
  j["interval_ms"] = report.interval_ms;
  j["max_samples_per_gpu"] = report.max_samples_per_gpu;
  ordered_json gpus = ordered_json::array();
  for (const GpuTelemetry& g : report.gpus) gpus.push_back(gpu_json(g));
  j["gpus"] = std::move(gpus);
  return j;
}

}  // namespace cnnbench::bench::telemetry
