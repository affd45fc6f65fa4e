// NCCL across 2 MPI ranks (label gpu; ctest runs this under mpirun -np 2).
// With two GPUs: one GPU per rank, collectives and gradient buckets. With one
// GPU: both ranks land on it, and NCCL must refuse at init rather than hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "mpi/gradient_buckets.h"
#include "mpi/launch.h"
#include "tests/mpi/mpi_world.h"
#include "tests/mpi/nccl_test_util.h"

namespace cnnbench::mpi {
namespace {

using kernels::DType;
using testing::gpu_count;
using testing::to_device;
using testing::to_host;
using testing::world;

constexpr std::chrono::seconds kWait{60};

/// One NCCL communicator for the suite, made and destroyed while MPI runs.
class NcclOverMpi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (world() == nullptr || world()->world_size() != 2 || gpu_count() < 2) return;
    try {
      comm_ = make_communicator(detect_launch(process_environment()), CommunicatorKind::Nccl,
                                {.nccl_init_timeout = std::chrono::seconds(60)});
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }
  static void TearDownTestSuite() { comm_.reset(); }
  void SetUp() override {
    CNNBENCH_REQUIRE_TWO_RANKS();
    if (gpu_count() < 2) GTEST_SKIP() << "needs 2 GPUs for 2 ranks, found " << gpu_count();
    ASSERT_NE(comm_, nullptr) << "NCCL did not start: " << error_;
  }
  static Communicator& nccl() { return *comm_; }

 private:
  static inline std::unique_ptr<Communicator> comm_;
  static inline std::string error_;
};

TEST_F(NcclOverMpi, OneGpuPerRankByLocalRank) {
  Communicator& comm = nccl();
  EXPECT_EQ(comm.name(), "nccl");
  EXPECT_EQ(comm.world_size(), 2);
  int device = -1;
  CNNBENCH_CHECK_CUDA(cudaGetDevice(&device));
  EXPECT_EQ(device, comm.local_rank());
  const auto devices = comm.all_gather(std::to_string(device));
  EXPECT_NE(devices[0], devices[1]);
}

TEST_F(NcclOverMpi, SumAndAverage) {
  Communicator& comm = nccl();
  kernels::cuda::Stream stream;
  const int r = comm.rank();
  for (const DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    auto sum = to_device(std::vector<float>(1000, static_cast<float>(r + 1)), dtype);
    auto avg = to_device(std::vector<float>(1000, r == 0 ? 1.0F : 2.0F), dtype);
    comm.all_reduce_sum(sum.get(), 1000, dtype, stream.get());
    comm.all_reduce_average(avg.get(), 1000, dtype, stream.get());
    comm.wait(stream.get(), kWait);
    EXPECT_EQ(to_host(sum.get(), 1000, dtype), std::vector<float>(1000, 3.0F));
    EXPECT_EQ(to_host(avg.get(), 1000, dtype), std::vector<float>(1000, 1.5F));
  }
  comm.barrier();
}

TEST_F(NcclOverMpi, GradientBucketsAverageExactly) {
  Communicator& comm = nccl();
  kernels::cuda::Stream compute;
  const int64_t count = 300001;
  auto grads = to_device(
      std::vector<float>(static_cast<size_t>(count), comm.rank() == 0 ? 1.0F : 4.0F), DType::F32);
  GradientBuckets buckets(comm, {grads.get(), count, DType::F32}, compute.get(),
                          {.bucket_mib = 0.25, .first_bucket_mib = 0.0625});
  const kernels::GradReadyFn hook = buckets.hook();
  for (int64_t offset = 0; offset < count; offset += 10007) {
    hook(offset, std::min<int64_t>(10007, count - offset));
  }
  buckets.wait_all(compute.get());
  comm.wait(compute.get(), kWait);
  EXPECT_EQ(to_host(grads.get(), static_cast<size_t>(count), DType::F32),
            std::vector<float>(static_cast<size_t>(count), 2.5F));
}

TEST(NcclOneGpu, TwoRanksOnOneGpuFailAtInitInsteadOfHanging) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  if (gpu_count() != 1) GTEST_SKIP() << "needs exactly 1 GPU, found " << gpu_count();
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)make_communicator(detect_launch(process_environment()), CommunicatorKind::Nccl,
                            {.nccl_init_timeout = std::chrono::seconds(60)});
    ADD_FAILURE() << "NCCL accepted two ranks on one GPU";
  } catch (const CommunicatorError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("ncclCommInitRankConfig"), std::string::npos) << message;
    EXPECT_EQ(message.find("did not finish"), std::string::npos) << "timed out: " << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(50));
}

}  // namespace
}  // namespace cnnbench::mpi

int main(int argc, char** argv) {
  // The MPI world is made first and owns MPI, so that a failed NCCL start
  // (which unwinds its own MPI communicator) leaves MPI to be finalised here.
  return cnnbench::mpi::testing::run_tests_in_world(argc, argv, [] {
    return cnnbench::mpi::make_communicator(
        cnnbench::mpi::detect_launch(cnnbench::mpi::process_environment()),
        cnnbench::mpi::CommunicatorKind::Mpi);
  });
}
