// cnnbench_micro's own flags (Google Benchmark's --benchmark_* flags are
// handled by the library and removed from argv before these are parsed).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace cnnbench::bench::micro {

/// A flag of cnnbench_micro is invalid; what() names the flag, the value and
/// what is valid. The program exits with status 2 on it.
class OptionsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// What to benchmark and at which sizes.
struct Options {
  /// Zoo models whose layers are benchmarked ("all": every model).
  std::vector<std::string> models{"resnet50"};
  /// Images per batch for the CPU layer benchmarks (small enough for a laptop).
  int cpu_batch = 32;
  /// Images per batch for the GPU layer and kernel benchmarks (a per-GPU batch
  /// that fills an H100/H200).
  int gpu_batch = 256;
  /// Square input side in pixels; 0 = each model's default (224, 299 for inception3).
  int image_size = 0;
  /// cuDNN: time up to 8 engine plans per convolution at set-up and keep the
  /// fastest, as the trainer does (off: cuDNN's heuristics' first choice).
  bool cudnn_autotune = true;
  /// Untimed calls of each layer or kernel after its set-up.
  int warmup = 3;
  /// All-reduce sizes: powers of two from min to max bytes per rank.
  int64_t allreduce_min_bytes = int64_t{1} << 10;
  int64_t allreduce_max_bytes = int64_t{1} << 30;
  /// Timed all-reduces per size (a fixed count: every rank must run the same
  /// number) and untimed ones before them (nccl-tests' -n 20 and -w 5).
  int allreduce_iters = 20;
  int allreduce_warmup = 5;
};

/// Parses `args` (flags only, without the program name): --name=value or
/// --name value. Throws OptionsError for an unknown flag or an invalid value.
Options parse_options(const std::vector<std::string>& args);

/// The usage text: every flag with its default, and example command lines.
std::string usage_text();

}  // namespace cnnbench::bench::micro
