// One worker of a run: a model compiled for one device, trained by a Trainer,
// its gradients all-reduced with the other workers' (GradientBuckets), and on
// rank 0 the reports. The same function serves a single process, every rank
// under mpirun, and every GPU thread of the in-process multi-GPU mode.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bench/report/run_result.h"
#include "bench/run/plan.h"
#include "bench/telemetry/gpu_sample.h"
#include "bench/telemetry/session.h"
#include "kernels/backend.h"
#include "mpi/communicator.h"
#include "mpi/launch.h"

namespace cnnbench::bench {

/// How long a step may wait for its gradient all-reduce before the run fails
/// with a hint instead of hanging (Communicator::wait).
inline constexpr std::chrono::minutes kCollectiveTimeout{5};

/// Where a worker writes. Rank 0 writes its reports to `out`; the other ranks
/// write one line of their own figures there under --verbose, else nothing.
struct WorkerOutput {
  std::ostream* out = nullptr;
  /// Rank 0's GPU telemetry (or why there is none); may be null on other ranks.
  telemetry::TelemetrySession* telemetry = nullptr;
  /// Rank 0, --scaling_sweep: the sweep's runs before this one (the result
  /// JSON holds the table so far); unset outside a sweep.
  std::optional<std::vector<SweepPoint>> sweep_before;
};

/// What a worker ran and measured.
struct WorkerResult {
  RunInfo info;
  RunSummary summary;
  std::string result_json_error;  ///< rank 0: why --result_json was not written; empty = written or none
  bool verify_failed = false;     ///< --verify found a GPU that disagrees with the CPU backend
  /// Rank 0: lines exit_status() prints as errors (--verify's failures).
  std::vector<std::string> error_lines;
};

/// Compiles plan.graph for `device` (ordinal -1 = the CPU) with `backend`, trains
/// with `comm` (the collectives of every call are made by every worker in the
/// same order), and on rank 0 writes the header, the step lines and the summary
/// (text, EMF, result JSON, GPU telemetry, the per-rank table). `stop` may be null.
///
/// Errors: UsageError for an option the backend rejects (e.g. fp16 on the CPU);
/// RunError for out of memory (naming the allocation and the batch); whatever
/// the backend, the communicator or the trainer throw.
WorkerResult run_worker(const RunPlan& plan, kernels::Backend& backend, mpi::Communicator& comm,
                        const DeviceEntry& device, const std::atomic<bool>* stop, const WorkerOutput& output);

/// The exit status of a finished run: kExitFailure after printing to `err` why
/// --result_json could not be written, kExitInterrupted for a stopped run, else kExitOk.
int exit_status(const WorkerResult& result, std::ostream& out, std::ostream& err);

/// The GPUs of `devices` as telemetry names them (CUDA ordinal, UUID).
std::vector<telemetry::GpuId> telemetry_ids(const std::vector<DeviceEntry>& devices);

}  // namespace cnnbench::bench
