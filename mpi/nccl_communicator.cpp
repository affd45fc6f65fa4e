// NCCL across MPI ranks, one GPU per rank chosen by local rank (NCCL.md section
// 1): rank 0 creates the unique id, MPI broadcasts its 128 bytes, every rank
// selects its GPU and joins with a non-blocking ncclCommInitRankConfig whose
// progress is polled against a deadline. Host collectives (all_gather,
// broadcast, barrier) and abort go through the host communicator (MPI).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cuda/check.h"
#include "kernels/cuda/resources.h"
#include "mpi/launch.h"
#include "mpi/nccl_comm.h"

namespace cnnbench::mpi {
namespace {

/// The GPU of this rank (gpu_for_local_rank), made current. Every rank reports its problem to all
/// others first, so that all of them fail together instead of some waiting in the next collective.
int select_device(Communicator& host) {
  int count = 0;
  std::string problem;
  const cudaError_t st = cudaGetDeviceCount(&count);
  int device = -1;
  if (st != cudaSuccess) {
    (void)cudaGetLastError();
    problem = std::string("CUDA cannot enumerate GPUs: ") + cudaGetErrorName(st) + " (" +
              cudaGetErrorString(st) + ")";
  } else {
    device = gpu_for_local_rank(host.local_rank(), host.local_size(), count);
    if (device < 0) {
      problem = "local rank " + std::to_string(host.local_rank()) + " of " +
                std::to_string(host.local_size()) + " has no GPU: this process sees " +
                std::to_string(count);
    }
  }
  const std::vector<std::string> problems = host.all_gather(problem);
  std::string all;
  for (size_t r = 0; r < problems.size(); ++r) {
    if (problems[r].empty()) continue;
    all +=
        (all.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " + problems[r];
  }
  if (!all.empty()) {
    throw CommunicatorError(
        "NCCL cannot start: " + all +
        ". Fix: start at most as many ranks per host as it has GPUs (mpirun -np N, or "
        "--map-by ppr:N:node on several hosts), and give the container every GPU "
        "(docker run --gpus all; ECS resourceRequirements GPU)");
  }
  CNNBENCH_CHECK_CUDA(cudaSetDevice(device));
  return device;
}

class NcclMpiCommunicator final : public Communicator {
 public:
  NcclMpiCommunicator(std::unique_ptr<Communicator> host, const CommunicatorOptions& options)
      : host_(std::move(host)),
        options_(options),
        device_(select_device(*host_)),
        comm_(host_->rank(), host_->world_size(), device_, /*blocking=*/false),
        event_(/*disable_timing=*/true) {
    // Rank 0 makes the id; if that fails it sends an empty one so that the
    // others fail with it instead of waiting.
    std::string id_bytes;
    std::string id_error;
    if (host_->rank() == 0) {
      ncclUniqueId id{};
      const ncclResult_t st = ncclGetUniqueId(&id);
      if (st == ncclSuccess) {
        id_bytes.assign(id.internal, NCCL_UNIQUE_ID_BYTES);
      } else {
        const char* last = ncclGetLastError(nullptr);
        id_error = std::string(ncclGetErrorString(st)) +
                   (last != nullptr && last[0] != '\0' ? ": " + std::string(last) : std::string());
      }
    }
    id_bytes = host_->broadcast(id_bytes, 0);
    if (id_bytes.size() != NCCL_UNIQUE_ID_BYTES) {
      throw CommunicatorError("rank 0 could not create the NCCL unique id" +
                              (id_error.empty() ? std::string() : " (" + id_error + ")") +
                              "; NCCL did not start on " + comm_.where());
    }
    ncclUniqueId id{};
    std::copy(id_bytes.begin(), id_bytes.end(), id.internal);

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // init and calls return at once; settle() polls with a deadline
    comm_.settle(
        ncclCommInitRankConfig(comm_.out(), host_->world_size(), id, host_->rank(), &config),
        "ncclCommInitRankConfig", options_.nccl_init_timeout, NcclStage::Init);
  }

  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] int rank() const override { return host_->rank(); }
  [[nodiscard]] int world_size() const override { return host_->world_size(); }
  [[nodiscard]] int local_rank() const override { return host_->local_rank(); }
  [[nodiscard]] int local_size() const override { return host_->local_size(); }

  void all_reduce_sum(void* data, int64_t count, kernels::DType dtype, void* stream) override {
    reduce(data, count, dtype, stream, ncclSum);
  }
  void all_reduce_average(void* data, int64_t count, kernels::DType dtype, void* stream) override {
    reduce(data, count, dtype, stream, ncclAvg);
  }

  std::vector<std::string> all_gather(const std::string& value) override {
    return host_->all_gather(value);
  }
  std::string broadcast(const std::string& value, int root) override {
    return host_->broadcast(value, root);
  }
  void barrier() override { host_->barrier(); }

  void wait(void* stream, std::chrono::milliseconds timeout) override {
    if (stream == nullptr) return;  // host collectives are synchronous
    event_.record(static_cast<cudaStream_t>(stream));
    comm_.wait_event(event_.get(), timeout, "NCCL all-reduce", {});
  }

  [[noreturn]] void abort(int exit_code) override {
    comm_.abort();
    host_->abort(exit_code);
    std::_Exit(exit_code);  // not reached: the host communicator's abort does not return
  }

 private:
  void reduce(void* data, int64_t count, kernels::DType dtype, void* stream, ncclRedOp_t op) {
    if (count < 0) throw std::invalid_argument("NCCL all-reduce: negative count");
    if (stream == nullptr) {
      throw std::invalid_argument(
          "the NCCL communicator reduces device buffers on a stream; got a null stream (host "
          "buffers need the MPI communicator)");
    }
    const ncclDataType_t type = to_nccl(dtype);
    if (count == 0) return;
    comm_.settle(ncclAllReduce(data, data, static_cast<size_t>(count), type, op, comm_.get(),
                               static_cast<cudaStream_t>(stream)),
                 "ncclAllReduce", options_.nccl_init_timeout, NcclStage::Collective);
  }

  // Declaration order: NCCL is torn down before MPI.
  std::unique_ptr<Communicator> host_;
  CommunicatorOptions options_;
  int device_;
  NcclComm comm_;
  kernels::cuda::Event event_;  ///< recorded by wait(); on device_
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const LaunchInfo& launch,
                                                     const CommunicatorOptions& options) {
  return make_nccl_communicator(make_mpi_communicator(launch), options);
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     const CommunicatorOptions& options) {
  if (!host) throw std::invalid_argument("make_nccl_communicator: no host communicator");
  return std::make_unique<NcclMpiCommunicator>(std::move(host), options);
}

bool nccl_built() { return true; }

std::string nccl_library_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess || code <= 0) return "";
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9; X * 1000 + Y * 100 + Z before.
  const bool wide = code >= 20900;
  const int major = wide ? code / 10000 : code / 1000;
  const int minor = wide ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace cnnbench::mpi
