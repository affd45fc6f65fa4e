// The oneDNN library behind the CPU backend, for the header's Versions line and
// the result JSON. Implemented by kernels/cpu/onednn_version.cpp, or by
// kernels/cpu/onednn_unavailable.cpp in a build without oneDNN.
#pragma once

#include <string>

namespace cnnbench::kernels {

/// "major.minor.patch" of the oneDNN library loaded at run time (dnnl_version());
/// empty when the CPU backend is not built. Throws nothing but std::bad_alloc.
std::string onednn_version();

}  // namespace cnnbench::kernels
