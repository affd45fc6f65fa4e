// Linked instead of gpu_info.cpp when CNNBENCH_CUDA is OFF: no GPU can be used,
// and the enumeration says why.
#include "kernels/gpu_info.h"

namespace cnnbench::kernels {

GpuEnumeration enumerate_gpus() {
  GpuEnumeration result;
  result.built_with_cuda = false;
  result.error =
      "this binary was built without CUDA (CNNBENCH_CUDA=OFF or no CUDA toolkit found); "
      "rebuild with -DCNNBENCH_CUDA=ON or use the container image";
  return result;
}

LibraryVersions library_versions() { return {}; }

}  // namespace cnnbench::kernels
