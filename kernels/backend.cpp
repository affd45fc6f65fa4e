#include "kernels/backend.h"

#include <stdexcept>
#include <string>

namespace cnnbench::kernels {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Fp16: return "fp16";
    case Precision::Bf16: return "bf16";
  }
  throw std::invalid_argument("unknown Precision");
}

const char* to_string(DataFormat f) {
  switch (f) {
    case DataFormat::NHWC: return "NHWC";
    case DataFormat::NCHW: return "NCHW";
  }
  throw std::invalid_argument("unknown DataFormat");
}

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I32: return 4;
  }
  throw std::invalid_argument("unknown DType");
}

void check_flat_range(const char* what, int64_t offset, int64_t count, int64_t size) {
  if (offset < 0 || count < 0 || offset > size || count > size - offset) {
    throw std::out_of_range(std::string(what) + " range [" + std::to_string(offset) + ", " +
                            std::to_string(offset) + " + " + std::to_string(count) +
                            ") is outside the buffer of " + std::to_string(size) + " elements");
  }
}

}  // namespace cnnbench::kernels
