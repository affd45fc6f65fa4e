// A run inside this one process: the CPU, one GPU, or several GPUs with one host
// thread per GPU (each with its own Executable, Trainer and GradientBuckets) over
// an in-process NCCL clique (mpi::LocalGroup), without mpirun.
#pragma once

#include <atomic>
#include <optional>
#include <ostream>
#include <vector>

#include "bench/run/plan.h"
#include "bench/run/worker.h"

namespace cnnbench::bench {

/// Runs `plan` on `gpus` (a subset of plan.site.devices.gpus; empty = the CPU) and
/// returns the first worker's result (rank 0, which reported to `out`). The GPU
/// telemetry of the run covers `gpus`. `sweep_before` is passed to rank 0
/// (WorkerOutput).
///
/// With several GPUs, an error on one GPU's thread is printed to `err` (naming
/// that GPU) and ends the whole process with exit status 1 (2 for a usage error)
/// through Communicator::abort: the other threads cannot finish without it.
/// Several GPUs in one process train without CUDA graphs (NCCL.md section 3:
/// graphs with collectives of several GPUs per process can deadlock); the header
/// says so.
WorkerResult run_in_process(const RunPlan& plan, const std::vector<DeviceEntry>& gpus, const std::atomic<bool>* stop,
                            std::ostream& out, std::ostream& err,
                            std::optional<std::vector<SweepPoint>> sweep_before = std::nullopt);

}  // namespace cnnbench::bench
