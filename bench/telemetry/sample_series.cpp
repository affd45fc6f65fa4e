#include "bench/telemetry/sample_series.h"

#include <algorithm>

namespace cnnbench::bench::telemetry {

SampleSeries::SampleSeries(size_t capacity) : capacity_(std::max<size_t>(capacity, 2)) {}

void SampleSeries::push(const GpuSample& sample) {
  if (offered_ % stride_ == 0) {
    stored_.push_back(sample);
    if (stored_.size() >= capacity_) {
      // Keep the even positions: samples 0, 2s, 4s, ... of the old stride s.
      size_t kept = 0;
      for (size_t i = 0; i < stored_.size(); i += 2) stored_[kept++] = stored_[i];
      stored_.resize(kept);
      stride_ *= 2;
    }
  }
  ++offered_;
}

}  // namespace cnnbench::bench::telemetry
