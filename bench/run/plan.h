// What a run executes: every flag resolved for the devices found, where the run
// happens, and the model with its shapes inferred once. cli/resolve.h makes it
// from the Config; the workers read only this.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/discovery/device_selection.h"
#include "bench/discovery/environment.h"
#include "kernels/backend.h"
#include "models/graph.h"
#include "mpi/launch.h"

namespace cnnbench::bench {

class NcclLog;  // run/nccl_network.h

/// How rank 0 writes its progress: tf_cnn_benchmarks-style text, CloudWatch
/// Embedded Metric Format JSON lines, or both.
enum class LogFormat { Text, Emf, Both };

/// Where a run happens, as discovery found it before the plan was made.
struct RunSite {
  DeviceSelection devices;   ///< the device kind, why, and the GPUs of this process
  Environment environment;   ///< host, CPU, orchestrator, library versions
  mpi::LaunchInfo launch;    ///< how this process was started (mpirun, srun, none)
  EnvLookup env;             ///< the process's environment, for the preflight checks
  int visible_gpus = 0;      ///< GPUs CUDA enumerates in this process
};

/// A run, resolved: no default is left open. Read-only, shared by all workers.
struct RunPlan {
  // What to train. Field names follow the flags (cli/flag_table.cpp).
  std::string model;
  int batch = 0;                 ///< images per device per step (--batch_size)
  int num_batches = 0;           ///< timed steps; ignored when duration_s > 0
  double duration_s = 0;         ///< --duration in seconds; 0 = run num_batches steps
  int num_warmup_batches = 0;    ///< untimed steps first
  int display_every = 0;         ///< a step line every N timed steps
  bool forward_only = false;
  int image_size = 0;            ///< square side, pixels
  int num_classes = 0;
  uint64_t seed = 0;
  kernels::OptimizerConfig optimizer;
  kernels::Precision precision = kernels::Precision::Fp32;
  kernels::DataFormat data_format = kernels::DataFormat::NHWC;
  int num_threads = 0;           ///< CPU backend threads; 0 = OpenMP's choice
  bool cuda_graph = true;
  bool cudnn_autotune = true;
  /// Runtime-compiled cuDNN engines compete in autotuning (else last resort).
  bool cudnn_runtime_compiled_engines = false;
  std::string plan_cache;              ///< --plan_cache file; empty = none
  int check_every = 0;                 ///< replica check every N timed steps; 0 = at the end only
  bool verify = false;                 ///< --verify: each GPU's step against the CPU backend
  double allreduce_bucket_mb = 0;      ///< gradient bucket size, MiB
  std::vector<int> scaling_sweep;      ///< GPU counts of the sweep; empty = one run
  double baseline_images_per_sec = 0;  ///< a one-GPU figure to compare with; 0 = none

  // What to write.
  LogFormat log_format = LogFormat::Text;
  std::string metrics_namespace;
  std::string result_json;             ///< path; empty = none
  int telemetry_interval_ms = 0;       ///< 0 = GPU telemetry off
  bool verbose = false;

  RunSite site;
  /// Where NCCL logs the network it chose (ranks on GPUs under a launcher); null
  /// otherwise. Not owned: it outlives the workers (cli/program.cpp).
  const NcclLog* nccl_log = nullptr;
  /// Lines for the text header after the environment (e.g. why CUDA graphs are off).
  std::vector<std::string> notes;
  double program_start_s = -1;  ///< SteadyClock time at the start of the program
  /// The model, its shapes inferred for `batch` images of image_size².
  models::Graph graph{"unresolved"};
  /// The resolved flags as the result JSON echoes them ("config"), and the keys
  /// of those that took their defaults ("config_defaults").
  nlohmann::ordered_json config_echo = nlohmann::ordered_json::object();
  std::vector<std::string> config_defaults;

  [[nodiscard]] bool gpu() const { return site.devices.kind == "gpu"; }
};

}  // namespace cnnbench::bench
