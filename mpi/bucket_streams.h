// How the reduction of a gradient bucket is ordered with the backward work that
// produced it. Host buffers: nothing to order (the reduction is synchronous).
// Device buffers: a communication stream and events (bucket_streams_cuda.cpp,
// or a stand-in that throws when CNNBENCH_CUDA is off).
#pragma once

#include <memory>

namespace cnnbench::mpi {

class BucketStreams {
 public:
  virtual ~BucketStreams() = default;
  /// Orders bucket `bucket`'s reduction after the work enqueued so far on the
  /// compute stream; returns the stream to reduce on (nullptr: host, synchronous).
  virtual void* begin(int bucket) = 0;
  /// Called once bucket `bucket`'s reduction was enqueued on begin()'s stream.
  virtual void end(int bucket) = 0;
  /// Makes `stream` wait for every reduction ended since the last join.
  virtual void join(void* stream) = 0;
  /// The communication stream; nullptr on the host.
  [[nodiscard]] virtual void* stream() const = 0;
};

/// Host buffers: every call is a no-op.
std::unique_ptr<BucketStreams> make_host_bucket_streams();

/// Device buffers on the current CUDA device: a non-blocking communication
/// stream at the greatest priority (cudaDeviceGetStreamPriorityRange; a
/// scheduling hint, no preemption) and two events per bucket, `num_buckets` of
/// each. `compute_stream` is the cudaStream_t that backward runs on. Throws
/// CommunicatorUnavailable when built without CUDA.
std::unique_ptr<BucketStreams> make_device_bucket_streams(void* compute_stream, int num_buckets);

}  // namespace cnnbench::mpi
