#include "mpi/dtype_name.h"

namespace cnnbench::mpi {

const char* dtype_name(kernels::DType dtype) {
  switch (dtype) {
    case kernels::DType::F32:
      return "F32";
    case kernels::DType::F16:
      return "F16";
    case kernels::DType::BF16:
      return "BF16";
    case kernels::DType::I32:
      return "I32";
  }
  return "unknown dtype";
}

}  // namespace cnnbench::mpi
