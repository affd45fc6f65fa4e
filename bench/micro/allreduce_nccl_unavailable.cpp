// Stand-in for allreduce_nccl.cpp in builds without CUDA (CNNBENCH_CUDA=OFF).
#include <stdexcept>

#include "bench/micro/allreduce.h"

namespace cnnbench::bench::micro {

std::unique_ptr<AllReduceTransport> make_nccl_transport(World& /*world*/) {
  throw std::runtime_error("the NCCL all-reduce is not built (configure with -DCNNBENCH_CUDA=ON)");
}

}  // namespace cnnbench::bench::micro
