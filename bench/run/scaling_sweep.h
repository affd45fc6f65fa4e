// --scaling_sweep=1,2,4,8: the benchmark on the first 1, 2, 4, 8 GPUs of this
// process in turn, then the table of report/sweep_table.h.
#pragma once

#include <atomic>
#include <ostream>

#include "bench/run/plan.h"
#include "bench/run/worker.h"

namespace cnnbench::bench {

/// Runs the sweep of plan.scaling_sweep over plan.site.devices.gpus (which holds
/// at least the largest count: select_devices checks it) and prints the table.
/// A stop ends the sweep after the run in progress, whose summary and the table
/// so far are printed. Returns the exit status (kExitInterrupted after a stop; 1
/// when the result JSON could not be written).
int run_scaling_sweep(const RunPlan& plan, const std::atomic<bool>* stop, std::ostream& out, std::ostream& err);

}  // namespace cnnbench::bench
