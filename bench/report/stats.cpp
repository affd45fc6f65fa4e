#include "bench/report/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace cnnbench::bench {
namespace {

void check_step_time(double t) {
  if (!(t > 0) || !std::isfinite(t)) {
    throw std::invalid_argument("step time must be a positive finite number of ms, got " +
                                std::to_string(t));
  }
}

double mean(std::span<const double> values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

/// Linear interpolation on already sorted values.
double percentile_sorted(const std::vector<double>& sorted, double p) {
  const double h = static_cast<double>(sorted.size() - 1) * p / 100.0;
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

double median(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("median of an empty series");
  // nth_element, not a sort: the trainer takes medians over every timed step at each
  // displayed step, so this stays linear in the number of steps.
  std::vector<double> v(values.begin(), values.end());
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double percentile(std::span<const double> values, double p) {
  if (values.empty()) throw std::invalid_argument("percentile of an empty series");
  if (!(p >= 0 && p <= 100)) {
    throw std::invalid_argument("percentile must be in [0, 100], got " + std::to_string(p));
  }
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  return percentile_sorted(sorted, p);
}

Throughput throughput(double global_batch, std::span<const double> step_times_ms) {
  Throughput t;
  if (step_times_ms.empty()) return t;
  std::vector<double> speeds;
  speeds.reserve(step_times_ms.size());
  for (double ms : step_times_ms) {
    check_step_time(ms);
    speeds.push_back(global_batch / (ms / 1000.0));
  }
  const double n = static_cast<double>(speeds.size());
  t.images_per_sec = global_batch / (mean(step_times_ms) / 1000.0);

  const double speed_mean = mean(speeds);
  double sum_sq = 0;
  for (double s : speeds) sum_sq += (s - speed_mean) * (s - speed_mean);
  t.uncertainty = std::sqrt(sum_sq / n) / std::sqrt(n);

  const double speed_median = median(speeds);
  std::vector<double> deviations;
  deviations.reserve(speeds.size());
  for (double s : speeds) deviations.push_back(std::abs(s - speed_median));
  t.jitter = 1.4826 * median(deviations);
  return t;
}

Percentiles summarize(std::span<const double> values) {
  Percentiles p;
  if (values.empty()) return p;
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  p.mean = mean(values);
  p.min = sorted.front();
  p.max = sorted.back();
  p.p50 = percentile_sorted(sorted, 50);
  p.p90 = percentile_sorted(sorted, 90);
  p.p99 = percentile_sorted(sorted, 99);
  return p;
}

void StepSeries::add(double step_time_ms) {
  check_step_time(step_time_ms);
  times_ms_.push_back(step_time_ms);
}

StepStats StepSeries::stats() const {
  if (times_ms_.empty()) throw std::logic_error("StepSeries::stats before any step");
  const Throughput t = throughput(global_batch_, times_ms_);
  StepStats s;
  s.step = count();
  s.images_per_sec = t.images_per_sec;
  s.uncertainty = t.uncertainty;
  s.jitter = t.jitter;
  s.step_time_ms = times_ms_.back();
  s.loss = std::numeric_limits<double>::quiet_NaN();
  return s;
}

}  // namespace cnnbench::bench
