// make_cuda_backend: the CUDA backend of kernels/backend.h (cuDNN graph API,
// cuBLASLt and our own kernels; see kernels/cuda/executable.h).
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/executable.h"
#include "kernels/error.h"

namespace cnnbench::kernels {
namespace {

class CudaBackend final : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "cuda"; }

  std::unique_ptr<Executable> compile(const models::Graph& graph,
                                      const CompileOptions& options) override {
    return std::make_unique<cuda::CudaExecutable>(graph, options);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() {
  // Only whether there is a device: the context is created by compile(), on
  // options.device, not on GPU 0 in every rank.
  if (const auto reason = cuda::cuda_device_missing_reason()) {
    throw BackendUnavailable("the CUDA backend cannot run here: " + *reason);
  }
  return std::make_unique<CudaBackend>();
}

}  // namespace cnnbench::kernels
