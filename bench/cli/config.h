// The command line as parsed: one member per flag (cli/flag_table.cpp holds
// each flag's type, range, default and help). Defaults that depend on the device
// stay unset until resolve() (cli/resolve.h) turns the Config into a RunPlan.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/discovery/device_selection.h"
#include "bench/run/plan.h"
#include "kernels/backend.h"

namespace cnnbench::bench {

/// --list_models output.
enum class ListFormat { Table, Json };

/// Every flag's value. Members are named after their flags (the names the
/// result JSON echoes); zero until parse_flags() applies the table's defaults.
struct Config {
  std::string model;
  std::optional<int> batch_size;          ///< images per device; unset = the device's default
  std::optional<int> num_batches;         ///< timed steps; unset = the device's default
  std::optional<int> num_warmup_batches;  ///< untimed steps first; unset = the device's default
  std::optional<double> duration_s;       ///< --duration: train this long instead of num_batches
  int display_every = 0;                  ///< print a step line every N timed steps
  bool forward_only = false;
  DeviceChoice device = DeviceChoice::Auto;
  int num_gpus = 0;                       ///< 0 = every allocated GPU
  std::optional<int> image_size;          ///< square side; unset = the model's default
  int num_classes = 0;
  uint64_t seed = 0;
  kernels::OptimizerConfig optimizer;
  std::optional<kernels::Precision> precision;  ///< unset = the device's default
  std::optional<bool> use_fp16;           ///< tf_cnn_benchmarks' spelling, folded into precision
  kernels::DataFormat data_format = kernels::DataFormat::NHWC;
  int num_threads = 0;                    ///< CPU backend threads; 0 = OpenMP's choice
  bool cuda_graph = false;
  bool cudnn_autotune = false;
  bool cudnn_runtime_compiled_engines = false;
  std::string plan_cache;                 ///< --plan_cache file; empty = none
  int check_every = 0;                    ///< replica check every N timed steps; 0 = at the end only
  bool verify = false;                    ///< --verify
  /// Gradient all-reduce bucket size in MiB (PyTorch DDP's bucket_cap_mb); the
  /// first bucket is min(1 MiB, this) so that communication starts early.
  double allreduce_bucket_mb = 0;
  /// Runs the benchmark on the first N allocated GPUs for each N in turn (weak
  /// scaling: the batch per GPU stays fixed); empty = one ordinary run.
  std::vector<int> scaling_sweep;
  /// An external one-GPU images/sec figure for the scaling efficiency; unset = none.
  std::optional<double> baseline_images_per_sec;

  bool list_models = false;
  ListFormat list_format = ListFormat::Table;

  std::optional<LogFormat> log_format;  ///< unset = both inside ECS, text elsewhere
  std::string metrics_namespace;
  std::string result_json;                ///< empty = none
  int telemetry_interval_ms = 0;          ///< NVML sampling interval on GPU runs; 0 = off
  bool verbose = false;
  bool version = false;                   ///< --version: print the version and exit

  /// The flags given on the command line (names without "--"); the others hold
  /// their defaults.
  std::set<std::string> given;
};

}  // namespace cnnbench::bench
