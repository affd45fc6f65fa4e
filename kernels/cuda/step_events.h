// Device-event step timing for the CUDA executable (kernels::StepEvents): a
// ring of start/stop event pairs recorded on the compute stream, read oldest
// first. Host code; nothing here prints.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::kernels::cuda {

/// Events around steps on `stream` of `device`, with room for `capacity`
/// recorded and unread steps (2 suffices when the caller reads one step late).
/// cudaEventElapsedTime resolves about 0.5 µs; a step read as 0 ms is reported
/// as 1 ns so that a rate can always be derived from it.
class CudaStepEvents final : public StepEvents {
 public:
  /// Creates the events on `device`. Throws CudaError.
  CudaStepEvents(int device, cudaStream_t stream, int capacity = 4);
  void record_start() override;
  void record_stop() override;
  double elapsed_ms() override;
  [[nodiscard]] int pending() const override { return stopped_ - read_; }
  [[nodiscard]] int capacity() const override { return static_cast<int>(starts_.size()); }

 private:
  [[nodiscard]] size_t slot(long long n) const { return static_cast<size_t>(n % capacity()); }

  int device_;
  cudaStream_t stream_;
  std::vector<Event> starts_;
  std::vector<Event> stops_;
  // Monotonic counts: steps started, stopped and read.
  int started_ = 0;
  int stopped_ = 0;
  int read_ = 0;
};

}  // namespace cnnbench::kernels::cuda
