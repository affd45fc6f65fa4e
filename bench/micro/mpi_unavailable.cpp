// Stand-in for allreduce_mpi.cpp in builds without MPI (CNNBENCH_MPI=OFF).
#include <stdexcept>

#include "bench/micro/allreduce.h"
#include "kernels/not_built.h"

namespace cnnbench::bench::micro {

std::unique_ptr<AllReduceTransport> make_mpi_transport(World& /*world*/) {
  throw std::runtime_error(kernels::not_built("the MPI all-reduce is not built", kernels::BuildOption::Mpi));
}

}  // namespace cnnbench::bench::micro
