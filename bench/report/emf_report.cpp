#include "bench/report/emf_report.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

namespace cnnbench::bench {
namespace {

int num_gpus(const RunInfo& info) {
  if (info.device_kind != "gpu") return 0;
  return static_cast<int>(std::count_if(info.devices.begin(), info.devices.end(),
                                        [](const DeviceEntry& d) { return d.ordinal >= 0; }));
}

std::string precision_word(const std::string& precision) { return precision.substr(0, precision.find(' ')); }

}  // namespace

std::vector<EmfEvent> make_gpu_events(const std::string& metrics_namespace, int64_t timestamp_ms,
                                      const RunInfo& info, const std::vector<GpuMetricSet>& sets,
                                      const std::string& event_name) {
  std::vector<EmfEvent> events;
  events.reserve(sets.size());
  for (const GpuMetricSet& set : sets) {
    EmfEvent e = make_run_event(metrics_namespace, timestamp_ms, info);
    e.property("Event", event_name);
    add_gpu_metrics(e, set);
    events.push_back(std::move(e));
  }
  return events;
}

EmfEvent make_run_event(const std::string& metrics_namespace, int64_t timestamp_ms, const RunInfo& info) {
  EmfEvent event(metrics_namespace, timestamp_ms);
  event.dimension("Model", info.model)
      .dimension("Precision", precision_word(info.precision))
      .dimension("NumGPUs", std::to_string(num_gpus(info)))
      .dimension_set({"Model", "Precision", "NumGPUs"})
      .dimension_set({"Model"});
  event.property("WorldSize", info.world_size)
      .property("GlobalBatch", info.global_batch)
      .property("PerDeviceBatch", info.per_device_batch)
      .property("DeviceKind", info.device_kind);
  return event;
}

// ---------------------------------------------------------------- EmfReporter

EmfReporter::EmfReporter(std::ostream& out, EmfOptions options) : out_(out), options_(std::move(options)) {
  if (auto why = check_emf_namespace(options_.metrics_namespace)) {
    throw std::invalid_argument("--metrics_namespace='" + options_.metrics_namespace + "': " + *why);
  }
}

int64_t EmfReporter::now_ms() const {
  if (options_.clock_ms) return options_.clock_ms();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

EmfEvent EmfReporter::base_event(const RunInfo& info, const char* event) const {
  EmfEvent e = make_run_event(options_.metrics_namespace, now_ms(), info);
  e.property("Event", event);
  for (const auto& [key, value] : options_.context) e.property(key, value);
  return e;
}

void EmfReporter::write(const EmfEvent& event) {
  const std::string line = event.to_line() + "\n";
  out_.write(line.data(), static_cast<std::streamsize>(line.size()));
  out_.flush();
  if (!out_) {
    ++failed_events_;
    out_.clear();
  }
}

void EmfReporter::header(const RunInfo& /*info*/) {}

void EmfReporter::step(const RunInfo& info, const StepStats& stats) {
  try {
    EmfEvent e = base_event(info, "step");
    e.property("Step", stats.step)
        .property("ElapsedSeconds", stats.elapsed_s)
        .property("ImagesPerSecondUncertainty", stats.uncertainty)
        .property("ImagesPerSecondJitter", stats.jitter);
    e.metric("ImagesPerSecond", EmfUnit::CountPerSecond, stats.images_per_sec);
    e.metric("StepTime", EmfUnit::Milliseconds, stats.step_time_ms);
    e.metric("Loss", EmfUnit::None, stats.loss);
    write(e);
  } catch (const std::exception&) {
    ++failed_events_;
  }
  if (options_.gpu_readings) write_gpu_events(info, gpu_metric_sets(options_.gpu_readings()), "gpu");
}

void EmfReporter::summary(const RunResult& result) {
  const RunInfo& info = result.info;
  const RunSummary& summary = result.summary;
  try {
    EmfEvent e = base_event(info, "summary");
    e.property("Steps", summary.steps)
        .property("Images", summary.images)
        .property("WallTimeSeconds", summary.wall_time_s)
        .property("ImagesPerSecondUncertainty", summary.last.uncertainty)
        .property("ImagesPerSecondJitter", summary.last.jitter)
        .property("StopReason", summary.stop_reason);
    if (summary.steps > 0) {
      e.metric("TotalImagesPerSecond", EmfUnit::CountPerSecond, summary.total_images_per_sec);
      e.metric("StepTimeP50", EmfUnit::Milliseconds, summary.step_time_ms.p50);
      e.metric("StepTimeP90", EmfUnit::Milliseconds, summary.step_time_ms.p90);
      e.metric("StepTimeP99", EmfUnit::Milliseconds, summary.step_time_ms.p99);
      e.metric("Loss", EmfUnit::None, summary.final_loss);
    }
    // Always present, so every summary event holds a metric and an alarm can count
    // interrupted runs.
    e.metric("Interrupted", EmfUnit::Count, summary.interrupted ? 1.0 : 0.0);
    if (summary.replicas) {
      // 1 when a replica's parameters differ from the others' (an alarm's input).
      e.metric("ReplicaMismatch", EmfUnit::Count, summary.replicas->identical ? 0.0 : 1.0);
      e.property("ParameterHash", summary.replicas->hash);
    }
    write(e);
  } catch (const std::exception&) {
    ++failed_events_;
  }
  if (options_.gpu_readings && result.telemetry) {
    write_gpu_events(info, gpu_metric_sets(*result.telemetry), "gpu_summary");
  }
}

void EmfReporter::write_gpu_events(const RunInfo& info, const std::vector<GpuMetricSet>& sets, const char* event) {
  try {
    for (EmfEvent& e : make_gpu_events(options_.metrics_namespace, now_ms(), info, sets, event)) {
      for (const auto& [key, value] : options_.context) e.property(key, value);
      write(e);
    }
  } catch (const std::exception&) {
    ++failed_events_;
  }
}

}  // namespace cnnbench::bench
