// make_cpu_backend: the oneDNN backend of kernels/backend.h.
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/executable.h"
#include "kernels/error.h"

namespace cnnbench::kernels {
namespace {

class CpuBackend final : public Backend {
 public:
  [[nodiscard]] std::string name() const override { return "cpu"; }

  std::unique_ptr<Executable> compile(const models::Graph& graph,
                                      const CompileOptions& options) override {
    try {
      return std::make_unique<cpu::CpuExecutable>(graph, options);
    } catch (const dnnl::error& e) {
      throw BackendError("oneDNN failed while compiling '" + graph.name() + "': " + e.what());
    }
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace cnnbench::kernels
