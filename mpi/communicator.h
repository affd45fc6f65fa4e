// Distribution: the Communicator interface that the trainer uses to reduce
// gradients and gather small host values across workers, whatever the transport.
// Implementations are chosen at run time (mpi/launch.h: make_communicator) from
// what was built (CMake options) and how the program was launched; callers hold
// no #ifdef.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace cnnbench::mpi {

/// A collective or a communicator set-up failed; what() names the operation, the
/// rank and the transport's own message, and where one is known, a hint.
class CommunicatorError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The transport asked for was not built into this binary (CNNBENCH_MPI or
/// CNNBENCH_CUDA off); what() says how to rebuild or how to run without it.
class CommunicatorUnavailable : public CommunicatorError {
 public:
  using CommunicatorError::CommunicatorError;
};

/// A group of workers (ranks) that train one model together. Rank 0 reports.
///
/// Threads: a Communicator is used by one host thread (the one that created it,
/// for MPI: MPI_THREAD_FUNNELED).
///
/// Errors: collective failures throw CommunicatorError naming the operation,
/// the rank and the transport's own message; misuse (a dtype or buffer kind the
/// transport does not reduce) throws std::invalid_argument.
class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  [[nodiscard]] virtual std::string name() const = 0;  ///< "single", "mpi", "nccl"
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world_size() const = 0;
  /// Rank among the workers on this host (selects the GPU under mpirun).
  [[nodiscard]] virtual int local_rank() const = 0;
  [[nodiscard]] virtual int local_size() const = 0;
  /// In-place sum of `count` elements of `dtype` at `data` over all ranks.
  /// `stream` is the cudaStream_t to order on for device buffers (NCCL), nullptr
  /// for host buffers (MPI, single). On a stream the call only enqueues.
  virtual void all_reduce_sum(void* data, int64_t count, kernels::DType dtype, void* stream) = 0;
  /// In-place mean over all ranks: the sum divided by world_size() once.
  /// NCCL uses ncclAvg (NCCL >= 2.10), which scales each contribution by
  /// 1/world_size before summing; host buffers are summed, then divided. The
  /// default implementation does the latter for F32 host buffers and throws
  /// std::invalid_argument for anything else; one rank: nothing to do.
  virtual void all_reduce_average(void* data, int64_t count, kernels::DType dtype, void* stream);
  /// Every rank's `value`, indexed by rank (small host data: report figures, UUIDs).
  virtual std::vector<std::string> all_gather(const std::string& value) = 0;
  /// `value` of rank `root` on every rank. Default: through all_gather.
  virtual std::string broadcast(const std::string& value, int root);
  virtual void barrier() = 0;
  /// Waits, on the host, until the work enqueued on `stream` so far (collectives
  /// included) has finished, and turns a collective that does not finish within
  /// `timeout` or that the transport reports as failed into a CommunicatorError
  /// with a hint, after tearing the transport down (NCCL: ncclCommAbort). Never
  /// call it while `stream` is being captured into a CUDA graph. nullptr: host
  /// collectives are synchronous, nothing to wait for (the default; a
  /// non-null stream throws std::invalid_argument where there is no device).
  virtual void wait(void* stream, std::chrono::milliseconds timeout);
  /// Ends every rank's run after an error on this one; does not return.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

/// One worker, no transport: all_reduce_sum is a no-op, all_gather returns {value}.
std::unique_ptr<Communicator> make_single_worker();

/// Divides `count` F32 elements at `data` by `divisor` in place (host memory):
/// the averaging step of host all-reduces. Division, not multiplication by the
/// reciprocal, so that the mean of equal values is exact.
void divide_host_f32(float* data, int64_t count, int divisor);

}  // namespace cnnbench::mpi
