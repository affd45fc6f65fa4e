// Stand-in for everything of mpi/ that needs CUDA (the NCCL communicators, the
// in-process NCCL group, gradient buckets on device buffers) when CNNBENCH_CUDA
// is OFF.
#include "kernels/not_built.h"
#include "mpi/bucket_streams.h"
#include "mpi/launch.h"
#include "mpi/local_group.h"

namespace cnnbench::mpi {
namespace {

const std::string kNoNccl =
    kernels::not_built("no NCCL", kernels::BuildOption::Cuda) +
    "; or train on the CPU (--device=cpu), which reduces gradients over MPI under mpirun";

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

std::unique_ptr<BucketStreams> make_device_bucket_streams(void* /*compute_stream*/, int /*num_buckets*/) {
  throw CommunicatorUnavailable(kernels::not_built("gradient buckets on device buffers need CUDA",
                                                   kernels::BuildOption::Cuda) +
                                "; or train on the CPU (--device=cpu)");
}

}  // namespace cnnbench::mpi
