// What rank 0 learns from every rank: their devices (for the header) and their
// own figures (for the per-rank table and the result JSON). Collectives: every
// rank calls them, in the same order.
#pragma once

#include <vector>

#include "bench/report/run_result.h"
#include "mpi/communicator.h"

namespace cnnbench::bench {

/// Every rank's device, in rank order.
std::vector<DeviceEntry> gather_devices(mpi::Communicator& comm, const DeviceEntry& mine);

/// Every rank's figures, in rank order. Throws std::runtime_error when a rank's
/// figures cannot be read.
std::vector<RankFigures> gather_rank_figures(mpi::Communicator& comm, const RankFigures& mine);

}  // namespace cnnbench::bench
