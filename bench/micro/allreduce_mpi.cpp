// The MPI all-reduce transport: MPI_Allreduce of float32 sums on host
// buffers over MPI_COMM_WORLD, as the CPU ranks of a training run reduce their
// gradients (mpi/mpi_communicator.cpp). Built with CNNBENCH_MPI.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/micro/allreduce.h"
#include "bench/micro/flops.h"
#include "bench/micro/world.h"

namespace cnnbench::bench::micro {

namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(call) + " failed: " + std::string(text, length));
}

class MpiTransport final : public AllReduceTransport {
 public:
  explicit MpiTransport(World& world) : world_(world) {}

  [[nodiscard]] std::string name() const override { return "mpi"; }
  [[nodiscard]] int ranks() const override { return world_.world_size(); }

  void prepare(int64_t bytes) override {
    const int64_t count = bytes / 4;
    if (count > INT_MAX) {
      throw std::invalid_argument("MPI all-reduce of " + format_bytes(bytes) +
                                  ": more than INT_MAX floats in one call");
    }
    count_ = static_cast<int>(count);
    if (send_.size() < static_cast<size_t>(count)) {
      send_.assign(static_cast<size_t>(count), 0.0F);
      recv_.assign(static_cast<size_t>(count), 0.0F);
    }
  }

  void fill(bool in_place) override {
    std::vector<float>& input = in_place ? recv_ : send_;
    for (int i = 0; i < count_; ++i) {
      input[static_cast<size_t>(i)] = allreduce_value(i, world_.rank());
    }
    // Out of place, poison the output so that an element the call does not
    // write counts as wrong.
    if (!in_place) std::fill_n(recv_.begin(), count_, -1.0F);
  }

  void run(bool in_place) override {
    check_mpi(MPI_Allreduce(in_place ? MPI_IN_PLACE : send_.data(), recv_.data(), count_,
                            MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
  }

  double run_timed(bool in_place) override {
    const auto start = std::chrono::steady_clock::now();
    run(in_place);  // blocking: the result is in place when it returns
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    return elapsed.count();
  }

  int64_t count_wrong() override {
    // The expected sum depends on i mod 13 only.
    float expected[13];
    for (int k = 0; k < 13; ++k) expected[k] = allreduce_expected(k, ranks());
    int64_t wrong = 0;
    for (int i = 0; i < count_; ++i) {
      if (recv_[static_cast<size_t>(i)] != expected[i % 13]) ++wrong;
    }
    return wrong;
  }

  [[nodiscard]] std::string describe() const override {
    return mpi::mpi_library_version() + ", " + std::to_string(ranks()) +
           " ranks, host buffers, float32 sum";
  }

 private:
  World& world_;
  int count_ = 0;
  std::vector<float> send_;  // (count) this rank's input out of place
  std::vector<float> recv_;  // (count) the result; the input in place
};

}  // namespace

std::unique_ptr<AllReduceTransport> make_mpi_transport(World& world) {
  if (!world.mpi_started()) {
    throw std::runtime_error(
        "the MPI all-reduce needs ranks started by mpirun (e.g. mpirun -np 2 cnnbench_micro "
        "--benchmark_filter=allreduce/mpi/)");
  }
  return std::make_unique<MpiTransport>(world);
}

}  // namespace cnnbench::bench::micro
