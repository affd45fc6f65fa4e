// Linked instead of the oneDNN backend when CNNBENCH_ONEDNN is OFF.
#include "kernels/backend.h"
#include "kernels/error.h"

namespace cnnbench::kernels {

std::unique_ptr<Backend> make_cpu_backend() {
  throw BackendUnavailable(
      "the CPU backend is not built into this binary (configured with CNNBENCH_ONEDNN=OFF); "
      "rebuild with -DCNNBENCH_ONEDNN=ON and oneDNN (libdnnl-dev) installed");
}

}  // namespace cnnbench::kernels
