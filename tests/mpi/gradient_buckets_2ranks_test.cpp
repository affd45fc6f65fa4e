// Gradient buckets over the MPI communicator between 2 ranks on host buffers
// (ctest runs this under mpirun -np 2): every rank reports its ranges in a
// different order, the buckets are still reduced in the same order everywhere,
// and the result is the exact mean.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "mpi/gradient_buckets.h"
#include "mpi/launch.h"
#include "tests/mpi/mpi_world.h"

namespace cnnbench::mpi {
namespace {

using testing::world;

/// Rank r's gradient: small integers, so that the mean of the two ranks is exact.
float gradient(int rank, int64_t i, int step) {
  return rank == 0 ? static_cast<float>((i + step) % 7)
                   : static_cast<float>(3 * ((i + 2 * step) % 5));
}

/// Ranges of `piece` elements covering [0, count), in an order that depends on
/// the rank: rank 0 in backward order (end first), rank 1 shuffled.
std::vector<std::pair<int64_t, int64_t>> ranges_for(int rank, int64_t count, int64_t piece) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t offset = 0; offset < count; offset += piece) {
    ranges.emplace_back(offset, std::min(piece, count - offset));
  }
  if (rank == 0) {
    std::reverse(ranges.begin(), ranges.end());
  } else {
    std::mt19937 rng(1234);
    std::shuffle(ranges.begin(), ranges.end(), rng);
  }
  return ranges;
}

TEST(GradientBucketsOverMpi, MeanIsExactAndBucketsMatchAcrossRanks) {
  CNNBENCH_REQUIRE_TWO_RANKS();
  Communicator& comm = *world();
  const int rank = comm.rank();
  // 300,001 F32 elements in buckets of 0.25 MiB (65,536) after a first of
  // 0.0625 MiB (16,384): 6 buckets, the last one partial.
  const int64_t count = 300001;
  std::vector<float> grads(static_cast<size_t>(count));
  GradientBuckets buckets(comm, {grads.data(), count, kernels::DType::F32}, nullptr,
                          {.bucket_mib = 0.25, .first_bucket_mib = 0.0625});
  ASSERT_EQ(buckets.buckets().size(), 6U);
  ASSERT_EQ(buckets.buckets()[0].count, 16384);
  const kernels::GradReadyFn hook = buckets.hook();
  ASSERT_TRUE(hook);

  for (int step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < count; ++i) grads[static_cast<size_t>(i)] = gradient(rank, i, step);
    // Odd-sized pieces cut the buckets anywhere.
    for (const auto& [offset, n] : ranges_for(rank, count, 7919)) hook(offset, n);
    buckets.wait_all(nullptr);
    for (int64_t i = 0; i < count; ++i) {
      const float expected = (gradient(0, i, step) + gradient(1, i, step)) / 2.0F;
      ASSERT_EQ(grads[static_cast<size_t>(i)], expected) << "step " << step << " element " << i;
    }
  }
  EXPECT_EQ(buckets.completed_steps(), 3);

  // Every rank planned the same buckets.
  const auto plans = comm.all_gather(std::to_string(buckets.buckets().size()) + ":" +
                                     std::to_string(buckets.buckets().back().offset));
  EXPECT_EQ(plans[0], plans[1]);
}

}  // namespace
}  // namespace cnnbench::mpi

int main(int argc, char** argv) {
  return cnnbench::mpi::testing::run_tests_in_world(argc, argv, [] {
    return cnnbench::mpi::make_communicator(
        cnnbench::mpi::detect_launch(cnnbench::mpi::process_environment()),
        cnnbench::mpi::CommunicatorKind::Mpi);
  });
}
