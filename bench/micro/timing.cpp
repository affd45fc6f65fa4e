#include "bench/micro/timing.h"

#include <unistd.h>

#include <algorithm>

#include "bench/micro/flops.h"

namespace cnnbench::bench::micro {

int rotation_sets(int64_t bytes_per_set, int64_t cache_bytes, int max_sets) {
  if (bytes_per_set <= 0 || max_sets <= 1) return 1;
  const int64_t wanted = 3 * std::max<int64_t>(cache_bytes, 0);
  const int64_t sets = (wanted + bytes_per_set - 1) / bytes_per_set;
  return static_cast<int>(std::clamp<int64_t>(sets, 1, max_sets));
}

int64_t host_last_level_cache_bytes() {
  for (const int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long bytes = sysconf(name);
    if (bytes > 0) return bytes;
  }
  return int64_t{32} << 20;
}

void set_tflops_counter(benchmark::State& state, double flops_per_iteration,
                        double total_seconds) {
  state.counters["TFLOP/s"] = tflops_per_second(
      flops_per_iteration * static_cast<double>(state.iterations()), total_seconds);
}

void set_gbps_counter(benchmark::State& state, double bytes_per_iteration, double total_seconds) {
  state.counters["GB/s"] = gigabytes_per_second(
      bytes_per_iteration * static_cast<double>(state.iterations()), total_seconds);
}

}  // namespace cnnbench::bench::micro
