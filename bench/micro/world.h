// This process's place in the job: alone, or one rank of mpirun. Under a
// launcher every rank runs the same benchmarks in the same order (the
// all-reduce benchmarks are collectives), and only rank 0 reports.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mpi/communicator.h"
#include "mpi/launch.h"

namespace cnnbench::bench::micro {

class World {
 public:
  /// Detects the launcher (mpi::detect_launch). Started by a launcher in a
  /// build with MPI: an MPI communicator (MPI starts here, once per process),
  /// even for one rank, so that the MPI all-reduce can run; otherwise a single
  /// worker. Throws mpi::CommunicatorUnavailable (with the fix) when started
  /// by a launcher with several ranks in a build without MPI.
  World();

  [[nodiscard]] const mpi::LaunchInfo& launch() const { return launch_; }
  [[nodiscard]] int rank() const { return host_->rank(); }
  [[nodiscard]] int world_size() const { return host_->world_size(); }
  /// The host communicator: MPI under a launcher, a single worker otherwise.
  [[nodiscard]] mpi::Communicator& host() { return *host_; }
  /// True when the host communicator is MPI (MPI_COMM_WORLD is initialised).
  [[nodiscard]] bool mpi_started() const { return host_->name() == "mpi"; }

  /// The mean of every rank's `value` (nccl-tests averages its times over ranks).
  double mean_over_ranks(double value);
  /// The sum of every rank's `value`.
  int64_t sum_over_ranks(int64_t value);
  /// Every rank's `problem` ("" for none) joined as "rank r: problem; ...", so
  /// that all ranks see the same verdict and fail together; "" when none has one.
  std::string problems_of_all_ranks(const std::string& problem);

 private:
  mpi::LaunchInfo launch_;
  std::unique_ptr<mpi::Communicator> host_;
};

}  // namespace cnnbench::bench::micro
