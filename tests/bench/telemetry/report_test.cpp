// The telemetry as the reports show it, from four rounds of samples of the fake
// NVML's GPUs: the text lines (mean / max, unsupported figures, the throttle
// warning), and the result JSON, checked against bench/telemetry/telemetry.schema.json.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/telemetry/sampler.h"
#include "bench/telemetry/telemetry_json.h"
#include "bench/telemetry/telemetry_text.h"
#include "tests/bench/telemetry/fake_gpus.h"

#ifndef CNNBENCH_TEST_PYTHON
#define CNNBENCH_TEST_PYTHON "python3"
#endif

namespace cnnbench::bench::telemetry {
namespace {

using namespace fake;
using json = nlohmann::ordered_json;

/// Four rounds of every fake GPU; the clock advances 1 s at each read.
TelemetryReport four_rounds(const Nvml& nvml) {
  int64_t now = 0;
  Sampler sampler(nvml, {kBusyGpu, kMigGpu, kCappedGpu, kFlakyGpu, kUnknownGpu},
                  {.interval_ms = 1000, .clock_ms = [&now] { return now += 1000; }});
  for (int i = 0; i < 4; ++i) sampler.sample_now();
  return sampler.report();
}

TEST(TelemetryText, MeanAndMaxPerGpuAndAWarningForTheThrottledOne) {
  Nvml nvml(FAKE_NVML);
  const std::vector<std::string> lines = telemetry_lines(four_rounds(nvml));
  const std::vector<std::string> expected = {
      "GPU telemetry (NVML, every 1000 ms; mean / max):",
      "  GPU 0 (GPU-00000000-0000-4000-8000-000000000000): utilization 95.0 / 100 %, memory used 40960 / 40960 MiB, "
      "power 675.0 / 700.0 W, temperature 61.0 / 62 \u00b0C, SM clock 1980 / 1980 MHz, memory clock 2619 / 2619 MHz; "
      "throttled: power 0.0%, thermal/HW 0.0% of 4 samples",
      "  GPU 1 (MIG-11111111-1111-4111-8111-111111111111): utilization n/a (not supported), memory used 10240 / 10240 "
      "MiB, power n/a (not supported), temperature n/a (not supported), SM clock 1980 / 1980 MHz, memory clock 2619 / "
      "2619 MHz; throttled: n/a (not supported), 4 samples",
      "  GPU 2 (GPU-22222222-2222-4222-8222-222222222222): utilization 100.0 / 100 %, memory used 40960 / 40960 MiB, "
      "power 700.0 / 700.0 W, temperature 71.0 / 72 \u00b0C, SM clock 1600 / 1600 MHz, memory clock 2619 / 2619 MHz; "
      "throttled: power 100.0%, thermal/HW 0.0% of 4 samples; PCIe replays +3",
      "  GPU 3 (GPU-33333333-3333-4333-8333-333333333333): utilization 95.0 / 100 %, memory used 40960 / 40960 MiB, "
      "power 650.0 / 650.0 W, temperature 61.0 / 62 \u00b0C, SM clock 1980 / 1980 MHz, memory clock 2619 / 2619 MHz; "
      "throttled: power 0.0%, thermal/HW 0.0% of 4 samples",
      "  GPU 4 (GPU-44444444-4444-4444-8444-444444444444): telemetry off: "
      "nvmlDeviceGetHandleByUUID(GPU-44444444-4444-4444-8444-444444444444): Not Found",
      "  GPU 3 (GPU-33333333-3333-4333-8333-333333333333): power_w missing from 2 of 4 samples; last error: "
      "nvmlDeviceGetPowerUsage: GPU is lost",
      "WARNING: GPU 2 (GPU-22222222-2222-4222-8222-222222222222) was throttled in 100.0% of samples (power cap "
      "100.0%, thermal/HW 0.0%): images/sec of this run understate GPU 2",
  };
  ASSERT_EQ(lines.size(), expected.size());
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], expected[i]) << "line " << i;
}

TEST(TelemetryText, ThrottleWarningsNameOnlyThrottledGpus) {
  Nvml nvml(FAKE_NVML);
  const std::vector<std::string> warnings = throttle_warnings(four_rounds(nvml));
  ASSERT_EQ(warnings.size(), 1U);
  EXPECT_NE(warnings[0].find("GPU 2 (GPU-22222222"), std::string::npos);
}

TEST(TelemetryText, OneLineWhenUnavailable) {
  Nvml nvml("/nonexistent/libnvidia-ml.so.1");
  Sampler sampler(nvml, {kBusyGpu});
  EXPECT_EQ(telemetry_lines(sampler.report()),
            std::vector<std::string>{"NVML not found (/nonexistent/libnvidia-ml.so.1): GPU telemetry off"});
  EXPECT_TRUE(throttle_warnings(sampler.report()).empty());
  EXPECT_EQ(telemetry_lines(unavailable_report("GPU telemetry off (--telemetry_interval_ms=0)")),
            std::vector<std::string>{"GPU telemetry off (--telemetry_interval_ms=0)"});
}

