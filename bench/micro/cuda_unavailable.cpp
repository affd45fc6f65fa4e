// Stand-in for every CUDA part of cnnbench_micro (the layer and kernel
// benchmark families, the NCCL all-reduce) in builds without CUDA
// (CNNBENCH_CUDA=OFF): nothing is registered, and a note says why.
#include <stdexcept>

#include "bench/micro/allreduce.h"
#include "bench/micro/registry.h"
#include "kernels/not_built.h"

namespace cnnbench::bench::micro {

Registration register_cuda_benchmarks(const Options& /*options*/, FixtureSlot& /*slot*/) {
  Registration reg;
  reg.notes.push_back(kernels::not_built("CUDA layer and kernel benchmarks: not built", kernels::BuildOption::Cuda));
  return reg;
}

std::unique_ptr<AllReduceTransport> make_nccl_transport(World& /*world*/) {
  throw std::runtime_error(kernels::not_built("the NCCL all-reduce is not built", kernels::BuildOption::Cuda));
}

}  // namespace cnnbench::bench::micro
