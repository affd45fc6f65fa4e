// cnnbench_micro: Google Benchmark micro-benchmarks of the zoo's convolutions
// (CPU and CUDA backends), the CUDA backend's own kernels and the gradient
// all-reduce (NCCL and MPI). Output is Google Benchmark's own: the console
// table, or JSON with --benchmark_format=json / --benchmark_out=FILE;
// bench/micro/compare.py puts two JSON files side by side.
//
// Under mpirun every rank runs the same benchmarks (the all-reduce ones are
// collectives) and only rank 0 reports.
#include <benchmark/benchmark.h>

#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "bench/micro/options.h"
#include "bench/micro/registry.h"
#include "bench/micro/world.h"

namespace {

using namespace cnnbench::bench::micro;

/// Swallows every report: ranks other than 0 run the benchmarks (the
/// collectives need them) but print nothing.
class NullReporter final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context& /*context*/) override { return true; }
  void ReportRuns(const std::vector<Run>& /*report*/) override {}
};

bool asks_for_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  }
  return false;
}

/// Removes --benchmark_out and --benchmark_out_format: on ranks other than 0,
/// so that only rank 0 opens (and truncates) the output file.
void drop_output_flags(int& argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--benchmark_out", 15) == 0) continue;
    argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
}

int run(int argc, char** argv) {
  if (asks_for_help(argc, argv)) {
    std::cout << usage_text() << "\nGoogle Benchmark flags:\n";
    benchmark::Initialize(&argc, argv);  // prints its own flags and exits
    return 0;
  }

  World world;  // starts MPI under mpirun, before anything else uses it
  const bool reporting = world.rank() == 0;
  if (!reporting) drop_output_flags(argc, argv);

  benchmark::Initialize(&argc, argv);
  Options options;
  try {
    options = parse_options(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const OptionsError& e) {
    if (reporting) std::cerr << "cnnbench_micro: " << e.what() << "\n";
    return 2;
  }

  FixtureSlot slot;
  std::vector<Registration> families;
  families.push_back(register_cpu_layer_benchmarks(options, slot));
  families.push_back(register_cuda_benchmarks(options, slot));
  families.push_back(register_allreduce_benchmarks(options, world));
  if (reporting) {
    for (const Registration& r : families) {
      for (const std::string& note : r.notes) std::cerr << "cnnbench_micro: " << note << "\n";
    }
  }
  benchmark::AddCustomContext("cnnbench_ranks", std::to_string(world.world_size()));

  if (reporting) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter quiet;
    benchmark::RunSpecifiedBenchmarks(&quiet);
  }

  // Device buffers, cuDNN handles and NCCL communicators go before the
  // libraries shut down; MPI finalises last (World).
  slot.clear();
  benchmark::ClearRegisteredBenchmarks();
  families.clear();
  benchmark::Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "cnnbench_micro: " << e.what() << "\n";
    return 1;
  }
}
