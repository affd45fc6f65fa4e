// The all-reduce benchmarks, after nccl-tests (src/common.cu, src/all_reduce.cu,
// doc/PERFORMANCE.md): one harness (allreduce.cpp) over a small interface that
// each transport fills (NCCL on device buffers, MPI on host buffers). Per size
// and placement: a fixed number of untimed then timed collectives, the same on
// every rank; the time of each is averaged over ranks; algbw and busbw from
// nccl-tests' formulas (flops.h); then, outside the timed loop, a fresh fill,
// one collective and a count of the wrong elements (nccl-tests' #wrong).
//
// The transports call NCCL and MPI directly, the same calls the communicators
// of mpi/ make (ncclAllReduce on a stream; MPI_Allreduce on host memory): the
// Communicator interface reduces in place only, and nccl-tests measures both
// placements. mpi/ still starts MPI and carries the unique id, the barrier and
// the per-rank figures (World). With one rank, NCCL in place reduces nothing
// and out of place is one device copy: busbw is 0 by definition (NCCL.md §8).
//
// Data: float32 sums. Rank r's element i is allreduce_value(i, r), small
// integers, so that every sum is exact in float32 and the expected result is
// known without a reference run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace cnnbench::bench::micro {

class World;

/// Element i of rank r's input: ((i + 3·r) mod 13), an integer in [0, 12].
constexpr float allreduce_value(int64_t i, int64_t rank) {
  return static_cast<float>((i + 3 * rank) % 13);
}
/// The sum of allreduce_value(i, r) over r in [0, ranks): below 13·ranks, exact
/// in float32 for any realistic rank count. Depends on i mod 13 only.
constexpr float allreduce_expected(int64_t i, int64_t ranks) {
  int64_t sum = 0;
  for (int64_t r = 0; r < ranks; ++r) sum += (i + 3 * r) % 13;
  return static_cast<float>(sum);
}

/// One all-reduce implementation under test. Every call is collective: all
/// ranks make the same calls in the same order.
class AllReduceTransport {
 public:
  virtual ~AllReduceTransport() = default;
  /// "nccl" or "mpi".
  [[nodiscard]] virtual std::string name() const = 0;
  /// Ranks taking part (GPUs for NCCL, processes for MPI).
  [[nodiscard]] virtual int ranks() const = 0;
  /// Sizes the buffers for `bytes` per rank (bytes / 4 floats), reusing the
  /// allocation when it is large enough.
  virtual void prepare(int64_t bytes) = 0;
  /// Writes allreduce_value into every local rank's input buffer (the receive
  /// buffer when in place).
  virtual void fill(bool in_place) = 0;
  /// One all-reduce, untimed; returns when it has finished.
  virtual void run(bool in_place) = 0;
  /// One all-reduce timed on this process (CUDA events on each local GPU, or
  /// the host clock around the blocking MPI call), in seconds: the mean over
  /// this process's GPUs. The harness averages it over processes.
  virtual double run_timed(bool in_place) = 0;
  /// Elements of this process's results that differ from allreduce_expected.
  virtual int64_t count_wrong() = 0;
  /// One line for the benchmark label: library version, devices, placement.
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// NCCL over device buffers (allreduce_nccl.cpp; throws where CUDA is not
/// built). Started by a launcher: one GPU per rank (its local rank's), unique
/// id broadcast over MPI, ncclCommInitRank. Alone: every GPU the process sees,
/// one communicator each (ncclCommInitAll), driven from this thread inside
/// ncclGroupStart/End (nccl-tests' -g mode). Throws std::runtime_error with
/// the reason (the same on every rank) when it cannot start.
std::unique_ptr<AllReduceTransport> make_nccl_transport(World& world);

/// MPI_Allreduce on host buffers over MPI_COMM_WORLD (allreduce_mpi.cpp;
/// throws where MPI is not built or the process was not started by mpirun).
std::unique_ptr<AllReduceTransport> make_mpi_transport(World& world);

}  // namespace cnnbench::bench::micro
