// Gradient buckets: the flat gradient buffer is cut into buckets that are
// all-reduced as soon as backward has finished every gradient in them, so that
// communication overlaps the rest of backward.
//
// Following PyTorch DDP (torch/csrc/distributed/c10d/reducer.cpp and
// DistributedDataParallel's bucket_cap_mb): buckets of 25 MiB, the first one
// 1 MiB so that the first all-reduce starts early; all-reduces launched strictly
// in bucket order, the same on every rank, whatever order ranges complete in.
//
// Averaging: the communicator averages (Communicator::all_reduce_average:
// ncclAvg on NCCL, sum then one division on host buffers). The reduced buffer
// holds the mean gradient; the optimizer must not scale by 1/world_size again.
//
// Layering: plan_buckets and BucketTracker are pure (no MPI, no GPU);
// GradientBuckets drives a Communicator and, for device buffers, a
// communication stream ordered by events (bucket_streams.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "mpi/communicator.h"

namespace cnnbench::mpi {

/// A contiguous range of the flat gradient buffer, in elements.
struct Bucket {
  int64_t offset = 0;
  int64_t count = 0;
  [[nodiscard]] int64_t end() const { return offset + count; }
  bool operator==(const Bucket&) const = default;
};

/// Bucket sizes in MiB (1 MiB = 2^20 bytes), as --allreduce_bucket_mb gives them.
struct BucketSizes {
  double bucket_mib = 25.0;       ///< every bucket but the first (PyTorch DDP's bucket_cap_mb)
  double first_bucket_mib = 1.0;  ///< the first bucket (DDP's first bucket); capped at bucket_mib
};

/// Whole elements of `dtype` in `mib` MiB, rounded down, at least 1. Throws
/// std::invalid_argument unless `mib` is finite and > 0.
int64_t elements_in_mib(double mib, kernels::DType dtype);

/// Splits [0, count) into consecutive buckets: the first of
/// elements_in_mib(first_bucket_mib), the others of elements_in_mib(bucket_mib),
/// the last one holding what remains. count 0 gives no bucket. Throws
/// std::invalid_argument for a negative count or sizes elements_in_mib rejects.
std::vector<Bucket> plan_buckets(int64_t count, kernels::DType dtype,
                                 const BucketSizes& sizes = {});

/// Tracks, within one step, which ranges of the buffer are final and which
/// buckets may be reduced. Ranges may arrive in any order and cut buckets
/// anywhere; a bucket is ready when every element of it was covered, and it is
/// released only after every bucket before it, so releases are in bucket order.
class BucketTracker {
 public:
  explicit BucketTracker(std::vector<Bucket> buckets);

  /// Records [offset, offset + count) as final; returns the indexes of the
  /// buckets released by this call, ascending (often none). count 0 is a no-op.
  /// Throws std::out_of_range for a range outside the buffer and
  /// std::logic_error for a range that overlaps one already recorded this step
  /// (the tracker is then unchanged).
  std::vector<int> add(int64_t offset, int64_t count);

  /// Every bucket released: the step's ranges covered the buffer exactly.
  [[nodiscard]] bool complete() const { return released_ == static_cast<int>(buckets_.size()); }
  /// Some range was recorded but not every bucket released (mid-step).
  [[nodiscard]] bool partial() const { return !ranges_.empty() && !complete(); }
  [[nodiscard]] int released() const { return released_; }
  [[nodiscard]] const std::vector<Bucket>& buckets() const { return buckets_; }
  /// Elements recorded so far in bucket `index`.
  [[nodiscard]] int64_t covered(int index) const { return covered_.at(static_cast<size_t>(index)); }
  /// Forgets the step: no range recorded, no bucket released.
  void reset();

 private:
  std::vector<Bucket> buckets_;
  std::vector<int64_t> covered_;
  std::map<int64_t, int64_t> ranges_;  ///< recorded ranges, offset -> end, merged when adjacent
  int released_ = 0;
  int64_t total_ = 0;
};

class BucketStreams;

/// All-reduces (averages) the gradient buffer bucket by bucket as backward
/// reports finished ranges through on_grad_ready (a kernels::GradReadyFn).
///
/// Host buffers (compute_stream == nullptr, CPU ranks): each bucket is averaged
/// synchronously when it is released.
/// Device buffers (compute_stream = the executable's cudaStream_t): per bucket,
/// an event recorded on the compute stream, the communication stream (highest
/// priority) waits on it, the all-reduce is enqueued there, and a done event is
/// recorded; when the last bucket of a step is released the compute stream
/// waits on every done event, so the optimizer enqueued after backward sees the
/// averaged gradients (wait_all does the same on demand). Nothing blocks the host.
/// With one rank nothing is tracked or enqueued and hook() is empty.
///
/// The step ends when the ranges have covered the buffer; the tracker then
/// starts over for the next step. Used by one host thread.
class GradientBuckets {
 public:
  /// `comm` must outlive this object; `gradients` is the executable's flat
  /// gradient buffer (kernels::Executable::gradients()). For device buffers the
  /// calling thread's current CUDA device must be the buffer's.
  GradientBuckets(Communicator& comm, kernels::BufferView gradients, void* compute_stream,
                  const BucketSizes& sizes = {});
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  /// Records a finished range and reduces the buckets it releases, in order.
  /// Errors: as BucketTracker::add, and whatever the communicator throws.
  void on_grad_ready(int64_t offset, int64_t count);
  /// on_grad_ready bound to this object, for Executable::train_step; empty with
  /// one rank (nothing to reduce), which lets the backend skip the calls.
  [[nodiscard]] kernels::GradReadyFn hook();
  /// Makes `compute_stream` wait for every reduction enqueued so far (device),
  /// nothing on the host. Throws std::logic_error when a step is half covered:
  /// the backend reported ranges that did not cover the buffer.
  void wait_all(void* compute_stream);
  /// Drops a half-covered step (after an error inside train_step).
  void reset();

  [[nodiscard]] const std::vector<Bucket>& buckets() const { return tracker_.buckets(); }
  /// Steps whose gradients were fully reduced since construction.
  [[nodiscard]] int64_t completed_steps() const { return completed_steps_; }
  /// The communication stream (cudaStream_t), nullptr for host buffers: wait on
  /// it with Communicator::wait to turn a hung all-reduce into an error.
  [[nodiscard]] void* comm_stream() const;

 private:
  Communicator& comm_;
  kernels::BufferView gradients_;
  void* compute_stream_;
  BucketTracker tracker_;
  std::unique_ptr<BucketStreams> streams_;
  int64_t completed_steps_ = 0;
};

}  // namespace cnnbench::mpi
