// The MPI communicator between 2 ranks (ctest runs this under mpirun -np 2).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi/launch.h"
#include "tests/mpi/mpi_world.h"

namespace cnnbench::mpi {
namespace {

using testing::world;

TEST(MpiCommunicator, KnowsRanksAndLocalRanks) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  EXPECT_EQ(comm.name(), "mpi");
  EXPECT_EQ(comm.world_size(), 2);
  EXPECT_TRUE(comm.rank() == 0 || comm.rank() == 1);
  // Both ranks run on this host: the local rank is the rank.
  EXPECT_EQ(comm.local_size(), 2);
  EXPECT_EQ(comm.local_rank(), comm.rank());
  // The launcher's view agrees with MPI's.
  const LaunchInfo launch = detect_launch(process_environment());
  EXPECT_EQ(launch.world_size, 2);
  EXPECT_EQ(launch.rank, comm.rank());
}

TEST(MpiCommunicator, AllReduceSumOfKnownValues) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  const int r = comm.rank();
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((r + 1) * i) + 0.25F;
  comm.all_reduce_sum(data.data(), static_cast<int64_t>(data.size()), kernels::DType::F32, nullptr);
  for (size_t i = 0; i < data.size(); ++i) {
    ASSERT_EQ(data[i], static_cast<float>(3 * i) + 0.5F) << "element " << i;
  }
}

TEST(MpiCommunicator, AllReduceAverageDividesOnce) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  std::vector<float> data{comm.rank() == 0 ? 1.0F : 2.0F, comm.rank() == 0 ? -3.0F : 4.0F};
  comm.all_reduce_average(data.data(), 2, kernels::DType::F32, nullptr);
  EXPECT_EQ(data, (std::vector<float>{1.5F, 0.5F}));
}

TEST(MpiCommunicator, RejectsWhatItCannotReduce) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  std::vector<uint16_t> half(4);
  try {
    comm.all_reduce_sum(half.data(), 4, kernels::DType::F16, nullptr);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("F32 host buffers only; got F16"), std::string::npos)
        << e.what();
  }
  std::vector<float> data(4);
  int stream = 0;
  EXPECT_THROW(comm.all_reduce_sum(data.data(), 4, kernels::DType::F32, &stream),
               std::invalid_argument);
}

TEST(MpiCommunicator, AllGatherOfStringsOfDifferentLengths) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  const std::string mine = comm.rank() == 0
                               ? std::string("GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab")
                               : std::string("x\0y", 3);
  const auto all = comm.all_gather(mine);
  ASSERT_EQ(all.size(), 2U);
  EXPECT_EQ(all[0], "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab");
  EXPECT_EQ(all[1], std::string("x\0y", 3));
  // Empty values, and a large one.
  const auto empties = comm.all_gather(comm.rank() == 0 ? "" : std::string(100000, 'z'));
  EXPECT_EQ(empties[0], "");
  EXPECT_EQ(empties[1], std::string(100000, 'z'));
}

TEST(MpiCommunicator, BroadcastFromEitherRoot) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  EXPECT_EQ(comm.broadcast(comm.rank() == 1 ? "from one" : "ignored", 1), "from one");
  const std::string id(128, static_cast<char>(0x7f));
  EXPECT_EQ(comm.broadcast(comm.rank() == 0 ? id : "", 0), id);
  EXPECT_THROW((void)comm.broadcast("", 2), std::invalid_argument);
}

TEST(MpiCommunicator, BarrierWaitsForTheSlowRank) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  comm.barrier();
  const double waited_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited_ms, 250.0) << "rank " << comm.rank() << " left the barrier early";
}

TEST(MpiCommunicator, ReportsTheLibraryVersion) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  EXPECT_TRUE(mpi_built());
  EXPECT_FALSE(mpi_library_version().empty());
}

std::unique_ptr<Communicator> make_world() {
  return make_communicator(detect_launch(process_environment()), CommunicatorKind::Mpi);
}

}  // namespace
}  // namespace cnnbench::mpi

int main(int argc, char** argv) {
  return cnnbench::mpi::testing::run_tests_in_world(argc, argv, cnnbench::mpi::make_world);
}
