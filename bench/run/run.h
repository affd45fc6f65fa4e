// A run once its plan is resolved: the checks that need no other rank, then one
// of three ways to run it: in this process (the CPU, one GPU, or several GPUs
// with a thread each), as one rank of a launched job, or a scaling sweep. The
// entry of run/; only the program (cli/program.cpp) includes it.
#pragma once

#include <atomic>
#include <ostream>

#include "bench/run/plan.h"

namespace cnnbench::bench {

/// Runs `plan`. Returns the exit status (kExit*). Throws RunError when a
/// preflight check fails; whatever the run throws before the workers start.
int run(const RunPlan& plan, const std::atomic<bool>* stop, std::ostream& out, std::ostream& err);

}  // namespace cnnbench::bench
