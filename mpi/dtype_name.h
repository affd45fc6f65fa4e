// Names of element types in messages.
#pragma once

#include "kernels/backend.h"

namespace cnnbench::mpi {

/// "F32", "F16", "BF16", "I32".
const char* dtype_name(kernels::DType dtype);

}  // namespace cnnbench::mpi
