#include "mpi/nccl_comm.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>

#include "mpi/backoff.h"
#include "mpi/communicator.h"
#include "mpi/dtype_name.h"
#include "mpi/host.h"

namespace cnnbench::mpi {
namespace {

using Clock = std::chrono::steady_clock;

std::string seconds_text(std::chrono::milliseconds t) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(t.count()) / 1000.0);
  return text;
}

}  // namespace

ncclDataType_t to_nccl(kernels::DType dtype) {
  switch (dtype) {
    case kernels::DType::F32:
      return ncclFloat32;
    case kernels::DType::F16:
      return ncclFloat16;
    case kernels::DType::BF16:
      return ncclBfloat16;
    case kernels::DType::I32:
      break;
  }
  throw std::invalid_argument(std::string("the NCCL communicator reduces F32, F16 and BF16; got ") +
                              dtype_name(dtype));
}

NcclComm::NcclComm(int rank, int world_size, int device, bool blocking)
    : rank_(rank), world_size_(world_size), device_(device), blocking_(blocking) {}

NcclComm::~NcclComm() {
  if (comm_ == nullptr || aborted_) return;
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_);
  release();
  if (previous >= 0) (void)cudaSetDevice(previous);
}

void NcclComm::release() noexcept {
  // After an error elsewhere the peers may never quiesce: abort rather than wait.
  if (std::uncaught_exceptions() > 0) {
    abort();
    return;
  }
  if (!blocking_) {
    // Non-blocking: finalize returns at once and the communicator becomes ready
    // when every rank has finalized; bounded, then abort.
    ncclResult_t state = ncclCommFinalize(comm_);
    const auto deadline = Clock::now() + kNcclFinalizeLimit;
    Backoff backoff;
    while (state == ncclInProgress && Clock::now() < deadline) {
      backoff.pause();
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclInternalError;
    }
    if (state != ncclSuccess) {
      abort();
      return;
    }
  }
  // Blocking communicators of one process (ncclCommInitAll) are destroyed one
  // after another from one thread, as nccl-tests does.
  (void)ncclCommDestroy(comm_);
  comm_ = nullptr;
}

ncclComm_t NcclComm::get() const {
  if (aborted_) {
    throw CommunicatorError("NCCL communicator of " + where() +
                            " was aborted after an earlier error; it cannot be used again");
  }
  return comm_;
}

std::string NcclComm::where() const {
  return rank_location(rank_, world_size_) + " (GPU " + std::to_string(device_) + ")";
}

bool NcclComm::abort() noexcept {
  if (aborted_ || comm_ == nullptr) {
    aborted_ = true;
    return true;
  }
  aborted_ = true;
  ncclComm_t comm = std::exchange(comm_, nullptr);
  try {
    std::promise<void> finished;
    std::future<void> done = finished.get_future();
    std::thread aborter([comm, device = device_, p = std::move(finished)]() mutable {
      (void)cudaSetDevice(device);
      (void)ncclCommAbort(comm);
      p.set_value();
    });
    if (done.wait_for(kNcclAbortLimit) == std::future_status::ready) {
      aborter.join();
      return true;
    }
    aborter.detach();  // stuck inside NCCL; the process is expected to exit
    return false;
  } catch (...) {
    // No thread could be started: abort inline, without a limit.
    (void)ncclCommAbort(comm);
    return true;
  }
}

void NcclComm::fail(const std::string& message, bool with_last_error) {
  std::string text = message;
  if (with_last_error) {
    const char* last = ncclGetLastError(comm_);
    if (last != nullptr && last[0] != '\0') text += " (NCCL: " + std::string(last) + ")";
  }
  const bool aborted_in_time = abort();
  text += aborted_in_time ? "; the NCCL communicator was aborted"
                          : "; ncclCommAbort did not return within " +
                                std::to_string(kNcclAbortLimit.count()) + " s: end the process";
  throw CommunicatorError(text);
}

void NcclComm::settle(ncclResult_t result, const char* call, std::chrono::milliseconds timeout,
                      NcclStage stage) {
  if (result == ncclSuccess) return;
  if (result != ncclInProgress) {
    fail("NCCL error " + std::string(ncclGetErrorString(result)) + " in `" + call + "` on " +
             where(),
         true);
  }
  const auto deadline = Clock::now() + timeout;
  Backoff backoff;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t query = ncclCommGetAsyncError(comm_, &state);
    if (query != ncclSuccess) state = query;
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      fail("NCCL error " + std::string(ncclGetErrorString(state)) + " in `" + call + "` on " +
               where(),
           true);
    }
    if (Clock::now() >= deadline) {
      std::string message = "`";
      message.append(call).append("` did not finish within ").append(seconds_text(timeout));
      message.append(" on ").append(where()).append(". ").append(nccl_hang_hint(stage));
      fail(message, false);
    }
    backoff.pause();
  }
}

void NcclComm::wait_event(cudaEvent_t event, std::chrono::milliseconds timeout,
                          const std::string& what, const std::function<bool()>& peer_failed) {
  (void)get();  // throws when aborted
  const auto deadline = Clock::now() + timeout;
  Backoff backoff;
  for (;;) {
    const cudaError_t query = cudaEventQuery(event);
    if (query == cudaSuccess) return;
    if (query != cudaErrorNotReady) {
      (void)cudaGetLastError();
      fail("CUDA error " + std::string(cudaGetErrorName(query)) + " (" + cudaGetErrorString(query) +
               ") while waiting for the " + what + " on " + where(),
           false);
    }
    ncclResult_t state = ncclSuccess;
    const ncclResult_t poll = ncclCommGetAsyncError(comm_, &state);
    if (poll != ncclSuccess) state = poll;
    if (state != ncclSuccess && state != ncclInProgress) {
      fail("NCCL reported " + std::string(ncclGetErrorString(state)) + " during the " + what +
               " on " + where(),
           true);
    }
    if (peer_failed && peer_failed()) {
      fail("the " + what + " on " + where() +
               " was abandoned: another GPU's thread of this process stopped after an error "
               "(see its message)",
           false);
    }
    if (Clock::now() >= deadline) {
      fail("the " + what + " did not complete within " + seconds_text(timeout) + " on " + where() +
               ". " + nccl_hang_hint(NcclStage::Collective),
           false);
    }
    backoff.pause();
  }
}

}  // namespace cnnbench::mpi
