// Whether a CUDA device can run this build's kernels, and if not, why. Used by
// the GPU tests (to skip with a reason) and by preflight checks.
#pragma once

#include <optional>
#include <string>

namespace cnnbench::kernels::cuda {

/// std::nullopt when the runtime sees at least one CUDA device; otherwise a
/// reason in cuda_unavailable_reason's form. Creates no context and leaves the
/// current device alone, so every process (MPI rank) may call it before it
/// picks its own GPU. Never throws.
std::optional<std::string> cuda_device_missing_reason();

/// std::nullopt when device 0 is usable (this creates its primary context and
/// makes it current); otherwise a one-line reason starting with "no CUDA
/// device: " followed by the runtime's own error (e.g. "no CUDA device:
/// cudaErrorNoDevice (no CUDA-capable device is detected)"). Never throws.
/// Clears the runtime's last-error state it may leave behind.
std::optional<std::string> cuda_unavailable_reason();

}  // namespace cnnbench::kernels::cuda
