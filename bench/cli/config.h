// The run's configuration: every flag, parsed and validated by bench/cli/flags.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/discovery/device_selection.h"
#include "kernels/backend.h"

namespace cnnbench::bench {

/// How rank 0 writes its progress: tf_cnn_benchmarks-style text, CloudWatch
/// Embedded Metric Format JSON lines, or both.
enum class LogFormat { Text, Emf, Both };
/// --list_models output.
enum class ListFormat { Table, Json };

/// All flags. Defaults are tf_cnn_benchmarks' where a flag of the same name exists.
struct Config {
  std::string model = "resnet50";
  int batch_size = 0;              ///< per device; 0 = not given (64 on GPU, 16 on CPU)
  std::optional<int> num_batches;         ///< timed steps; unset = 100 on GPU, 20 on CPU
  std::optional<int> num_warmup_batches;  ///< untimed steps first; unset = 10 on GPU, 2 on CPU
  std::optional<double> duration_s;  ///< --duration: train this long instead of num_batches
  int display_every = 10;          ///< print a step line every N timed steps
  bool forward_only = false;
  DeviceChoice device = DeviceChoice::Auto;
  int num_gpus = 0;                ///< 0 = every allocated GPU
  std::optional<int> image_size;   ///< square side; unset = the model's default
  int num_classes = 1000;
  uint64_t seed = 1234;
  kernels::OptimizerConfig optimizer;
  std::optional<kernels::Precision> precision;  ///< unset = fp16 on GPU, fp32 on CPU
  std::optional<kernels::DataFormat> data_format;  ///< unset = NHWC
  int num_threads = 0;             ///< CPU backend threads; 0 = OpenMP's choice
  bool cuda_graph = true;
  bool cudnn_autotune = true;
  /// Gradient all-reduce bucket size in MiB (PyTorch DDP's bucket_cap_mb); the
  /// first bucket is min(1 MiB, this) so that communication starts early.
  double allreduce_bucket_mb = 25.0;
  /// Runs the benchmark on the first N allocated GPUs for each N in turn (weak
  /// scaling: the batch per GPU stays fixed); empty = one ordinary run.
  std::vector<int> scaling_sweep;
  /// An external one-GPU images/sec figure for the scaling efficiency; unset = none.
  std::optional<double> baseline_images_per_sec;

  bool list_models = false;
  ListFormat list_format = ListFormat::Table;

  std::optional<LogFormat> log_format;  ///< unset = both inside ECS, text elsewhere
  std::string metrics_namespace = "cnnbench";
  std::string result_json;         ///< empty = none
  int telemetry_interval_ms = 1000;  ///< NVML sampling interval on GPU runs; 0 = off
  bool verbose = false;
};

}  // namespace cnnbench::bench
