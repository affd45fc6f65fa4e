// Linked instead of the CUDA backend when CNNBENCH_CUDA is OFF: no GPU can be
// used, and every entry point says why.
#include "kernels/backend.h"
#include "kernels/error.h"
#include "kernels/gpu_info.h"
#include "kernels/not_built.h"

namespace cnnbench::kernels {

std::unique_ptr<Backend> make_cuda_backend() {
  throw BackendUnavailable(not_built("the CUDA backend is not built", BuildOption::Cuda));
}

GpuEnumeration enumerate_gpus() {
  GpuEnumeration result;
  result.built_with_cuda = false;
  result.error = not_built("", BuildOption::Cuda);
  return result;
}

LibraryVersions library_versions() { return {}; }

}  // namespace cnnbench::kernels
