// The sampler thread, on the fake NVML: it samples at its interval, stops within
// one interval (at once, in fact), stays bounded, and does nothing without NVML.
#include "bench/telemetry/sampler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/bench/telemetry/fake_gpus.h"

namespace cnnbench::bench::telemetry {
namespace {

using namespace fake;
using Clock = std::chrono::steady_clock;

SamplerOptions every(int ms) {
  SamplerOptions options;
  options.interval_ms = ms;
  return options;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

TEST(CheckIntervalMs, AcceptsOffAndTheRange) {
  EXPECT_FALSE(check_interval_ms(0));
  EXPECT_FALSE(check_interval_ms(kMinIntervalMs));
  EXPECT_FALSE(check_interval_ms(kDefaultIntervalMs));
  EXPECT_FALSE(check_interval_ms(kMaxIntervalMs));
  EXPECT_EQ(check_interval_ms(49).value_or(""),
            "--telemetry_interval_ms=49: must be 0 (GPU telemetry off) or 50 to 60000 milliseconds");
  EXPECT_TRUE(check_interval_ms(-1));
  EXPECT_TRUE(check_interval_ms(60001));
}

TEST(Sampler, TakesRoughlyOneSamplePerInterval) {
  Nvml nvml(FAKE_NVML);
  Sampler sampler(nvml, {kBusyGpu, kCappedGpu}, every(100));
  const auto started = Clock::now();
  sampler.start();
  EXPECT_TRUE(sampler.running());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const auto stopping = Clock::now();
  sampler.stop();
  const double stop_ms = ms_since(stopping);
  const double ran_ms = ms_since(started);
  EXPECT_FALSE(sampler.running());
  EXPECT_LT(stop_ms, 100.0) << "stop() must return within one interval";
  // One at once, then one per 100 ms: 11 in 1000 ms; a loaded machine may skip ticks.
  for (size_t gpu = 0; gpu < 2; ++gpu) {
    const auto samples = sampler.samples(gpu);
    EXPECT_GE(samples.size(), 6U);
    EXPECT_LE(samples.size(), static_cast<size_t>(ran_ms / 100.0) + 1);
    for (size_t i = 1; i < samples.size(); ++i) {
      EXPECT_GE(samples[i].time_ms - samples[i - 1].time_ms, 50) << "ticks on a fixed schedule";
    }
  }
}

TEST(Sampler, StopWakesTheThreadAtOnce) {
  Nvml nvml(FAKE_NVML);
  Sampler sampler(nvml, {kBusyGpu}, every(60000));
  sampler.start();
  for (int i = 0; i < 200 && sampler.latest().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(sampler.latest().size(), 1U) << "the first sample is taken at once";
  const auto stopping = Clock::now();
  sampler.stop();
  EXPECT_LT(ms_since(stopping), 500.0) << "not at the next tick, a minute away";
  EXPECT_EQ(sampler.samples(0).size(), 1U);
  sampler.stop();  // again: nothing
}

TEST(Sampler, DestructorJoinsARunningThread) {
  Nvml nvml(FAKE_NVML);
  const auto t = Clock::now();
  {
    Sampler sampler(nvml, {kBusyGpu}, every(60000));
    sampler.start();
  }
  EXPECT_LT(ms_since(t), 500.0);
}

TEST(Sampler, WithoutNvmlDoesNothingAndSaysWhy) {
  Nvml nvml("/nonexistent/libnvidia-ml.so.1");
  Sampler sampler(nvml, {kBusyGpu});
  sampler.start();
  EXPECT_FALSE(sampler.running());
  sampler.sample_now();
  EXPECT_TRUE(sampler.latest().empty());
  const TelemetryReport report = sampler.report();
  EXPECT_FALSE(report.available());
  EXPECT_EQ(report.reason, nvml.reason());
  ASSERT_EQ(report.gpus.size(), 1U);
  EXPECT_FALSE(report.gpus[0].ok());
}

TEST(Sampler, AGpuNvmlCannotOpenIsReportedNotSampled) {
  Nvml nvml(FAKE_NVML);
  Sampler sampler(nvml, {kUnknownGpu, kBusyGpu});
  sampler.sample_now();
  const auto latest = sampler.latest();
  ASSERT_EQ(latest.size(), 1U);
  EXPECT_EQ(latest[0].id.uuid, kBusyGpu.uuid);
  const TelemetryReport report = sampler.report();
  ASSERT_EQ(report.gpus.size(), 2U);
  EXPECT_NE(report.gpus[0].error.find("Not Found"), std::string::npos);
  EXPECT_EQ(report.gpus[0].summary.samples(), 0);
  EXPECT_EQ(report.gpus[1].summary.samples(), 1);

  Sampler none(nvml, {kUnknownGpu});
  none.start();
  EXPECT_FALSE(none.running()) << "no GPU to sample";
}

TEST(Sampler, StaysBoundedWhileTheSummaryCountsEverySample) {
  Nvml nvml(FAKE_NVML);
  int64_t now = 0;
  Sampler sampler(nvml, {kCappedGpu},
                  {.interval_ms = 1000, .max_samples_per_gpu = 8, .clock_ms = [&now] { return now += 1000; }});
  for (int i = 0; i < 100; ++i) sampler.sample_now();
  const TelemetryReport report = sampler.report();
  ASSERT_EQ(report.gpus.size(), 1U);
  const GpuTelemetry& g = report.gpus[0];
  EXPECT_LT(g.samples.size(), 8U);
  EXPECT_EQ(g.summary.samples(), 100);
  EXPECT_GT(g.stride, 1);
  EXPECT_EQ(g.samples.front().time_ms, 1000);
  EXPECT_EQ(g.samples[1].time_ms - g.samples[0].time_ms, 1000 * g.stride);
  EXPECT_EQ(g.summary.pcie_replays().increase(), 99U);
  EXPECT_EQ(report.max_samples_per_gpu, 8U);
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
