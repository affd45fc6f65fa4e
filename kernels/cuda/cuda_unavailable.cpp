// Linked instead of the CUDA backend when CNNBENCH_CUDA is OFF.
#include "kernels/backend.h"
#include "kernels/error.h"

namespace cnnbench::kernels {

std::unique_ptr<Backend> make_cuda_backend() {
  throw BackendUnavailable(
      "the CUDA backend is not built into this binary (configured with CNNBENCH_CUDA=OFF "
      "or no CUDA toolkit found); rebuild with -DCNNBENCH_CUDA=ON on a machine with the CUDA "
      "toolkit, cuDNN and NCCL, or use the container image");
}

}  // namespace cnnbench::kernels
