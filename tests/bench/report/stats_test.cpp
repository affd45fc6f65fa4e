// tf_cnn_benchmarks' step statistics and numpy's linear percentiles on data
// small enough to work out by hand (the working is in the comments).
#include "bench/report/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

namespace cnnbench::bench {
namespace {

TEST(Throughput, MatchesHandComputedFigures) {
  // Global batch 100, step times 100, 200, 400, 500 ms.
  // Per-step speeds: 100/0.1 = 1000, 100/0.2 = 500, 100/0.4 = 250, 100/0.5 = 200 images/sec.
  // images/sec = 100 / mean(0.1, 0.2, 0.4, 0.5 s) = 100 / 0.3 = 333.333...
  // Speeds' mean 487.5; deviations 512.5, 12.5, -237.5, -287.5; squares 262656.25,
  // 156.25, 56406.25, 82656.25, sum 401875; population variance 100468.75;
  // std 316.9681...; +/- = std / √4 = 158.4840...
  // Jitter: median of speeds = (250 + 500) / 2 = 375; |speed − 375| = 625, 125, 125,
  // 175; their median = (125 + 175) / 2 = 150; × 1.4826 = 222.39.
  const std::vector<double> times = {100, 200, 400, 500};
  const Throughput t = throughput(100, times);
  EXPECT_NEAR(t.images_per_sec, 1000.0 / 3.0, 1e-9);
  EXPECT_NEAR(t.uncertainty, std::sqrt(100468.75) / 2.0, 1e-9);
  EXPECT_NEAR(t.uncertainty, 158.4840, 1e-4);
  EXPECT_NEAR(t.jitter, 222.39, 1e-9);
}

TEST(Throughput, OneStepHasNoSpread) {
  // tf_cnn_benchmarks' first line: "images/sec: X +/- 0.0 (jitter = 0.0)".
  const Throughput t = throughput(64, std::vector<double>{20.0});
  EXPECT_DOUBLE_EQ(t.images_per_sec, 3200.0);
  EXPECT_DOUBLE_EQ(t.uncertainty, 0.0);
  EXPECT_DOUBLE_EQ(t.jitter, 0.0);
}

TEST(Throughput, OddCountUsesTheMiddleSpeed) {
  // Batch 10, times 10, 20, 50 ms: speeds 1000, 500, 200; median 500;
  // |s − 500| = 500, 0, 300 → median 300 → jitter 1.4826 × 300 = 444.78.
  // images/sec = 10 / (80/3 ms) = 375.
  const Throughput t = throughput(10, std::vector<double>{10, 20, 50});
  EXPECT_NEAR(t.jitter, 444.78, 1e-9);
  EXPECT_NEAR(t.images_per_sec, 375.0, 1e-9);
}

TEST(Throughput, EmptySeriesIsZeroAndBadTimesThrow) {
  const Throughput t = throughput(64, std::vector<double>{});
  EXPECT_EQ(t.images_per_sec, 0.0);
  EXPECT_THROW(throughput(64, std::vector<double>{10, 0}), std::invalid_argument);
  EXPECT_THROW(throughput(64, std::vector<double>{NAN}), std::invalid_argument);
}

TEST(Percentile, LinearInterpolationAsNumpy) {
  // Sorted 10, 20, 30, 40, 50 (given unsorted). Position h = (n − 1)·p/100 = 4·p/100:
  //   p50: h = 2   → 30
  //   p90: h = 3.6 → 40 + 0.6·(50 − 40) = 46
  //   p99: h = 3.96 → 40 + 0.96·10 = 49.6
  //   p25: h = 1   → 20;  p0 → 10;  p100 → 50
  const std::vector<double> v = {50, 10, 40, 30, 20};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 30);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 46);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 49.6);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 20);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 10);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 50);
  // Even count: 1, 2, 3, 4 → p50 at h = 1.5 → 2.5 (= the median).
  EXPECT_DOUBLE_EQ(percentile(std::vector<double>{4, 1, 3, 2}, 50), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{7}), 7);
  EXPECT_THROW(percentile(std::vector<double>{}, 50), std::invalid_argument);
  EXPECT_THROW(percentile(v, 101), std::invalid_argument);
}

TEST(Summarize, MeanMinMaxAndPercentiles) {
  // 1..100 ms: mean 50.5; p50 at h = 49.5 → 50.5; p90 at h = 89.1 → 90.1;
  // p99 at h = 98.01 → 99.01.
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const Percentiles p = summarize(v);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
  EXPECT_DOUBLE_EQ(p.min, 1);
  EXPECT_DOUBLE_EQ(p.max, 100);
  EXPECT_NEAR(p.p50, 50.5, 1e-9);
  EXPECT_NEAR(p.p90, 90.1, 1e-9);
  EXPECT_NEAR(p.p99, 99.01, 1e-9);
}

TEST(StepSeries, StatsOfTheStepsSoFar) {
  StepSeries series(100);
  series.add(100);
  series.add(200);
  StepStats s = series.stats();
  EXPECT_EQ(s.step, 2);
  EXPECT_DOUBLE_EQ(s.step_time_ms, 200);
  EXPECT_NEAR(s.images_per_sec, 100 / 0.15, 1e-9);
  // Speeds 1000 and 500: population std 250, / √2.
  EXPECT_NEAR(s.uncertainty, 250 / std::sqrt(2.0), 1e-9);
  EXPECT_TRUE(std::isnan(s.loss));
  EXPECT_THROW(series.add(-1), std::invalid_argument);
  EXPECT_THROW((void)StepSeries(1).stats(), std::logic_error);
}

}  // namespace
}  // namespace cnnbench::bench
