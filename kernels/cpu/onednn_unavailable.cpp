// Linked instead of the oneDNN CPU backend when CNNBENCH_ONEDNN is OFF.
#include "kernels/backend.h"
#include "kernels/error.h"
#include "kernels/not_built.h"
#include "kernels/onednn_version.h"

namespace cnnbench::kernels {

std::unique_ptr<Backend> make_cpu_backend() {
  throw BackendUnavailable(not_built("the CPU backend is not built", BuildOption::OneDnn));
}

std::string onednn_version() { return ""; }

}  // namespace cnnbench::kernels
