// Host-side timing helpers shared by the benchmark families: how many input
// sets to rotate through so that caches do not flatter a kernel, the host-clock
// benchmark loop of the CPU backend, and the rate counters every benchmark
// reports beside its time.
//
// Every family uses Google Benchmark's manual timing (UseManualTime): the time
// of one iteration is what the family measured around the work itself (the
// host clock on the CPU, CUDA events on the GPU), never the loop's overhead or
// its set-up.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

namespace cnnbench::bench::micro {

/// Input sets to rotate through so that the data a benchmark touches is at
/// least three times `cache_bytes` (the GPU's L2: 50 MB on H100/H200; the CPU's
/// last-level cache): one set when a set alone is that large, at most
/// `max_sets`. A kernel then reads its inputs from memory, as it does in a
/// training step where the previous layer's output has long left the cache.
int rotation_sets(int64_t bytes_per_set, int64_t cache_bytes, int max_sets);

/// The CPU's last-level cache in bytes (sysconf), or 32 MiB when unknown.
int64_t host_last_level_cache_bytes();

/// The benchmark loop for synchronous host work: times each `call(i)` (i counts
/// iterations from 0) with the steady clock and reports it as the iteration's
/// manual time. Returns the total of the timed seconds.
template <typename Call>
double time_host_loop(benchmark::State& state, Call&& call) {
  double total = 0;
  int64_t i = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    call(i++);
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(elapsed.count());
    total += elapsed.count();
  }
  return total;
}

/// Counter "TFLOP/s": `flops_per_iteration` · iterations / total_seconds / 1e12.
void set_tflops_counter(benchmark::State& state, double flops_per_iteration, double total_seconds);
/// Counter "GB/s": `bytes_per_iteration` · iterations / total_seconds / 1e9.
void set_gbps_counter(benchmark::State& state, double bytes_per_iteration, double total_seconds);

}  // namespace cnnbench::bench::micro
