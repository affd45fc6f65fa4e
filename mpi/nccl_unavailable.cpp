// Stand-in for the NCCL communicators when CNNBENCH_CUDA is OFF.
#include "mpi/launch.h"
#include "mpi/local_group.h"

namespace cnnbench::mpi {
namespace {

const char* const kNoNccl =
    "cnnbench was built without CUDA (CNNBENCH_CUDA=OFF), so it has no NCCL: rebuild with "
    "-DCNNBENCH_CUDA=ON (needs the CUDA toolkit, cuDNN and NCCL), or train on the CPU "
    "(--device=cpu), which reduces gradients over MPI under mpirun";

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const LaunchInfo& /*launch*/,
                                                     const CommunicatorOptions& /*options*/) {
  throw CommunicatorUnavailable(kNoNccl);
}

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> /*host*/,
                                                     const CommunicatorOptions& /*options*/) {
  throw CommunicatorUnavailable(kNoNccl);
}

std::unique_ptr<LocalGroup> make_local_group(const std::vector<int>& /*devices*/) {
  throw CommunicatorUnavailable(kNoNccl);
}

bool nccl_built() { return false; }

std::string nccl_library_version() { return ""; }

}  // namespace cnnbench::mpi
