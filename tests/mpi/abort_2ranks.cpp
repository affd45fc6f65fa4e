// Rank 1 fails and calls Communicator::abort(7) while rank 0 waits in a
// barrier that would otherwise never end. Run by expect_abort.cmake under
// mpirun, which asserts that the whole job ends at once with a failure status.
#include <chrono>
#include <cstdio>
#include <thread>

#include "mpi/launch.h"

int main() {
  using namespace cnnbench::mpi;
  const auto comm = make_communicator(detect_launch(process_environment()), CommunicatorKind::Mpi);
  if (comm->world_size() != 2) {
    std::fprintf(stderr, "abort_2ranks: needs 2 ranks, got %d\n", comm->world_size());
    return 2;
  }
  comm->barrier();
  if (comm->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    comm->abort(7);
  }
  comm->barrier();  // rank 0 waits here for a rank that is gone
  std::fprintf(stderr, "abort_2ranks: rank %d passed a barrier it should never pass\n",
               comm->rank());
  return 0;
}
