// Stand-in for cpu_layers.cpp in builds without oneDNN (CNNBENCH_ONEDNN=OFF):
// nothing is registered, and a note says why.
#include "bench/micro/registry.h"
#include "kernels/not_built.h"

namespace cnnbench::bench::micro {

Registration register_cpu_layer_benchmarks(const Options& /*options*/, FixtureSlot& /*slot*/) {
  Registration reg;
  reg.notes.push_back(kernels::not_built("CPU layer benchmarks: not built", kernels::BuildOption::OneDnn));
  return reg;
}

}  // namespace cnnbench::bench::micro
