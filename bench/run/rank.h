// A run as one rank of a job started by a launcher (mpirun, srun): CPU ranks
// reduce gradients over MPI; GPU ranks take the GPU of their local rank and
// reduce over NCCL, bootstrapped over MPI after the checks that must see every
// rank (two ranks on one GPU, a rank without a GPU).
#pragma once

#include <atomic>
#include <ostream>

#include "bench/run/plan.h"
#include "bench/run/worker.h"

namespace cnnbench::bench {

/// Runs `plan` as this process's rank and returns its exit status. Rank 0
/// reports to `out`; the others write only their --verbose line.
///
/// Errors: a failure every rank finds from the gathered facts is printed once, by
/// rank 0, and every rank returns 1; any other failure once the job's
/// communicator exists is printed by the rank that hit it (naming rank and host)
/// and ends the whole job through Communicator::abort. Failures to start the
/// communicator are thrown (CommunicatorError, CommunicatorUnavailable).
int run_rank(const RunPlan& plan, const std::atomic<bool>* stop,
             std::ostream& out, std::ostream& err);

}  // namespace cnnbench::bench
