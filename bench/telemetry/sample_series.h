// A GPU's samples over the whole run in bounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/telemetry/gpu_sample.h"

namespace cnnbench::bench::telemetry {

/// Keeps every sample until `capacity` are stored. Past it, the series halves its
/// resolution instead of growing: every second stored sample is dropped and from
/// then on only every stride()-th sample offered is kept, so the stored series
/// still spans the whole run, evenly, with between capacity/2 and capacity
/// samples. (At the default interval of 1 s and 100000 samples, halving starts
/// after 27.7 hours.) Summaries are computed from every sample offered, not from
/// this series (GpuSummary), so they stay exact.
class SampleSeries {
 public:
  /// `capacity` is raised to 2 if smaller.
  explicit SampleSeries(size_t capacity);

  void push(const GpuSample& sample);

  [[nodiscard]] const std::vector<GpuSample>& stored() const { return stored_; }
  [[nodiscard]] size_t capacity() const { return capacity_; }
  /// Samples offered so far, stored or not.
  [[nodiscard]] int64_t offered() const { return offered_; }
  /// 1 while every sample is kept; 2^k after k halvings. stored()[i] is the
  /// (i × stride())-th sample offered.
  [[nodiscard]] int64_t stride() const { return stride_; }

 private:
  size_t capacity_;
  std::vector<GpuSample> stored_;
  int64_t offered_ = 0;
  int64_t stride_ = 1;
};

}  // namespace cnnbench::bench::telemetry
