// Stand-in for the CUDA benchmark families in builds without CUDA
// (CNNBENCH_CUDA=OFF): nothing is registered, and a note says why.
#include "bench/micro/registry.h"

namespace cnnbench::bench::micro {

Registration register_cuda_benchmarks(const Options& /*options*/, FixtureSlot& /*slot*/) {
  Registration reg;
  reg.notes.emplace_back(
      "CUDA layer and kernel benchmarks: not built (this binary has no CUDA backend; configure "
      "with -DCNNBENCH_CUDA=ON on a machine with the CUDA toolkit, cuDNN and NCCL)");
  return reg;
}

}  // namespace cnnbench::bench::micro
