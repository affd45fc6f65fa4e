// The MPI world of a test binary run under `mpirun -np 2`: created once in
// main() (MPI starts once per process) and shared by the tests.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "mpi/communicator.h"

namespace cnnbench::mpi::testing {

/// The communicator main() made; nullptr before main() made it.
Communicator* world();

/// Runs the tests with world() set to what `make_world` returns: InitGoogleTest,
/// RUN_ALL_TESTS, a final barrier so that no rank finalises MPI while another
/// still tests, then the communicator's destruction (MPI_Finalize) before
/// main returns. Returns the exit status.
int run_tests_in_world(int argc, char** argv,
                       const std::function<std::unique_ptr<Communicator>()>& make_world);

}  // namespace cnnbench::mpi::testing

/// Skips unless the binary runs as 2 ranks (mpirun -np 2).
#define CNNBENCH_REQUIRE_TWO_RANKS()                                        \
  do {                                                                      \
    if (::cnnbench::mpi::testing::world() == nullptr ||                     \
        ::cnnbench::mpi::testing::world()->world_size() != 2)               \
      GTEST_SKIP() << "needs 2 ranks: run under mpirun -np 2 (ctest does)"; \
  } while (0)
