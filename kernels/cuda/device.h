// Whether a CUDA device can run this build's kernels, and if not, why. Used by
// the GPU tests (to skip with a reason) and by preflight checks.
#pragma once

#include <optional>
#include <string>

namespace cnnbench::kernels::cuda {

/// std::nullopt when device 0 is usable; otherwise a one-line reason starting
/// with "no CUDA device: " followed by the runtime's own error (e.g. "no CUDA
/// device: cudaErrorNoDevice (no CUDA-capable device is detected)"). Never throws.
/// Clears the runtime's last-error state it may leave behind.
std::optional<std::string> cuda_unavailable_reason();

}  // namespace cnnbench::kernels::cuda
