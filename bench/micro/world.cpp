#include "bench/micro/world.h"

#include <cstring>

namespace cnnbench::bench::micro {

World::World() : launch_(mpi::detect_launch(mpi::process_environment())) {
  if (launch_.launched() && mpi::mpi_built()) {
    host_ = mpi::make_mpi_communicator(launch_);
  } else if (launch_.needs_transport()) {
    throw mpi::CommunicatorUnavailable(mpi::not_built_with_mpi_message(launch_));
  } else {
    host_ = mpi::make_single_worker();
  }
}

double World::mean_over_ranks(double value) {
  if (world_size() == 1) return value;
  std::string bytes(sizeof(double), '\0');
  std::memcpy(bytes.data(), &value, sizeof(double));
  double sum = 0;
  for (const std::string& v : host_->all_gather(bytes)) {
    double x = 0;
    std::memcpy(&x, v.data(), sizeof(double));
    sum += x;
  }
  return sum / world_size();
}

int64_t World::sum_over_ranks(int64_t value) {
  if (world_size() == 1) return value;
  int64_t sum = 0;
  for (const std::string& v : host_->all_gather(std::to_string(value))) sum += std::stoll(v);
  return sum;
}

std::string World::problems_of_all_ranks(const std::string& problem) {
  if (world_size() == 1) return problem;
  const std::vector<std::string> all = host_->all_gather(problem);
  std::string joined;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    joined += (joined.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " +
              all[r];
  }
  return joined;
}

}  // namespace cnnbench::bench::micro
