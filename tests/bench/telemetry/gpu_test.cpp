// NVML on a real GPU: while every GPU spins, the samples are plausible (power
// and clocks above 0, utilization high). Skipped, with the reason, where there is
// no GPU or no NVML.
#include <gtest/gtest.h>

#include <iostream>

#include "bench/telemetry/sampler.h"
#include "bench/telemetry/telemetry_text.h"
#include "kernels/gpu_info.h"
#include "tests/bench/telemetry/gpu_busy.h"

namespace cnnbench::bench::telemetry {
namespace {

TEST(TelemetryGpu, PlausibleSamplesWhileBusy) {
  const kernels::GpuEnumeration e = kernels::enumerate_gpus();
  if (e.gpus.empty()) GTEST_SKIP() << "no GPU: " << e.error;
  const Nvml nvml;
  if (!nvml.available()) GTEST_SKIP() << nvml.reason();
  std::vector<GpuId> ids;
  for (const kernels::GpuInfo& g : e.gpus) ids.push_back({g.ordinal, g.uuid});

  SamplerOptions options;
  options.interval_ms = 100;
  Sampler sampler(nvml, ids, options);
  sampler.start();
  const std::string busy = fake::keep_gpus_busy(2000);
  sampler.stop();
  const TelemetryReport report = sampler.report();
  for (const std::string& line : telemetry_lines(report)) std::cout << line << '\n';
  if (!busy.empty()) std::cout << "GPUs not kept busy: " << busy << '\n';

  ASSERT_TRUE(report.available());
  ASSERT_EQ(report.gpus.size(), ids.size());
  for (const GpuTelemetry& g : report.gpus) {
    SCOPED_TRACE(g.id.uuid);
    ASSERT_TRUE(g.ok()) << g.error;
    EXPECT_FALSE(g.name.empty());
    EXPECT_GE(g.summary.samples(), busy.empty() ? 10 : 1);
    const auto check = [&g](Figure f, double low, double high) {
      if (!g.figure(f).supported) return;  // e.g. a MIG device
      const GaugeStats& s = g.summary.gauge(f);
      EXPECT_EQ(s.count, g.summary.samples()) << figure_key(f) << ": " << g.figure(f).last_error;
      EXPECT_GT(s.max, low) << figure_key(f);
      EXPECT_LT(s.max, high) << figure_key(f);
    };
    check(Figure::Power, 0, 2000);                            // W
    check(Figure::SmClock, 0, 5000);                          // MHz
    check(Figure::MemoryClock, 0, 20000);                     // MHz
    check(Figure::Temperature, 0, 120);                       // °C
    check(Figure::MemoryUsed, 0, 1 << 22);                    // MiB: 4 TiB
    if (busy.empty()) check(Figure::Utilization, 50, 100.5);  // %
  }
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
