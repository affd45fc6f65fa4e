// NCCL across the GPUs of one process (NCCL.md section 1): ncclCommInitAll makes
// one communicator per GPU; each member is then driven by its own host thread.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.h"
#include "kernels/cuda/resources.h"
#include "mpi/local_group.h"
#include "mpi/nccl_comm.h"
#include "mpi/thread_exchange.h"

namespace cnnbench::mpi {
namespace {

/// How long a member's call may wait for NCCL to settle an enqueue (connections
/// made on first use, NCCL >= 2.22).
constexpr std::chrono::minutes kEnqueueLimit{5};

/// Restores the calling thread's current device on scope exit.
class DeviceGuard {
 public:
  DeviceGuard() { (void)cudaGetDevice(&previous_); }
  ~DeviceGuard() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class NcclLocalGroup;

class LocalMember final : public Communicator {
 public:
  LocalMember(NcclLocalGroup& group, int rank, NcclComm& comm)
      : group_(group), rank_(rank), comm_(comm) {}

  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override;
  [[nodiscard]] int local_rank() const override { return rank_; }
  [[nodiscard]] int local_size() const override { return world_size(); }

  void all_reduce_sum(void* data, int64_t count, kernels::DType dtype, void* stream) override {
    reduce(data, count, dtype, stream, ncclSum);
  }
  void all_reduce_average(void* data, int64_t count, kernels::DType dtype, void* stream) override {
    reduce(data, count, dtype, stream, ncclAvg);
  }
  std::vector<std::string> all_gather(const std::string& value) override;
  void barrier() override;
  void wait(void* stream, std::chrono::milliseconds timeout) override;
  [[noreturn]] void abort(int exit_code) override;

 private:
  void reduce(void* data, int64_t count, kernels::DType dtype, void* stream, ncclRedOp_t op);

  NcclLocalGroup& group_;
  int rank_;
  NcclComm& comm_;
  /// Recorded by wait(); created lazily on the member's device by its thread.
  std::unique_ptr<kernels::cuda::Event> event_;
};

class NcclLocalGroup final : public LocalGroup {
 public:
  explicit NcclLocalGroup(const std::vector<int>& devices)
      : devices_(validated(devices)), exchange_(static_cast<int>(devices_.size())) {
    const int n = static_cast<int>(devices_.size());
    for (int r = 0; r < n; ++r) {
      comms_.push_back(std::make_unique<NcclComm>(r, n, devices_[static_cast<size_t>(r)],
                                                  /*blocking=*/true));
    }
    std::vector<ncclComm_t> raw(devices_.size(), nullptr);
    DeviceGuard guard;
    const ncclResult_t st = ncclCommInitAll(raw.data(), n, devices_.data());
    if (st != ncclSuccess) {
      const char* last = ncclGetLastError(nullptr);
      throw CommunicatorError("NCCL error " + std::string(ncclGetErrorString(st)) +
                              " in `ncclCommInitAll` over GPUs " + device_list() +
                              (last != nullptr && last[0] != '\0'
                                   ? " (NCCL: " + std::string(last) + ")"
                                   : std::string()) +
                              ". " + nccl_hang_hint(NcclStage::Init));
    }
    for (int r = 0; r < n; ++r) {
      *comms_[static_cast<size_t>(r)]->out() = raw[static_cast<size_t>(r)];
      members_.push_back(std::make_unique<LocalMember>(*this, r, *comms_[static_cast<size_t>(r)]));
    }
  }

  ~NcclLocalGroup() override {
    members_.clear();
    comms_.clear();  // ncclCommDestroy one after another, each on its device
  }

  [[nodiscard]] int size() const override { return static_cast<int>(devices_.size()); }
  [[nodiscard]] int device(int rank) const override {
    return devices_.at(static_cast<size_t>(rank));
  }
  Communicator& member(int rank) override {
    check_rank(rank);
    return *members_[static_cast<size_t>(rank)];
  }
  void bind_thread(int rank) override {
    check_rank(rank);
    CNNBENCH_CHECK_CUDA(cudaSetDevice(devices_[static_cast<size_t>(rank)]));
  }
  void leave(int rank) override {
    check_rank(rank);
    failed_.store(true, std::memory_order_release);
    exchange_.leave(rank);
  }

