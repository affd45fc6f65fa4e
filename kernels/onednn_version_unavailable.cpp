// Linked instead of onednn_version.cpp when CNNBENCH_ONEDNN is OFF.
#include "kernels/onednn_version.h"

namespace cnnbench::kernels {

std::string onednn_version() { return ""; }

}  // namespace cnnbench::kernels
