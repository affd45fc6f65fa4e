#include "mpi/host.h"

#include <unistd.h>

#include <array>

namespace cnnbench::mpi {

std::string host_name() {
  std::array<char, 256> buf{};
  if (gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return "unknown host";
  return buf.data();
}

std::string rank_location(int rank, int world_size) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " on host " +
         host_name();
}

}  // namespace cnnbench::mpi
