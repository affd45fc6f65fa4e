// How the benchmark families of cnnbench_micro are registered with Google
// Benchmark, and what they share: the slot that holds the set-up of the
// benchmark being run, and the resources that must outlive every benchmark.
// Each family lives in its own file; CMake picks the CUDA, oneDNN, NCCL and
// MPI implementations or their stand-ins, so main() calls every register_*
// function unconditionally.
#pragma once

#include <benchmark/benchmark.h>

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/micro/options.h"

namespace cnnbench::bench::micro {

class World;

/// The set-up of one benchmark (layer, plans, buffers), kept across the several
/// calls Google Benchmark makes to one benchmark function while it settles the
/// iteration count, and destroyed as soon as another benchmark starts, so that
/// the buffers of one benchmark only exist at a time.
class Fixture {
 public:
  virtual ~Fixture() = default;
};

class FixtureSlot {
 public:
  /// The fixture of benchmark `key`: the one held when it is the same key, else
  /// a new one from `make()` (after the previous fixture has been destroyed).
  template <typename T, typename Make>
  T& get(const std::string& key, Make&& make) {
    if (key != key_ || !held_) {
      held_.reset();
      key_.clear();
      held_ = make();
      key_ = key;
    }
    return static_cast<T&>(*held_);
  }
  /// Destroys the held fixture.
  void clear() {
    held_.reset();
    key_.clear();
  }

 private:
  std::string key_;
  std::unique_ptr<Fixture> held_;
};

/// What a family keeps alive for its benchmarks (a device context, a
/// communicator); main() destroys it after the run, before the libraries shut down.
class Resources {
 public:
  virtual ~Resources() = default;
};

/// The outcome of registering one family.
struct Registration {
  int registered = 0;               ///< benchmarks registered
  std::vector<std::string> notes;   ///< lines for stderr (why something is skipped or absent)
  std::unique_ptr<Resources> resources;
};

/// Runs `body(state)`; an exception becomes state.SkipWithError(what()), so a
/// benchmark that cannot run is reported (in the console and the JSON) as an
/// error with its reason instead of ending the program.
template <typename Body>
void run_guarded(benchmark::State& state, Body&& body) {
  try {
    body(state);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

/// Convolutions of the selected models on the CPU backend (oneDNN), fp32, NHWC
/// and NCHW (cpu_layers.cpp; a note when built without oneDNN).
Registration register_cpu_layer_benchmarks(const Options& options, FixtureSlot& slot);

/// Convolutions on the CUDA backend (cuDNN) in fp32, tf32, fp16 and bf16, NHWC
/// and NCHW, and our CUDA kernels against the device-to-device copy bandwidth
/// (cuda_layers.cpp, cuda_kernels.cpp; a note when built without CUDA). Where no
/// device is usable they are registered and report the reason as an error.
Registration register_cuda_benchmarks(const Options& options, FixtureSlot& slot);

/// All-reduce over NCCL (device buffers) and MPI (host buffers), in place and
/// out of place, at every size of the options (allreduce.cpp).
Registration register_allreduce_benchmarks(const Options& options, World& world);

}  // namespace cnnbench::bench::micro
