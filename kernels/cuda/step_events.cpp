#include "kernels/cuda/step_events.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/handles.h"

namespace cnnbench::kernels::cuda {

CudaStepEvents::CudaStepEvents(int device, cudaStream_t stream, int capacity)
    : device_(device), stream_(stream) {
  if (capacity < 1) {
    throw std::invalid_argument("CudaStepEvents: capacity must be >= 1, got " +
                                std::to_string(capacity));
  }
  const ScopedDevice current(device_);
  starts_.reserve(static_cast<size_t>(capacity));
  stops_.reserve(static_cast<size_t>(capacity));
  for (int i = 0; i < capacity; ++i) {
    starts_.emplace_back();
    stops_.emplace_back();
  }
}

void CudaStepEvents::record_start() {
  if (started_ != stopped_) throw std::logic_error("CudaStepEvents: record_start twice");
  if (pending() == capacity()) {
    throw std::logic_error("CudaStepEvents: " + std::to_string(capacity()) +
                           " steps recorded and unread; read one with elapsed_ms() first");
  }
  const ScopedDevice current(device_);
  starts_[slot(started_)].record(stream_);
  ++started_;
}

void CudaStepEvents::record_stop() {
  if (started_ != stopped_ + 1) {
    throw std::logic_error("CudaStepEvents: record_stop without record_start");
  }
  const ScopedDevice current(device_);
  stops_[slot(stopped_)].record(stream_);
  ++stopped_;
}

double CudaStepEvents::elapsed_ms() {
  if (pending() == 0) throw std::logic_error("CudaStepEvents: no recorded step to read");
  const ScopedDevice current(device_);
  const Event& stop = stops_[slot(read_)];
  CNNBENCH_CHECK_CUDA(cudaEventSynchronize(stop.get()));
  const double ms = stop.elapsed_ms_since(starts_[slot(read_)]);
  ++read_;
  return std::max(ms, 1e-6);
}

}  // namespace cnnbench::kernels::cuda
