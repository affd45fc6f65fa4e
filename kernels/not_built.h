// The one sentence every stand-in says when the binary lacks a part that a
// CMake option leaves out: what is missing, why, and how to get it. The
// stand-ins (kernels/cpu/onednn_unavailable.cpp, kernels/cuda/cuda_unavailable.cpp,
// mpi/nccl_unavailable.cpp, bench/micro/*_unavailable.cpp) all use it.
#pragma once

#include <string>
#include <string_view>

namespace cnnbench::kernels {

/// The CMake options that choose implementations.
enum class BuildOption {
  Cuda,    ///< CNNBENCH_CUDA: the CUDA backend, NCCL
  OneDnn,  ///< CNNBENCH_ONEDNN: the CPU backend
  Mpi,     ///< CNNBENCH_MPI: MPI communicators
};

/// "<what>: this binary was built without CUDA (CNNBENCH_CUDA=OFF or no CUDA
/// toolkit found); rebuild with -DCNNBENCH_CUDA=ON on a machine with the CUDA
/// toolkit, cuDNN and NCCL, or use the container image" (and likewise for
/// oneDNN and MPI). Without `what`, the sentence starts at "this binary".
std::string not_built(std::string_view what, BuildOption option);

}  // namespace cnnbench::kernels