  [[nodiscard]] bool failed() const { return failed_.load(std::memory_order_acquire); }
  ThreadExchange& exchange() { return exchange_; }

 private:
  void check_rank(int rank) const {
    if (rank < 0 || rank >= size()) {
      throw std::invalid_argument("LocalGroup: rank " + std::to_string(rank) + " is not in [0, " +
                                  std::to_string(size()) + ")");
    }
  }

  std::string device_list() const { return list_text(devices_); }

  static std::string list_text(const std::vector<int>& devices) {
    std::string text = "{";
    for (size_t i = 0; i < devices.size(); ++i) {
      if (i > 0) text += ", ";
      text += std::to_string(devices[i]);
    }
    return text + "}";
  }

  /// `devices` when every entry is an existing GPU listed once; else throws.
  static const std::vector<int>& validated(const std::vector<int>& devices) {
    if (devices.empty()) throw std::invalid_argument("LocalGroup: no GPU given");
    int count = 0;
    CNNBENCH_CHECK_CUDA(cudaGetDeviceCount(&count));
    std::set<int> seen;
    for (const int d : devices) {
      if (d < 0 || d >= count) {
        throw std::invalid_argument("LocalGroup: GPU " + std::to_string(d) + " of " +
                                    list_text(devices) + " does not exist: this process sees " +
                                    std::to_string(count) + " GPUs");
      }
      if (!seen.insert(d).second) {
        throw std::invalid_argument("LocalGroup: GPU " + std::to_string(d) +
                                    " is listed twice in " + list_text(devices) +
                                    "; NCCL allows one rank per GPU");
      }
    }
    return devices;
  }

  std::vector<int> devices_;
  ThreadExchange exchange_;
  std::vector<std::unique_ptr<NcclComm>> comms_;
  std::vector<std::unique_ptr<LocalMember>> members_;
  std::atomic<bool> failed_{false};
};

int LocalMember::world_size() const { return group_.size(); }

std::vector<std::string> LocalMember::all_gather(const std::string& value) {
  return group_.exchange().all_gather(rank_, value);
}

void LocalMember::barrier() { group_.exchange().barrier(rank_); }

void LocalMember::reduce(void* data, int64_t count, kernels::DType dtype, void* stream,
                         ncclRedOp_t op) {
  if (count < 0) throw std::invalid_argument("NCCL all-reduce: negative count");
  if (stream == nullptr) {
    throw std::invalid_argument(
        "the NCCL communicator reduces device buffers on a stream; got a null stream");
  }
  const ncclDataType_t type = to_nccl(dtype);
  if (count == 0) return;
  CNNBENCH_CHECK_CUDA(cudaSetDevice(comm_.device()));
  try {
    comm_.settle(ncclAllReduce(data, data, static_cast<size_t>(count), type, op, comm_.get(),
                               static_cast<cudaStream_t>(stream)),
                 "ncclAllReduce", kEnqueueLimit, NcclStage::Collective);
  } catch (const CommunicatorError&) {
    group_.leave(rank_);  // aborted: the other members must not wait for this one
    throw;
  }
}

void LocalMember::wait(void* stream, std::chrono::milliseconds timeout) {
  if (stream == nullptr) return;
  CNNBENCH_CHECK_CUDA(cudaSetDevice(comm_.device()));
  if (!event_) event_ = std::make_unique<kernels::cuda::Event>(/*disable_timing=*/true);
  event_->record(static_cast<cudaStream_t>(stream));
  try {
    comm_.wait_event(event_->get(), timeout, "NCCL all-reduce", [this] { return group_.failed(); });
  } catch (const CommunicatorError&) {
    group_.leave(rank_);
    throw;
  }
}

void LocalMember::abort(int exit_code) {
  // Every member is a thread of this process: ending the process ends them all.
  comm_.abort();
  std::_Exit(exit_code);
}

}  // namespace

std::unique_ptr<LocalGroup> make_local_group(const std::vector<int>& devices) {
  return std::make_unique<NcclLocalGroup>(devices);
}

}  // namespace cnnbench::mpi
