// One worker of a run: a model compiled for one device, trained by a Trainer,
// its gradients all-reduced with the other workers' (GradientBuckets), and on
// rank 0 the reports. The same function serves a single process, every rank
// under mpirun, and every GPU thread of the in-process multi-GPU mode.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/config.h"
#include "bench/device_selection.h"
#include "bench/environment.h"
#include "bench/nccl_network.h"
#include "bench/report.h"
#include "bench/telemetry_session.h"
#include "kernels/backend.h"
#include "mpi/communicator.h"
#include "mpi/launch.h"

namespace cnnbench::bench {

/// How long a step may wait for its gradient all-reduce before the run fails
/// with a hint instead of hanging (Communicator::wait).
inline constexpr std::chrono::minutes kCollectiveTimeout{5};

/// Everything decided before a worker starts; read-only, shared by all workers.
struct BenchmarkPlan {
  Config config;
  std::string device_kind;    ///< "cpu" or "gpu"
  std::string device_reason;  ///< the header's Device line
  std::string device_source;  ///< where the GPU list came from (DeviceDiscovery::source)
  // Flags whose defaults depend on the device, resolved.
  int batch = 0;  ///< per device
  int num_batches = 0;
  int num_warmup_batches = 0;
  int image_size = 0;
  kernels::Precision precision = kernels::Precision::Fp32;
  kernels::DataFormat data_format = kernels::DataFormat::NHWC;
  bool cuda_graph = true;
  LogFormat log_format = LogFormat::Text;
  Environment environment;
  mpi::LaunchInfo launch;
  /// Lines for the text header after the environment (e.g. why CUDA graphs are off).
  std::vector<std::string> notes;
  /// Where NCCL logs the network it chose (ranks on GPUs under a launcher); null
  /// otherwise. Not owned: it outlives the workers.
  const NcclLog* nccl_log = nullptr;
  double program_start_s = -1;  ///< SteadyClock time at the start of the program
};

/// Resolves the device-dependent defaults of `config` for `selection`.
BenchmarkPlan make_plan(const Config& config, const DeviceSelection& selection,
                        const Environment& environment, const mpi::LaunchInfo& launch,
                        double program_start_s);

/// Where a worker writes. Rank 0 writes its reports to `out`; the other ranks
/// write one line of their own figures there under --verbose, else nothing.
struct WorkerOutput {
  std::ostream* out = nullptr;
  /// Rank 0's GPU telemetry (or why there is none); may be null on other ranks.
  TelemetrySession* telemetry = nullptr;
  /// Rank 0, --scaling_sweep: the sweep table including this run, for the result
  /// JSON (ResultRecord::scaling_sweep); empty otherwise.
  std::function<nlohmann::ordered_json(const RunInfo&, const RunSummary&)> scaling_sweep_json;
};

/// What a worker ran and measured.
struct WorkerResult {
  RunInfo info;
  RunSummary summary;
  std::string result_json_error;  ///< rank 0: why --result_json was not written; empty = written or none
};

/// Compiles the model for `device` (ordinal -1 = the CPU) with `backend`, trains
/// with `comm` (the collectives of every call are made by every worker in the
/// same order), and on rank 0 writes the header, the step lines and the summary
/// (text, EMF, result JSON, GPU telemetry, the per-rank table). `stop` may be null.
///
/// Errors: UsageError for an option the backend rejects (e.g. fp16 on the CPU);
/// RunError for out of memory (naming the allocation and the batch); whatever
/// the backend, the communicator or the trainer throw.
WorkerResult run_worker(const BenchmarkPlan& plan, kernels::Backend& backend, mpi::Communicator& comm,
                        const DeviceEntry& device, const std::atomic<bool>* stop, const WorkerOutput& output);

/// The exit status of a finished run: kExitFailure after printing to `err` why
/// --result_json could not be written, kExitInterrupted for a stopped run, else kExitOk.
int exit_status(const WorkerResult& result, std::ostream& err);

}  // namespace cnnbench::bench
