// GPU telemetry as CloudWatch EMF events: metric sets (gpu_metrics.h) built from
// the fake NVML's samples, made into events as the reporter makes them
// (emf_report.h), and checked against the specification with
// validate_emf_line(), not only parsed.
#include "bench/report/gpu_metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "bench/report/emf.h"
#include "bench/report/emf_report.h"
#include "bench/telemetry/sampler.h"
#include "tests/bench/report/fake_run.h"
#include "tests/bench/telemetry/fake_gpus.h"

namespace cnnbench::bench::telemetry {
namespace {

using namespace fake;
using json = nlohmann::json;

RunInfo four_gpu_run() { return bench::testing::fake_gpu_run({kBusyGpu, kMigGpu, kCappedGpu, kFlakyGpu}, 256); }

/// Metric name -> unit of the event's (single) metric directive.
std::map<std::string, std::string> metric_units(const json& event) {
  std::map<std::string, std::string> units;
  for (const json& m : event["_aws"]["CloudWatchMetrics"][0]["Metrics"]) {
    units[m["Name"].get<std::string>()] = m.value("Unit", "None");
  }
  return units;
}

TEST(TelemetryEmf, OneValidEventPerGpuWithItsDimensions) {
  Nvml nvml(FAKE_NVML);
  Sampler sampler(nvml, {kBusyGpu, kMigGpu, kCappedGpu});
  sampler.sample_now();
  const std::vector<GpuMetricSet> sets = gpu_metric_sets(sampler.latest());
  ASSERT_EQ(sets.size(), 3U);

  const std::vector<EmfEvent> events = make_gpu_events("cnnbench", 1700000000123, four_gpu_run(), sets);
  ASSERT_EQ(events.size(), 3U);
  for (size_t i = 0; i < events.size(); ++i) {
    const std::string line = events[i].to_line();
    EXPECT_EQ(validate_emf_line(line), std::vector<std::string>{}) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    const json e = json::parse(line);
    EXPECT_EQ(e["_aws"]["Timestamp"], 1700000000123);
    const json& directive = e["_aws"]["CloudWatchMetrics"][0];
    EXPECT_EQ(directive["Namespace"], "cnnbench");
    const json& sets_declared = directive["Dimensions"];
    EXPECT_NE(std::find(sets_declared.begin(), sets_declared.end(), json({"Model", "Precision", "NumGPUs", "GPU"})),
              sets_declared.end());
    EXPECT_NE(std::find(sets_declared.begin(), sets_declared.end(), json({"UUID"})), sets_declared.end());
    EXPECT_EQ(e["GPU"], std::to_string(sets[i].index));
    EXPECT_EQ(e["UUID"], sets[i].uuid);
    EXPECT_EQ(e["Model"], "resnet50");
    EXPECT_EQ(e["Precision"], "fp16");
    EXPECT_EQ(e["NumGPUs"], "4");
    EXPECT_EQ(e["Event"], "gpu");
  }

  // The busy GPU: all five metrics, in the units DCGM's counterparts imply.
  const json busy = json::parse(events[0].to_line());
  EXPECT_EQ(metric_units(busy), (std::map<std::string, std::string>{{"GPUUtilization", "Percent"},
                                                                    {"GPUMemoryUsed", "Megabytes"},
                                                                    {"GPUPower", "None"},
                                                                    {"GPUTemperature", "None"},
                                                                    {"GPUSMClock", "None"}}));
  EXPECT_GE(busy["GPUUtilization"].get<double>(), 90.0);
  EXPECT_DOUBLE_EQ(busy["GPUMemoryUsed"].get<double>(), 40960.0);
  EXPECT_GE(busy["GPUPower"].get<double>(), 650.0);
  EXPECT_DOUBLE_EQ(busy["GPUSMClock"].get<double>(), 1980.0);

  // The MIG device reports memory and clocks only: the rest is left out, not 0.
  const json mig = json::parse(events[1].to_line());
  EXPECT_EQ(metric_units(mig),
            (std::map<std::string, std::string>{{"GPUMemoryUsed", "Megabytes"}, {"GPUSMClock", "None"}}));
  EXPECT_FALSE(mig.contains("GPUPower"));
}

TEST(TelemetryEmf, SummarySetsCarryTheRunMeans) {
  Nvml nvml(FAKE_NVML);
  Sampler sampler(nvml, {kBusyGpu, kUnknownGpu});
  for (int i = 0; i < 4; ++i) sampler.sample_now();
  const std::vector<GpuMetricSet> sets = gpu_metric_sets(sampler.report());
  ASSERT_EQ(sets.size(), 1U) << "the GPU NVML could not open has no set";
  std::map<std::string, double> values;
  for (const GpuMetric& m : sets[0].metrics) values[m.name] = m.value;
  EXPECT_DOUBLE_EQ(values["GPUUtilization"], 95.0);
  EXPECT_DOUBLE_EQ(values["GPUPower"], 675.0);
  EXPECT_DOUBLE_EQ(values["GPUTemperature"], 61.0);
  const std::vector<EmfEvent> events = make_gpu_events("cnnbench/test", 1, four_gpu_run(), sets, "summary");
  EXPECT_EQ(validate_emf_line(events[0].to_line()), std::vector<std::string>{});
}

TEST(TelemetryEmf, AddsToAnEventTheReporterMade) {
  EmfEvent event = make_run_event("cnnbench", 42, four_gpu_run());
  event.property("Event", "step").property("Step", 10);
  GpuMetricSet set{
      2, kCappedGpu.uuid, 42, {{"GPUUtilization", EmfUnit::Percent, 100.0}, {"GPUPower", EmfUnit::None, 700.0}}};
  add_gpu_metrics(event, set);
  EXPECT_EQ(event.metric_count(), 2U);
  EXPECT_EQ(validate_emf_line(event.to_line()), std::vector<std::string>{});
}

TEST(TelemetryEmf, NothingWithoutTelemetry) {
  EXPECT_TRUE(gpu_metric_sets(std::vector<GpuReading>{}).empty());
  EXPECT_TRUE(gpu_metric_sets(unavailable_report("off")).empty());
  GpuReading nothing_read{kMigGpu, GpuSample{}};
  EXPECT_TRUE(gpu_metric_sets(std::vector<GpuReading>{nothing_read}).empty());
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
