// The pure parts of the telemetry: samples, the bounded series and the summary.
#include <gtest/gtest.h>

#include "bench/telemetry/gpu_sample.h"
#include "bench/telemetry/gpu_summary.h"
#include "bench/telemetry/nvml_abi.h"
#include "bench/telemetry/sample_series.h"

namespace cnnbench::bench::telemetry {
namespace {

GpuSample sample_at(int64_t t) {
  GpuSample s;
  s.time_ms = t;
  return s;
}

TEST(GpuSample, IsCompactAndKnowsWhatItRead) {
  EXPECT_LE(sizeof(GpuSample), 64U);
  GpuSample s;
  EXPECT_FALSE(s.value(Figure::Power));
  s.power_w = 312.5F;
  s.mark(Figure::Power);
  EXPECT_TRUE(s.has(Figure::Power));
  EXPECT_DOUBLE_EQ(*s.value(Figure::Power), 312.5);
  EXPECT_FALSE(s.has(Figure::Temperature));
  s.pcie_replays = 7;
  s.mark(Figure::PcieReplays);
  EXPECT_DOUBLE_EQ(*s.value(Figure::PcieReplays), 7.0);
}

TEST(GpuSample, FigureKeysAreDistinct) {
  for (int a = 0; a < kFigureCount; ++a) {
    for (int b = a + 1; b < kFigureCount; ++b) {
      EXPECT_STRNE(figure_key(static_cast<Figure>(a)), figure_key(static_cast<Figure>(b)));
    }
  }
}

TEST(ClockEventReasons, NamesBitsAndClassifiesThrottling) {
  EXPECT_EQ(describe_clock_event_reasons(0), "none");
  EXPECT_EQ(describe_clock_event_reasons(nvml::kReasonSwPowerCap | nvml::kReasonSyncBoost), "power cap, sync boost");
  EXPECT_EQ(describe_clock_event_reasons(uint64_t{1} << 40), "other");
  EXPECT_EQ(power_throttle_mask(), nvml::kReasonSwPowerCap);
  EXPECT_EQ(thermal_hw_throttle_mask(), nvml::kReasonHwSlowdown | nvml::kReasonSwThermalSlowdown |
                                            nvml::kReasonHwThermalSlowdown | nvml::kReasonHwPowerBrakeSlowdown);
  EXPECT_EQ(power_throttle_mask() & thermal_hw_throttle_mask(), 0U);
  // Idle, sync boost and the clock settings are not throttling.
  EXPECT_EQ((power_throttle_mask() | thermal_hw_throttle_mask()) &
                (nvml::kReasonGpuIdle | nvml::kReasonSyncBoost | nvml::kReasonApplicationsClocksSetting |
                 nvml::kReasonDisplayClockSetting),
            0U);
  EXPECT_EQ(clock_event_reasons().size(), 9U);
}

TEST(SampleSeries, KeepsEverySampleUpToItsCapacity) {
  SampleSeries series(8);
  for (int i = 0; i < 7; ++i) series.push(sample_at(i));
  ASSERT_EQ(series.stored().size(), 7U);
  EXPECT_EQ(series.stride(), 1);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(series.stored()[static_cast<size_t>(i)].time_ms, i);
}

TEST(SampleSeries, PastItsCapacityHalvesItsResolutionAndStaysEven) {
  constexpr size_t kCapacity = 16;
  SampleSeries series(kCapacity);
  for (int i = 0; i < 10000; ++i) {
    series.push(sample_at(i));
    ASSERT_LT(series.stored().size(), kCapacity);
  }
  EXPECT_EQ(series.offered(), 10000);
  EXPECT_GE(series.stored().size(), kCapacity / 2 - 1);
  // stored()[i] is sample i × stride: evenly spread over the whole run.
  for (size_t i = 0; i < series.stored().size(); ++i) {
    EXPECT_EQ(series.stored()[i].time_ms, static_cast<int64_t>(i) * series.stride()) << i;
  }
  EXPECT_GT(series.stored().back().time_ms, 10000 - 2 * series.stride());
}

TEST(SampleSeries, OddCapacityToo) {
  SampleSeries series(5);
  for (int i = 0; i < 100; ++i) series.push(sample_at(i));
  for (size_t i = 0; i < series.stored().size(); ++i) {
    EXPECT_EQ(series.stored()[i].time_ms, static_cast<int64_t>(i) * series.stride());
  }
  EXPECT_LT(series.stored().size(), 5U);
}

TEST(GpuSummary, MeanMinMaxOfWhatWasRead) {
  GpuSummary summary;
  for (const float power : {100.0F, 200.0F, 300.0F}) {
    GpuSample s;
    s.power_w = power;
    s.mark(Figure::Power);
    summary.add(s);
  }
  summary.add(GpuSample{});  // read nothing
  EXPECT_EQ(summary.samples(), 4);
  const GaugeStats& p = summary.gauge(Figure::Power);
  EXPECT_EQ(p.count, 3);
  EXPECT_DOUBLE_EQ(p.mean, 200.0);
  EXPECT_DOUBLE_EQ(p.min, 100.0);
  EXPECT_DOUBLE_EQ(p.max, 300.0);
  EXPECT_EQ(summary.gauge(Figure::Temperature).count, 0);
  EXPECT_FALSE(summary.power_throttled_share());
  EXPECT_FALSE(summary.throttled_share());
}

TEST(GpuSummary, SharesOfThrottledSamples) {
  GpuSummary summary;
  const uint64_t reasons[] = {0, nvml::kReasonSwPowerCap, nvml::kReasonSwPowerCap | nvml::kReasonHwSlowdown,
                              nvml::kReasonSyncBoost, nvml::kReasonSwThermalSlowdown};
  for (const uint64_t r : reasons) {
    GpuSample s;
    s.clock_event_reasons = r;
    s.mark(Figure::ClockEventReasons);
    summary.add(s);
  }
  EXPECT_EQ(summary.reason_samples(), 5);
  EXPECT_DOUBLE_EQ(*summary.power_throttled_share(), 2.0 / 5);
  EXPECT_DOUBLE_EQ(*summary.thermal_hw_throttled_share(), 2.0 / 5);
  EXPECT_DOUBLE_EQ(*summary.throttled_share(), 3.0 / 5);
  EXPECT_EQ(summary.reason_count(nvml::kReasonSwPowerCap), 2);
  EXPECT_EQ(summary.reason_count(nvml::kReasonSyncBoost), 1);
  EXPECT_EQ(summary.reason_count(nvml::kReasonGpuIdle), 0);
  EXPECT_EQ(summary.reason_count(3), 0) << "not one bit";
}

TEST(GpuSummary, CountersGrowFromTheirFirstReading) {
  GpuSummary summary;
  for (const uint64_t v : {10U, 10U, 13U}) {
    GpuSample s;
    s.pcie_replays = v;
    s.mark(Figure::PcieReplays);
    summary.add(s);
  }
  EXPECT_EQ(summary.pcie_replays().count, 3);
  EXPECT_EQ(summary.pcie_replays().increase(), 3U);
  EXPECT_EQ(summary.nvlink_errors().count, 0);
  EXPECT_EQ(summary.nvlink_errors().increase(), 0U);
}

}  // namespace
}  // namespace cnnbench::bench::telemetry
