// Stand-in for mpi_communicator.cpp when CNNBENCH_MPI is OFF: the same functions,
// saying that MPI was not built and what to do instead.
#include "mpi/launch.h"

namespace cnnbench::mpi {

std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch) {
  throw CommunicatorUnavailable(not_built_with_mpi_message(launch));
}

bool mpi_built() { return false; }

std::string mpi_library_version() { return ""; }

}  // namespace cnnbench::mpi
