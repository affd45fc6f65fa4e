// Stand-in for cpu_layers.cpp in builds without oneDNN (CNNBENCH_ONEDNN=OFF).
#include "bench/micro/registry.h"

namespace cnnbench::bench::micro {

Registration register_cpu_layer_benchmarks(const Options& /*options*/, FixtureSlot& /*slot*/) {
  Registration reg;
  reg.notes.emplace_back(
      "CPU layer benchmarks: not built (this binary has no oneDNN CPU backend; configure with "
      "-DCNNBENCH_ONEDNN=ON)");
  return reg;
}

}  // namespace cnnbench::bench::micro
