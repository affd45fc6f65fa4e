// Step statistics with tf_cnn_benchmarks' formulas (benchmark_cnn.py,
// get_perf_timing), so that cnnbench's step lines read like its step lines.
#pragma once

#include <span>
#include <vector>

#include "bench/report/run_result.h"

namespace cnnbench::bench {

/// images/sec, its uncertainty and jitter over a series of step times.
struct Throughput {
  double images_per_sec = 0;  ///< global batch / mean step time
  double uncertainty = 0;     ///< population std-dev of per-step images/sec / √(steps)
  double jitter = 0;          ///< 1.4826 × median absolute deviation of per-step images/sec
};

/// tf_cnn_benchmarks' get_perf_timing without the moving average: per-step speed
/// s_i = global_batch / t_i; images_per_sec = global_batch / mean(t) (not mean(s):
/// a mean of rates would overweight fast steps); uncertainty = std(s) / √n with
/// numpy's default population std-dev (ddof = 0); jitter = 1.4826 × median(|s −
/// median(s)|), the MAD scaled to estimate σ for normally distributed speeds.
/// `step_times_ms` in milliseconds; all zero for an empty series. Throws
/// std::invalid_argument for a step time ≤ 0 or non-finite.
Throughput throughput(double global_batch, std::span<const double> step_times_ms);

/// Median as numpy.median: the middle element, or the mean of the two middle ones.
/// Throws std::invalid_argument for an empty series.
double median(std::span<const double> values);

/// Percentile p ∈ [0, 100] with numpy.percentile's default 'linear' interpolation:
/// on the sorted values x_0..x_{n−1}, position h = (n − 1)·p/100 and the result is
/// x_⌊h⌋ + (h − ⌊h⌋)·(x_⌊h⌋+1 − x_⌊h⌋). Throws std::invalid_argument for an empty
/// series or p outside [0, 100].
double percentile(std::span<const double> values, double p);

/// mean, min, p50, p90, p99 and max of `values` (linear percentiles as above);
/// all zero for an empty series. Units are those of the values (ms for step times).
Percentiles summarize(std::span<const double> values);

/// Accumulates the timed steps of a run and produces the StepStats of a step line.
class StepSeries {
 public:
  /// `global_batch`: images per step over all devices and ranks.
  explicit StepSeries(double global_batch) : global_batch_(global_batch) {}

  /// Records the next timed step's time (ms, > 0). Throws std::invalid_argument otherwise.
  void add(double step_time_ms);
  /// The StepStats after the last added step (step = count, loss and elapsed_s left
  /// for the caller). Requires at least one step.
  [[nodiscard]] StepStats stats() const;
  [[nodiscard]] int count() const { return static_cast<int>(times_ms_.size()); }
  [[nodiscard]] const std::vector<double>& times_ms() const { return times_ms_; }

 private:
  double global_batch_;
  std::vector<double> times_ms_;
};

}  // namespace cnnbench::bench
