#include "tests/mpi/mpi_world.h"

namespace cnnbench::mpi::testing {
namespace {

Communicator* g_world = nullptr;  // set once by run_tests_in_world, before any test

}  // namespace

Communicator* world() { return g_world; }

int run_tests_in_world(int argc, char** argv,
                       const std::function<std::unique_ptr<Communicator>()>& make_world) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<Communicator> owned = make_world();
  g_world = owned.get();
  const int status = RUN_ALL_TESTS();
  if (g_world != nullptr) g_world->barrier();
  g_world = nullptr;
  owned.reset();
  return status;
}

}  // namespace cnnbench::mpi::testing
