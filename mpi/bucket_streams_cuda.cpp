// Device ordering of gradient-bucket reductions (NCCL.md section 4): per bucket,
// an event after its last gradient kernel on the compute stream, the
// communication stream waits on it, the all-reduce, a done event; the compute
// stream waits on the done events before the optimizer. Every call only enqueues,
// so it also works while the compute stream is captured into a CUDA graph (the
// communication stream joins the capture through the first event and leaves it
// through join()).
#include <cuda_runtime.h>

#include <stdexcept>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/resources.h"
#include "mpi/bucket_streams.h"

namespace cnnbench::mpi {
namespace {

int greatest_stream_priority() {
  int least = 0;
  int greatest = 0;
  CNNBENCH_CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  return greatest;  // numerically the lowest
}

class DeviceBucketStreams final : public BucketStreams {
 public:
  DeviceBucketStreams(cudaStream_t compute, int num_buckets)
      : compute_(compute), comm_(greatest_stream_priority()) {
    if (num_buckets < 0) throw std::invalid_argument("DeviceBucketStreams: negative bucket count");
    ready_.reserve(static_cast<size_t>(num_buckets));
    done_.reserve(static_cast<size_t>(num_buckets));
    for (int i = 0; i < num_buckets; ++i) {
      ready_.emplace_back(/*disable_timing=*/true);
      done_.emplace_back(/*disable_timing=*/true);
    }
  }

  void* begin(int bucket) override {
    const auto& ready = ready_.at(static_cast<size_t>(bucket));
    ready.record(compute_);
    CNNBENCH_CHECK_CUDA(cudaStreamWaitEvent(comm_.get(), ready.get(), 0));
    return comm_.get();
  }

  void end(int bucket) override {
    done_.at(static_cast<size_t>(bucket)).record(comm_.get());
    pending_.push_back(bucket);
  }

  void join(void* stream) override {
    auto* target = static_cast<cudaStream_t>(stream);
    for (const int bucket : pending_) {
      CNNBENCH_CHECK_CUDA(cudaStreamWaitEvent(target, done_[static_cast<size_t>(bucket)].get(), 0));
    }
    pending_.clear();
  }

  [[nodiscard]] void* stream() const override { return comm_.get(); }

 private:
  cudaStream_t compute_;
  kernels::cuda::Stream comm_;
  std::vector<kernels::cuda::Event> ready_;
  std::vector<kernels::cuda::Event> done_;
  std::vector<int> pending_;  ///< buckets ended since the last join
};

}  // namespace

std::unique_ptr<BucketStreams> make_device_bucket_streams(void* compute_stream, int num_buckets) {
  return std::make_unique<DeviceBucketStreams>(static_cast<cudaStream_t>(compute_stream),
                                               num_buckets);
}

}  // namespace cnnbench::mpi
