// GPU telemetry as the program wires it: a TelemetrySession over the fake
// libnvidia-ml.so.1 of tests/bench/telemetry, its report as text lines, and the
// per-GPU EMF events written beside the run's own, each checked with
// validate_emf_line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "bench/report/emf.h"
#include "bench/report/emf_report.h"
#include "bench/telemetry/session.h"
#include "bench/telemetry/telemetry_text.h"
#include "tests/bench/report/fake_run.h"
#include "tests/bench/telemetry/fake_gpus.h"

namespace cnnbench::bench {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

std::vector<telemetry::GpuId> gpu_ids() { return {telemetry::fake::kBusyGpu, telemetry::fake::kCappedGpu}; }

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

TEST(GpuTelemetry, SessionSamplesTheRunsGpusAndReportsThemAsTextAndEmf) {
  telemetry::TelemetrySession session(gpu_ids(), 50, {"  a note on other hosts"}, FAKE_NVML);
  ASSERT_NE(session.sampler(), nullptr);
  session.sampler()->sample_now();
  const telemetry::TelemetryReport report = session.report();
  ASSERT_TRUE(report.available()) << report.reason;
  ASSERT_EQ(report.gpus.size(), 2U);
  const std::string text = joined(telemetry::telemetry_lines(report)) + joined(session.notes());
  EXPECT_THAT(text, HasSubstr("GPU telemetry (NVML"));
  EXPECT_THAT(text, HasSubstr("GPU 2 (" + telemetry::fake::kCappedGpu.uuid + ")"));
  EXPECT_THAT(text, HasSubstr("  a note on other hosts\n"));

  std::ostringstream out;
  EmfOptions options;
  options.context = {{"Host", "ip-10-0-1-23"}};
  const telemetry::Sampler* sampler = session.sampler();
  options.gpu_readings = [sampler] { return sampler->latest(); };
  EmfReporter reporter(out, options);
  const RunInfo info = testing::fake_gpu_run(gpu_ids(), 64, 2);
  reporter.header(info);
  reporter.step(info, StepStats{});
  RunResult result{.info = info, .summary = RunSummary{}};
  result.telemetry = report;
  reporter.summary(result);
  EXPECT_EQ(reporter.failed_events(), 0);

  std::istringstream lines(out.str());
  std::vector<std::string> events;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(validate_emf_line(line), std::vector<std::string>{}) << line;
    const json e = json::parse(line);
    EXPECT_EQ(e.at("Host"), "ip-10-0-1-23");
    EXPECT_EQ(e.at("NumGPUs"), "2");
    // The run's own events carry no GPU dimension; each GPU's follow them.
    events.push_back(e.at("Event").get<std::string>() + (e.contains("GPU") ? " " + e.at("GPU").get<std::string>() : ""));
  }
  EXPECT_EQ(events, (std::vector<std::string>{"step", "gpu 0", "gpu 2", "summary", "gpu_summary 0", "gpu_summary 2"}));
}

TEST(GpuTelemetry, OffOnTheCpuWithZeroIntervalAndWithoutNvmlSayWhy) {
  const auto cpu = telemetry::make_telemetry_session(false, 1000, {});
  EXPECT_EQ(cpu->sampler(), nullptr);
  EXPECT_THAT(joined(telemetry::telemetry_lines(cpu->report())), HasSubstr("GPU telemetry off: this run trains on the CPU"));
  EXPECT_FALSE(cpu->report().available());

  const auto zero = telemetry::make_telemetry_session(true, 0, gpu_ids());
  EXPECT_EQ(zero->sampler(), nullptr);
  EXPECT_THAT(zero->report().reason, HasSubstr("--telemetry_interval_ms=0"));

  telemetry::TelemetrySession missing(gpu_ids(), 1000, {}, "/nonexistent/libnvidia-ml.so.1");
  EXPECT_FALSE(missing.report().available());
  EXPECT_THAT(joined(telemetry::telemetry_lines(missing.report())), HasSubstr("GPU telemetry off"));
}

}  // namespace
}  // namespace cnnbench::bench
