// Stand-in for bucket_streams_cuda.cpp when CNNBENCH_CUDA is OFF.
#include "mpi/bucket_streams.h"
#include "mpi/communicator.h"

namespace cnnbench::mpi {

std::unique_ptr<BucketStreams> make_device_bucket_streams(void* /*compute_stream*/,
                                                          int /*num_buckets*/) {
  throw CommunicatorUnavailable(
      "gradient buckets on device buffers need CUDA, and cnnbench was built without it "
      "(CNNBENCH_CUDA=OFF): rebuild with -DCNNBENCH_CUDA=ON, or train on the CPU (--device=cpu)");
}

}  // namespace cnnbench::mpi
