// An owned NCCL communicator with the error handling of NCCL.md section 2:
// non-blocking calls settled by polling ncclCommGetAsyncError, a watchdog-style
// wait on an event (query, poll the async error, deadline) instead of
// cudaStreamSynchronize, and ncclCommAbort with its own time limit on any
// failure. Internal to mpi/ (CUDA builds only).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <string>

#include "kernels/backend.h"
#include "mpi/nccl_hint.h"

static_assert(NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0),
              "cnnbench needs NCCL 2.14 or later (ncclAvg, non-blocking communicators)");

namespace cnnbench::mpi {

/// The NCCL element type of `dtype`; std::invalid_argument for types the
/// gradient all-reduce does not use (I32).
ncclDataType_t to_nccl(kernels::DType dtype);

/// How long ncclCommAbort may take before it is abandoned (it has hung in some
/// NCCL versions; NCCL.md section 2).
inline constexpr std::chrono::seconds kNcclAbortLimit{10};
/// How long the non-blocking ncclCommFinalize may take at destruction.
inline constexpr std::chrono::seconds kNcclFinalizeLimit{30};

class NcclComm {
 public:
  /// `rank`/`world_size` name this member in messages; `blocking`: created by a
  /// blocking init (ncclCommInitAll) rather than with config.blocking = 0.
  NcclComm(int rank, int world_size, int device, bool blocking);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  /// Where the init writes the handle.
  ncclComm_t* out() { return &comm_; }
  /// The handle; throws CommunicatorError once aborted.
  [[nodiscard]] ncclComm_t get() const;
  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] bool aborted() const { return aborted_; }

  /// Checks the result of an NCCL call on this communicator. ncclInProgress (a
  /// non-blocking communicator still working on it) is polled until the
  /// communicator is ready, for at most `timeout`. Errors and timeouts abort
  /// the communicator and throw CommunicatorError with NCCL's messages and, for
  /// timeouts, nccl_hang_hint(stage).
  void settle(ncclResult_t result, const char* call, std::chrono::milliseconds timeout,
              NcclStage stage);

  /// Waits for `event` (recorded after the work to wait for) by polling it, the
  /// communicator's asynchronous error and `peer_failed` (may be empty) until
  /// it completes or `timeout` passes; failures abort and throw as settle().
  /// `what` names the operation for messages ("all-reduce").
  void wait_event(cudaEvent_t event, std::chrono::milliseconds timeout, const std::string& what,
                  const std::function<bool()>& peer_failed);

  /// ncclCommAbort within kNcclAbortLimit; idempotent, never throws. Returns
  /// false when the abort did not return in time (the call is left running in
  /// a detached thread: the process should exit soon).
  bool abort() noexcept;

  /// "rank 1 of 2 on host h (GPU 1)".
  [[nodiscard]] std::string where() const;

 private:
  /// Finalizes (non-blocking) and destroys, or aborts; the device is current.
  void release() noexcept;
  [[noreturn]] void fail(const std::string& message, bool with_last_error);

  ncclComm_t comm_ = nullptr;
  int rank_;
  int world_size_;
  int device_;
  bool blocking_;
  bool aborted_ = false;
};

}  // namespace cnnbench::mpi
