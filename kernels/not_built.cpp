#include "kernels/not_built.h"

namespace cnnbench::kernels {

std::string not_built(std::string_view what, BuildOption option) {
  std::string s(what);
  if (!s.empty()) s += ": ";
  switch (option) {
    case BuildOption::Cuda:
      return s + "this binary was built without CUDA (CNNBENCH_CUDA=OFF or no CUDA toolkit found); rebuild "
                 "with -DCNNBENCH_CUDA=ON on a machine with the CUDA toolkit, cuDNN and NCCL, or use the "
                 "container image";
    case BuildOption::OneDnn:
      return s + "this binary was built without oneDNN (CNNBENCH_ONEDNN=OFF); rebuild with "
                 "-DCNNBENCH_ONEDNN=ON and oneDNN (libdnnl-dev) installed";
    case BuildOption::Mpi:
      return s + "this binary was built without MPI (CNNBENCH_MPI=OFF); rebuild with -DCNNBENCH_MPI=ON and "
                 "Open MPI (libopenmpi-dev) installed";
  }
  return s + "this binary was built without a part it needs";
}

}  // namespace cnnbench::kernels
