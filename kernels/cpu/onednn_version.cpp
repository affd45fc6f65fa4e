#include "kernels/onednn_version.h"

#include "kernels/cpu/dnnl_compat.h"

namespace cnnbench::kernels {

std::string onednn_version() { return cpu::compat::library_version(); }

}  // namespace cnnbench::kernels
