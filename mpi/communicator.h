// Distribution: the Communicator interface that the trainer uses to reduce
// gradients and gather small host values across workers, whatever the transport.
// Implementations are chosen at run time (see make_* below); callers hold no #ifdef.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace cnnbench::mpi {

/// A group of workers (ranks) that train one model together. Rank 0 reports.
///
/// Errors: collective failures throw std::runtime_error naming the operation,
/// the rank and the transport's own message.
class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual std::string name() const = 0;  ///< "single", "mpi", "nccl"
  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int world_size() const = 0;
  /// Rank among the workers on this host (selects the GPU under mpirun).
  [[nodiscard]] virtual int local_rank() const = 0;
  [[nodiscard]] virtual int local_size() const = 0;
  /// In-place sum of `count` elements of `dtype` at `data` over all ranks.
  /// `stream` is the cudaStream_t to order on for device buffers, nullptr for host.
  virtual void all_reduce_sum(void* data, int64_t count, kernels::DType dtype, void* stream) = 0;
  /// Every rank's `value`, indexed by rank (small host data: report figures, UUIDs).
  virtual std::vector<std::string> all_gather(const std::string& value) = 0;
  virtual void barrier() = 0;
  /// Ends every rank's run after an error on this one; does not return.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

/// One worker, no transport: all_reduce_sum is a no-op, all_gather returns {value}.
std::unique_ptr<Communicator> make_single_worker();

}  // namespace cnnbench::mpi
