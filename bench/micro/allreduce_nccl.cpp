// The NCCL all-reduce transport: ncclAllReduce of float32 sums on device
// buffers, nccl-tests' measurement. Not the trainer's path, which reduces
// gradient buckets through mpi::Communicator (ncclAvg, non-blocking init, a
// communication stream ordered by events): this measures the transport alone.
// Built with CNNBENCH_CUDA.
//
// Under mpirun: one GPU per rank (mpi::gpu_for_local_rank), the unique id
// broadcast over the host communicator, ncclCommInitRank. Alone: every GPU the
// process sees, one communicator each from ncclCommInitAll, driven from this
// thread inside ncclGroupStart/End (nccl-tests' -g mode). NCCL.md section 1.
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/micro/allreduce.h"
#include "bench/micro/allreduce_pattern.h"
#include "bench/micro/world.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/handles.h"
#include "kernels/cuda/resources.h"

namespace cnnbench::bench::micro {

namespace {

namespace kc = kernels::cuda;

/// Makes `device` the calling thread's current device (and leaves it so).
struct MakeCurrent {
  explicit MakeCurrent(int device) { CNNBENCH_CHECK_CUDA(cudaSetDevice(device)); }
};

/// One GPU of this process and everything it needs for the benchmark. The
/// stream, events and buffers are created with the GPU current.
struct Member {
  Member(int device_, int rank_) : device(device_), rank(rank_), current(device_) {}
  int device;
  int rank;             ///< rank in the NCCL communicator
  MakeCurrent current;  ///< makes `device` current before the members below are created
  kc::Stream stream;
  kc::Event start;
  kc::Event stop;
  kc::DeviceBuffer wrong{sizeof(unsigned long long), "all-reduce #wrong counter"};
  kc::DeviceBuffer send;         // (count) float: the input out of place
  kc::DeviceBuffer recv;         // (count) float: the result; the input in place
  ncclComm_t comm = nullptr;
};

void check_nccl(ncclResult_t result, const char* call) {
  if (result == ncclSuccess) return;
  const char* last = ncclGetLastError(nullptr);
  throw std::runtime_error(std::string(call) + " failed: " + ncclGetErrorString(result) +
                           (last != nullptr && last[0] != '\0' ? std::string(" (") + last + ")"
                                                               : std::string()));
}

class NcclTransport final : public AllReduceTransport {
 public:
  explicit NcclTransport(World& world) {
    if (world.mpi_started()) {
      start_one_gpu_per_rank(world);
    } else {
      start_all_local_gpus();
    }
  }

  ~NcclTransport() override {
    for (auto& m : members_) {
      (void)cudaSetDevice(m->device);
      (void)cudaStreamSynchronize(m->stream.get());
      if (m->comm != nullptr) (void)ncclCommDestroy(m->comm);
    }
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  [[nodiscard]] std::string name() const override { return "nccl"; }
  [[nodiscard]] int ranks() const override { return ranks_; }

  void prepare(int64_t bytes) override {
    count_ = bytes / 4;
    for (auto& m : members_) {
      if (m->recv.bytes() >= bytes) continue;
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      m->send = kc::DeviceBuffer();  // free before allocating the larger ones
      m->recv = kc::DeviceBuffer();
      m->send = kc::DeviceBuffer(bytes, "all-reduce send buffer");
      m->recv = kc::DeviceBuffer(bytes, "all-reduce receive buffer");
    }
  }

  void fill(bool in_place) override {
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      fill_allreduce_pattern(input(*m, in_place), count_, m->rank, m->stream.get());
      // Out of place, poison the result (all-ones bytes are a NaN) so that an
      // element the collective does not write counts as wrong.
      if (!in_place) {
        CNNBENCH_CHECK_CUDA(cudaMemsetAsync(m->recv.get(), 0xFF, static_cast<size_t>(count_) * 4,
                                            m->stream.get()));
      }
    }
    synchronize();
  }

  void run(bool in_place) override {
    enqueue(in_place);
    synchronize();
  }

