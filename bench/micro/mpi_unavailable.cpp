// Stand-in for allreduce_mpi.cpp in builds without MPI (CNNBENCH_MPI=OFF).
#include <stdexcept>

#include "bench/micro/allreduce.h"

namespace cnnbench::bench::micro {

std::unique_ptr<AllReduceTransport> make_mpi_transport(World& /*world*/) {
  throw std::runtime_error("the MPI all-reduce is not built (configure with -DCNNBENCH_MPI=ON)");
}

}  // namespace cnnbench::bench::micro
