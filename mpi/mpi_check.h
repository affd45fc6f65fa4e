// Error check for MPI calls (mpi/ only; the communicators set MPI_ERRORS_RETURN
// on their communicators so that failures come back as codes). On failure
// throws CommunicatorError holding the call as text, file:line, MPI's own
// message (MPI_Error_string) and where: rank, world size and host.
#pragma once

#include <mpi.h>

namespace cnnbench::mpi {

[[noreturn]] void throw_mpi_failure(int code, const char* call, const char* file, int line,
                                    int rank, int world_size);

}  // namespace cnnbench::mpi

#define CNNBENCH_CHECK_MPI(call, rank, world_size)                                              \
  do {                                                                                          \
    const int cnnbench_mpi_code_ = (call);                                                      \
    if (cnnbench_mpi_code_ != MPI_SUCCESS)                                                      \
      ::cnnbench::mpi::throw_mpi_failure(cnnbench_mpi_code_, #call, __FILE__, __LINE__, (rank), \
                                         (world_size));                                         \
  } while (0)
