#include "mpi/gradient_buckets.h"

#include <stdexcept>
#include <string>

#include "mpi/bucket_streams.h"

namespace cnnbench::mpi {
namespace {

class HostBucketStreams final : public BucketStreams {
 public:
  void* begin(int /*bucket*/) override { return nullptr; }
  void end(int /*bucket*/) override {}
  void join(void* /*stream*/) override {}
  [[nodiscard]] void* stream() const override { return nullptr; }
};

}  // namespace

std::unique_ptr<BucketStreams> make_host_bucket_streams() {
  return std::make_unique<HostBucketStreams>();
}

GradientBuckets::GradientBuckets(Communicator& comm, kernels::BufferView gradients,
                                 void* compute_stream, const BucketSizes& sizes)
    : comm_(comm),
      gradients_(gradients),
      compute_stream_(compute_stream),
      tracker_(plan_buckets(gradients.count, gradients.dtype, sizes)) {
  if (gradients_.count > 0 && gradients_.data == nullptr) {
    throw std::invalid_argument("GradientBuckets: gradient buffer of " +
                                std::to_string(gradients_.count) + " elements has no data");
  }
  // One rank: nothing will be reduced, so no stream or event is made either.
  if (comm_.world_size() > 1 && compute_stream_ != nullptr) {
    streams_ =
        make_device_bucket_streams(compute_stream_, static_cast<int>(tracker_.buckets().size()));
  } else {
    streams_ = make_host_bucket_streams();
  }
}

GradientBuckets::~GradientBuckets() = default;

void GradientBuckets::on_grad_ready(int64_t offset, int64_t count) {
  if (comm_.world_size() == 1) return;
  const std::vector<int> released = tracker_.add(offset, count);
  auto* base = static_cast<char*>(gradients_.data);
  const int64_t element_bytes = kernels::dtype_size(gradients_.dtype);
  for (const int index : released) {
    const Bucket& bucket = tracker_.buckets()[static_cast<size_t>(index)];
    void* stream = streams_->begin(index);
    comm_.all_reduce_average(base + bucket.offset * element_bytes, bucket.count, gradients_.dtype,
                             stream);
    streams_->end(index);
  }
  if (tracker_.complete()) {
    // The optimizer comes next on the compute stream: order it after every bucket.
    streams_->join(compute_stream_);
    tracker_.reset();
    ++completed_steps_;
  }
}

kernels::GradReadyFn GradientBuckets::hook() {
  if (comm_.world_size() == 1) return nullptr;
  return [this](int64_t offset, int64_t count) { on_grad_ready(offset, count); };
}

void GradientBuckets::wait_all(void* compute_stream) {
  if (tracker_.partial()) {
    throw std::logic_error("gradient all-reduce: only " + std::to_string(tracker_.released()) +
                           " of " + std::to_string(tracker_.buckets().size()) +
                           " buckets were complete when the step ended: the reported gradient "
                           "ranges do not cover the buffer");
  }
  streams_->join(compute_stream);
}

void GradientBuckets::reset() { tracker_.reset(); }

void* GradientBuckets::comm_stream() const { return streams_->stream(); }

}  // namespace cnnbench::mpi
