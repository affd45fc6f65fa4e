// register_cuda_benchmarks for CUDA builds: one GpuSession (device 0) shared by
// the convolution and kernel benchmarks, kept alive by the Registration.
#include <memory>

#include "bench/micro/gpu_common.h"
#include "bench/micro/registry.h"

namespace cnnbench::bench::micro {

Registration register_cuda_benchmarks(const Options& options, FixtureSlot& slot) {
  Registration reg;
  auto gpu = std::make_unique<GpuSession>();
  // Kernels first: the copy reference they are held against runs before them.
  reg.registered += register_cuda_kernel_benchmarks(options, slot, *gpu);
  reg.registered += register_cuda_layer_benchmarks(options, slot, *gpu);
  reg.resources = std::move(gpu);
  return reg;
}

}  // namespace cnnbench::bench::micro
