// MPI for CPU ranks (--device=cpu under mpirun) and the host side of NCCL runs:
// all-reduce of F32 host buffers, all-gather and broadcast of strings, barrier.
// Compiled when CNNBENCH_MPI is ON; mpi_unavailable.cpp otherwise.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "mpi/dtype_name.h"
#include "mpi/host.h"
#include "mpi/launch.h"
#include "mpi/mpi_check.h"

namespace cnnbench::mpi {

void throw_mpi_failure(int code, const char* call, const char* file, int line, int rank,
                       int world_size) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  const std::string message(text, static_cast<size_t>(length));
  throw CommunicatorError("MPI error " + std::to_string(code) + " (" +
                          (message.empty() ? std::string("no message") : message) + ") in `" +
                          call + "` at " + file + ":" + std::to_string(line) + " on " +
                          rank_location(rank, world_size));
}

namespace {

/// Initialises MPI for this process (MPI_THREAD_FUNNELED: only the thread that
/// created the communicator calls MPI) and finalises it on destruction, unless
/// MPI was already initialised by someone else, who then finalises it. MPI
/// cannot be initialised again after MPI_Finalize: one MPI communicator per
/// process lifetime.
class MpiSession {
 public:
  MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) {
      throw CommunicatorError(
          "MPI was already finalised in this process; it cannot start again (create one MPI "
          "communicator per process)");
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (initialized != 0) {
      MPI_Query_thread(&provided);
    } else {
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        throw CommunicatorError("MPI_Init_thread failed on host " + host_name());
      }
      owned_ = true;
    }
    if (provided < MPI_THREAD_FUNNELED) {
      throw CommunicatorError(
          "the MPI library provides thread level " + std::to_string(provided) +
          " (MPI_THREAD_SINGLE); cnnbench needs MPI_THREAD_FUNNELED: its GPU and CPU backends "
          "run other threads beside the one that calls MPI");
    }
  }
  ~MpiSession() {
    if (!owned_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    // During stack unwinding a rank has failed: MPI_Finalize would wait for the
    // others, who may be blocked in a collective waiting for this one. Exiting
    // without it makes the launcher end the job (mpirun reports a rank that
    // exited without finalising).
    if (finalized == 0 && std::uncaught_exceptions() == 0) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool owned_ = false;
};

/// An MPI communicator handle freed with MPI_Comm_free.
class CommHandle {
 public:
  CommHandle() = default;
  ~CommHandle() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && finalized == 0) MPI_Comm_free(&comm_);
  }
  CommHandle(const CommHandle&) = delete;
  CommHandle& operator=(const CommHandle&) = delete;
  [[nodiscard]] MPI_Comm get() const { return comm_; }
  MPI_Comm* out() { return &comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const LaunchInfo& launch) {
    // A private duplicate of the world, so that our collectives never match
    // another library's, and errors returned rather than fatal.
    if (MPI_Comm_dup(MPI_COMM_WORLD, world_.out()) != MPI_SUCCESS) {
      throw CommunicatorError("MPI_Comm_dup(MPI_COMM_WORLD) failed on host " + host_name());
    }
    MPI_Comm_set_errhandler(world_.get(), MPI_ERRORS_RETURN);
    MPI_Comm_rank(world_.get(), &rank_);
    MPI_Comm_size(world_.get(), &size_);
    if (launch.world_size > 0 && launch.world_size != size_) {
      throw CommunicatorError(
          "the launcher started this process as one of " + std::to_string(launch.world_size) +
          " ranks (" + launch.evidence + ") but MPI_Init found a world of " +
          std::to_string(size_) + " on host " + host_name() + ": cnnbench's MPI library (" +
          mpi_library_version() +
          ") is not the one whose mpirun started it. Fix: start it with the mpirun of the MPI "
          "it was built with, or rebuild against the MPI of that mpirun");
    }
    // Ranks that share memory are the ranks of this host (MPI 3.0).
    CNNBENCH_CHECK_MPI(
        MPI_Comm_split_type(world_.get(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, local_.out()),
        rank_, size_);
    MPI_Comm_set_errhandler(local_.get(), MPI_ERRORS_RETURN);
    MPI_Comm_rank(local_.get(), &local_rank_);
    MPI_Comm_size(local_.get(), &local_size_);
  }

  [[nodiscard]] std::string name() const override { return "mpi"; }
  [[nodiscard]] int rank() const override { return rank_; }
  [[nodiscard]] int world_size() const override { return size_; }
  [[nodiscard]] int local_rank() const override { return local_rank_; }
  [[nodiscard]] int local_size() const override { return local_size_; }

  void all_reduce_sum(void* data, int64_t count, kernels::DType dtype, void* stream) override {
    if (stream != nullptr) {
      throw std::invalid_argument(
          "the MPI communicator reduces host buffers only (stream must be null); device "
          "buffers need the NCCL communicator");
    }
    if (dtype != kernels::DType::F32) {
      throw std::invalid_argument(
          std::string("the MPI communicator reduces F32 host buffers only; got ") +
          dtype_name(dtype) + " (CPU ranks keep gradients in F32)");
    }
    if (count < 0) throw std::invalid_argument("all_reduce_sum: negative count");
    // MPI counts are int: reduce in pieces of at most INT_MAX elements.
    auto* p = static_cast<float*>(data);
    for (int64_t done = 0; done < count;) {
      const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      CNNBENCH_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, p + done, n, MPI_FLOAT, MPI_SUM, world_.get()),
                         rank_, size_);
      done += n;
    }
  }

  std::vector<std::string> all_gather(const std::string& value) override {
    if (value.size() > static_cast<size_t>(INT_MAX)) {
      throw std::invalid_argument("all_gather: value larger than 2 GiB");
    }
    const int mine = static_cast<int>(value.size());
    std::vector<int> lengths(static_cast<size_t>(size_));
    CNNBENCH_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, world_.get()),
                       rank_, size_);
    std::vector<int> offsets(static_cast<size_t>(size_));
    int64_t total = 0;
    for (size_t r = 0; r < lengths.size(); ++r) {
      offsets[r] = static_cast<int>(total);
      total += lengths[r];
      if (total > INT_MAX) throw std::invalid_argument("all_gather: values larger than 2 GiB");
    }
    std::string all(static_cast<size_t>(total), '\0');
    CNNBENCH_CHECK_MPI(MPI_Allgatherv(value.data(), mine, MPI_CHAR, all.data(), lengths.data(),
                                      offsets.data(), MPI_CHAR, world_.get()),
                       rank_, size_);
    std::vector<std::string> out;
    out.reserve(lengths.size());
    for (size_t r = 0; r < lengths.size(); ++r) {
      out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
    }
    return out;
  }

  std::string broadcast(const std::string& value, int root) override {
    if (root < 0 || root >= size_) {
      throw std::invalid_argument("broadcast: root " + std::to_string(root) +
                                  " is not a rank of a world of " + std::to_string(size_));
    }
    if (value.size() > static_cast<size_t>(INT_MAX)) {
      throw std::invalid_argument("broadcast: value larger than 2 GiB");
    }
    int length = static_cast<int>(value.size());
    CNNBENCH_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, root, world_.get()), rank_, size_);
    std::string out = rank_ == root ? value : std::string(static_cast<size_t>(length), '\0');
    CNNBENCH_CHECK_MPI(MPI_Bcast(out.data(), length, MPI_CHAR, root, world_.get()), rank_, size_);
    return out;
  }

  void barrier() override { CNNBENCH_CHECK_MPI(MPI_Barrier(world_.get()), rank_, size_); }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(world_.get(), exit_code);
    std::_Exit(exit_code);  // MPI_Abort should not return; make sure
  }

 private:
  // Declaration order matters: the session is initialised first and finalised
  // last, after the communicators are freed.
  MpiSession session_;
  CommHandle world_;
  CommHandle local_;
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch) {
  return std::make_unique<MpiCommunicator>(launch);
}

bool mpi_built() { return true; }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  // Allowed before MPI_Init (MPI 3.0, section 8.1.1).
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "";
  std::string version(text, static_cast<size_t>(length));
  const size_t end = version.find_first_of("\n,");
  if (end != std::string::npos) version.resize(end);
  while (!version.empty() && (version.back() == ' ' || version.back() == '\0')) version.pop_back();
  return version;
}

}  // namespace cnnbench::mpi
