// NCCL across the GPUs of one process: one communicator per GPU, each driven by
// its own host thread (the in-process multi-GPU mode, no mpirun).
#pragma once

#include <memory>
#include <vector>

#include "mpi/communicator.h"

namespace cnnbench::mpi {

/// The GPUs of this process as one NCCL clique (ncclCommInitAll, single host).
/// Member r is GPU devices[r]; its Communicator has rank r, world size =
/// local size = number of GPUs. all_reduce_* run NCCL on the member's
/// communicator; all_gather and barrier meet the other members' threads in
/// memory (ThreadExchange). Rules (NCCL.md sections 1 and 3):
///   - one host thread per member, and only that thread calls member(r)'s methods;
///   - every member issues the same collectives in the same order;
///   - capturing these collectives into CUDA graphs can deadlock in
///     cudaGraphLaunch with several GPUs per process: capture and launch per
///     thread (cudaStreamCaptureModeThreadLocal) or run eagerly;
///   - a member thread that stops after an error calls leave(r), so the others'
///     all_gather/barrier/wait throw instead of waiting for it for ever.
class LocalGroup {
 public:
  virtual ~LocalGroup() = default;
  [[nodiscard]] virtual int size() const = 0;
  /// The CUDA ordinal of member `rank`.
  [[nodiscard]] virtual int device(int rank) const = 0;
  /// Member `rank`'s Communicator; valid as long as the group.
  virtual Communicator& member(int rank) = 0;
  /// Makes member `rank`'s GPU the calling thread's current CUDA device
  /// (cudaSetDevice): a member's thread calls it before it creates its
  /// GradientBuckets, whose stream and events go to the current device.
  virtual void bind_thread(int rank) = 0;
  /// Member `rank` stopped after an error (thread-safe; once per member).
  virtual void leave(int rank) = 0;
};

/// Creates the clique over `devices` (CUDA ordinals, distinct, e.g. {0, 1, 2, 3};
/// one device is a valid group of one). Throws std::invalid_argument for an
/// empty, repeated or out-of-range list, CommunicatorError when NCCL fails,
/// CommunicatorUnavailable when built without CUDA.
std::unique_ptr<LocalGroup> make_local_group(const std::vector<int>& devices);

}  // namespace cnnbench::mpi
