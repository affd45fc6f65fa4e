#include "mpi/communicator.h"

#include <stdexcept>
#include <string>

namespace cnnbench::mpi {

void divide_host_f32(float* data, int64_t count, int divisor) {
  if (divisor < 1) throw std::invalid_argument("divide_host_f32: divisor must be >= 1");
  if (divisor == 1) return;
  const auto d = static_cast<float>(divisor);
  for (int64_t i = 0; i < count; ++i) data[i] /= d;
}

void Communicator::all_reduce_average(void* data, int64_t count, kernels::DType dtype,
                                      void* stream) {
  if (world_size() == 1) return;
  if (stream != nullptr || dtype != kernels::DType::F32) {
    throw std::invalid_argument("the '" + name() +
                                "' communicator averages F32 host buffers only (stream must be "
                                "null, dtype F32)");
  }
  all_reduce_sum(data, count, dtype, nullptr);
  divide_host_f32(static_cast<float*>(data), count, world_size());
}

std::string Communicator::broadcast(const std::string& value, int root) {
  if (root < 0 || root >= world_size()) {
    throw std::invalid_argument("broadcast: root " + std::to_string(root) +
                                " is not a rank of a world of " + std::to_string(world_size()));
  }
  return all_gather(value)[static_cast<size_t>(root)];
}

void Communicator::wait(void* stream, std::chrono::milliseconds /*timeout*/) {
  if (stream == nullptr) return;
  throw std::invalid_argument("the '" + name() +
                              "' communicator has no device streams to wait for");
}

}  // namespace cnnbench::mpi