  double run_timed(bool in_place) override {
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      m->start.record(m->stream.get());
    }
    enqueue(in_place);
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      m->stop.record(m->stream.get());
    }
    double sum = 0;
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaEventSynchronize(m->stop.get()));
      sum += 1e-3 * static_cast<double>(m->stop.elapsed_ms_since(m->start));
    }
    return sum / static_cast<double>(members_.size());
  }

  int64_t count_wrong() override {
    int64_t wrong = 0;
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      auto* counter = m->wrong.as<unsigned long long>();
      CNNBENCH_CHECK_CUDA(cudaMemsetAsync(counter, 0, sizeof(unsigned long long), m->stream.get()));
      count_allreduce_wrong(m->recv.as<float>(), count_, ranks_, counter, m->stream.get());
      unsigned long long host = 0;
      CNNBENCH_CHECK_CUDA(cudaMemcpyAsync(&host, counter, sizeof(host), cudaMemcpyDeviceToHost,
                                          m->stream.get()));
      CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(m->stream.get()));
      wrong += static_cast<int64_t>(host);
    }
    return wrong;
  }

  [[nodiscard]] std::string describe() const override { return description_; }

 private:
  void start_one_gpu_per_rank(World& world) {
    mpi::Communicator& host = world.host();
    int visible = 0;
    std::string problem;
    int device = -1;
    if (const auto reason = kc::cuda_unavailable_reason()) {
      problem = *reason;
    } else {
      CNNBENCH_CHECK_CUDA(cudaGetDeviceCount(&visible));
      device = mpi::gpu_for_local_rank(host.local_rank(), host.local_size(), visible);
      if (device < 0) {
        problem = "local rank " + std::to_string(host.local_rank()) + " of " +
                  std::to_string(host.local_size()) + " has no GPU (this process sees " +
                  std::to_string(visible) + ")";
      }
    }
    // Every rank learns every rank's problem, so that all fail together
    // instead of some waiting in ncclCommInitRank.
    if (const std::string all = world.problems_of_all_ranks(problem); !all.empty()) {
      throw std::runtime_error("NCCL all-reduce cannot start: " + all);
    }
    std::string id_bytes;
    if (host.rank() == 0) {
      ncclUniqueId id{};
      if (ncclGetUniqueId(&id) == ncclSuccess) id_bytes.assign(id.internal, NCCL_UNIQUE_ID_BYTES);
    }
    id_bytes = host.broadcast(id_bytes, 0);
    if (id_bytes.size() != NCCL_UNIQUE_ID_BYTES) {
      throw std::runtime_error("NCCL all-reduce cannot start: rank 0 could not create the NCCL "
                               "unique id (ncclGetUniqueId failed)");
    }
    ncclUniqueId id{};
    std::copy(id_bytes.begin(), id_bytes.end(), id.internal);
    ranks_ = world.world_size();
    members_.push_back(std::make_unique<Member>(device, world.rank()));
    CNNBENCH_CHECK_CUDA(cudaSetDevice(device));
    check_nccl(ncclCommInitRank(&members_.back()->comm, ranks_, id, world.rank()),
               "ncclCommInitRank");
    describe_devices("one GPU per rank");
  }

  void start_all_local_gpus() {
    if (const auto reason = kc::cuda_unavailable_reason()) throw std::runtime_error(*reason);
    int visible = 0;
    CNNBENCH_CHECK_CUDA(cudaGetDeviceCount(&visible));
    std::vector<int> devices;
    for (int d = 0; d < visible; ++d) {
      devices.push_back(d);
      members_.push_back(std::make_unique<Member>(d, d));
    }
    std::vector<ncclComm_t> comms(devices.size(), nullptr);
    check_nccl(ncclCommInitAll(comms.data(), visible, devices.data()), "ncclCommInitAll");
    for (size_t i = 0; i < comms.size(); ++i) members_[i]->comm = comms[i];
    ranks_ = visible;
    describe_devices("all GPUs of one process");
  }

  void describe_devices(const std::string& mode) {
    int version = 0;
    (void)ncclGetVersion(&version);
    cudaDeviceProp prop{};
    CNNBENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, members_.front()->device));
    description_ = "NCCL " + std::to_string(version / 10000) + "." +
                   std::to_string(version % 10000 / 100) + "." + std::to_string(version % 100) +
                   ", " + std::to_string(ranks_) + " x " + prop.name + " (" + mode +
                   "), float32 sum, CUDA events";
  }

  float* input(Member& m, bool in_place) const {
    return in_place ? m.recv.as<float>() : m.send.as<float>();
  }

  void enqueue(bool in_place) {
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      check_nccl(ncclAllReduce(input(*m, in_place), m->recv.get(), static_cast<size_t>(count_),
                               ncclFloat32, ncclSum, m->comm, m->stream.get()),
                 "ncclAllReduce");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  }

  void synchronize() {
    for (auto& m : members_) {
      CNNBENCH_CHECK_CUDA(cudaSetDevice(m->device));
      CNNBENCH_CHECK_CUDA(cudaStreamSynchronize(m->stream.get()));
    }
  }

  std::vector<std::unique_ptr<Member>> members_;
  int ranks_ = 1;
  int64_t count_ = 0;
  std::string description_;
};

}  // namespace

std::unique_ptr<AllReduceTransport> make_nccl_transport(World& world) {
  return std::make_unique<NcclTransport>(world);
}

}  // namespace cnnbench::bench::micro