TEST(TelemetryJson, SummaryAndColumnsOfSamples) {
  Nvml nvml(FAKE_NVML);
  const json j = telemetry_json(four_rounds(nvml));
  EXPECT_EQ(j["available"], true);
  EXPECT_EQ(j["reason"], "");
  EXPECT_EQ(j["interval_ms"], 1000);
  EXPECT_EQ(j["max_samples_per_gpu"], kDefaultMaxSamplesPerGpu);
  ASSERT_EQ(j["gpus"].size(), 5U);

  const json& busy = j["gpus"][0];
  EXPECT_EQ(busy["index"], 0);
  EXPECT_EQ(busy["name"], "Fake H100 A");
  EXPECT_EQ(busy["summary"]["samples"], 4);
  EXPECT_DOUBLE_EQ(busy["summary"]["power_w"]["mean"].get<double>(), 675.0);
  EXPECT_DOUBLE_EQ(busy["summary"]["power_w"]["max"].get<double>(), 700.0);
  EXPECT_DOUBLE_EQ(busy["summary"]["clock_event_reasons"]["shares"]["sync_boost"].get<double>(), 1.0);
  EXPECT_EQ(busy["summary"]["nvlink_errors"]["last"], 10);
  EXPECT_EQ(busy["samples"]["stored"], 4);
  // The clock is read at each GPU's read: four GPUs open, so it advances 4 s per round.
  EXPECT_EQ(busy["samples"]["time_ms"], json({1000, 5000, 9000, 13000}));
  EXPECT_EQ(busy["samples"]["utilization_pct"].size(), 4U);

  const json& mig = j["gpus"][1];
  EXPECT_EQ(mig["figures"]["power_w"]["supported"], false);
  EXPECT_EQ(mig["figures"]["power_w"]["why_unsupported"], "not supported");
  EXPECT_TRUE(mig["summary"]["power_w"]["mean"].is_null());
  EXPECT_TRUE(mig["summary"]["clock_event_reasons"]["throttled_share"].is_null());
  EXPECT_EQ(mig["samples"]["power_w"], json({nullptr, nullptr, nullptr, nullptr}));

  const json& capped = j["gpus"][2];
  EXPECT_DOUBLE_EQ(capped["summary"]["clock_event_reasons"]["power_throttled_share"].get<double>(), 1.0);
  EXPECT_EQ(capped["summary"]["pcie_replays"]["increase"], 3);
  EXPECT_EQ(capped["samples"]["clock_event_reasons"], json({4, 4, 4, 4}));

  const json& flaky = j["gpus"][3];
  EXPECT_EQ(flaky["figures"]["power_w"]["failures"], 2);
  EXPECT_EQ(flaky["summary"]["power_w"]["count"], 2);

  EXPECT_NE(j["gpus"][4]["error"].get<std::string>().find("Not Found"), std::string::npos);
  EXPECT_EQ(j["gpus"][4]["samples"]["stored"], 0);
}

/// Exit status of tests/bench/report/validate_json_schema.py for `document`; 77 = jsonschema missing.
int validate(const json& document, const std::string& name) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << document.dump(2);
  const std::string command = std::string("'") + CNNBENCH_TEST_PYTHON + "' '" + CNNBENCH_SOURCE_DIR +
                              "/tests/bench/report/validate_json_schema.py' '" + CNNBENCH_SOURCE_DIR +
                              "/bench/telemetry/telemetry.schema.json' '" + path.string() + "'";
  const int status = std::system(command.c_str());
  std::filesystem::remove(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TelemetryJson, MatchesTheSchema) {
  Nvml nvml(FAKE_NVML);
  const std::string name = "cnnbench_telemetry_" + std::to_string(::getpid());
  const int sampled = validate(telemetry_json(four_rounds(nvml)), name + "_a.json");
  if (sampled == 77) GTEST_SKIP() << "jsonschema is not installed for " << CNNBENCH_TEST_PYTHON;
  EXPECT_EQ(sampled, 0);
  Nvml missing("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(validate(telemetry_json(Sampler(missing, {kBusyGpu}).report()), name + "_b.json"), 0);
  EXPECT_EQ(validate(telemetry_json(unavailable_report("off")), name + "_c.json"), 0);
  // The schema is strict: a misspelt member fails.
  json wrong = telemetry_json(four_rounds(nvml));
  wrong["gpus"][0]["summary"]["power_watts"] = 1;
  EXPECT_EQ(validate(wrong, name + "_d.json"), 1);
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
