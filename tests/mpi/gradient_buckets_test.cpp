// Bucket planning, range tracking and GradientBuckets over a recording
// communicator: no MPI, no GPU.
#include "mpi/gradient_buckets.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "mpi/launch.h"

namespace cnnbench::mpi {
namespace {

using kernels::DType;

constexpr int64_t kMiB = 1024 * 1024;

TEST(ElementsInMib, BytesOverElementSize) {
  EXPECT_EQ(elements_in_mib(25, DType::F32), 25 * kMiB / 4);
  EXPECT_EQ(elements_in_mib(25, DType::F16), 25 * kMiB / 2);
  EXPECT_EQ(elements_in_mib(25, DType::BF16), 25 * kMiB / 2);
  EXPECT_EQ(elements_in_mib(1, DType::F32), 262144);
  EXPECT_EQ(elements_in_mib(0.5, DType::F16), 262144);
  EXPECT_EQ(elements_in_mib(1e-3, DType::F32), 262);  // 1048.576 bytes, rounded down
  EXPECT_EQ(elements_in_mib(1e-12, DType::F32), 1);   // never an empty bucket
}

TEST(ElementsInMib, RejectsNonPositiveAndNonFinite) {
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity()}) {
    EXPECT_THROW((void)elements_in_mib(bad, DType::F32), std::invalid_argument) << bad;
  }
}

void expect_exact_cover(const std::vector<Bucket>& buckets, int64_t count) {
  int64_t next = 0;
  for (const Bucket& b : buckets) {
    EXPECT_EQ(b.offset, next);
    EXPECT_GT(b.count, 0);
    next = b.end();
  }
  EXPECT_EQ(next, count);
}

TEST(PlanBuckets, FirstBucketOneMibThenTwentyFive) {
  // ResNet-50's 25,557,032 parameters in fp32: 97.5 MiB.
  const int64_t count = 25557032;
  const auto buckets = plan_buckets(count, DType::F32);
  ASSERT_EQ(buckets.size(), 5U);
  EXPECT_EQ(buckets[0], (Bucket{0, 262144}));
  EXPECT_EQ(buckets[1], (Bucket{262144, 6553600}));
  EXPECT_EQ(buckets[2].count, 6553600);
  EXPECT_EQ(buckets[3].count, 6553600);
  EXPECT_EQ(buckets[4].count, count - 262144 - 3 * 6553600);
  expect_exact_cover(buckets, count);
}

TEST(PlanBuckets, SizesFollowTheDtype) {
  // 30 MiB of F16: 1 MiB, 25 MiB, then the remaining 4 MiB, counted in 2-byte elements.
  const int64_t count = 30 * kMiB / 2;
  const auto buckets = plan_buckets(count, DType::F16, {.bucket_mib = 25, .first_bucket_mib = 1});
  ASSERT_EQ(buckets.size(), 3U);
  EXPECT_EQ(buckets[0].count, kMiB / 2);
  EXPECT_EQ(buckets[1].count, 25 * kMiB / 2);
  EXPECT_EQ(buckets[2].count, 4 * kMiB / 2);
  expect_exact_cover(buckets, count);
}

TEST(PlanBuckets, EdgeCases) {
  EXPECT_TRUE(plan_buckets(0, DType::F32).empty());
  EXPECT_EQ(plan_buckets(10, DType::F32), (std::vector<Bucket>{{0, 10}}));
  // A first bucket larger than the others is capped at the bucket size.
  const auto capped = plan_buckets(1000, DType::F32, {.bucket_mib = 1e-3, .first_bucket_mib = 1});
  EXPECT_EQ(capped[0].count, 262);
  EXPECT_EQ(capped[1].count, 262);
  expect_exact_cover(capped, 1000);
  EXPECT_THROW((void)plan_buckets(-1, DType::F32), std::invalid_argument);
  EXPECT_THROW((void)plan_buckets(10, DType::F32, {.bucket_mib = 0}), std::invalid_argument);
}

// Buckets [0,10) [10,30) [30,50) [50,55).
BucketTracker small_tracker() { return BucketTracker({{0, 10}, {10, 20}, {30, 20}, {50, 5}}); }

TEST(BucketTracker, InOrderRangesReleaseBucketsAsTheyComplete) {
  BucketTracker t = small_tracker();
  EXPECT_TRUE(t.add(0, 4).empty());
  EXPECT_EQ(t.add(4, 6), (std::vector<int>{0}));
  EXPECT_TRUE(t.add(10, 15).empty());
  EXPECT_EQ(t.covered(1), 15);
  // One range completing two buckets.
  EXPECT_EQ(t.add(25, 25), (std::vector<int>{1, 2}));
  EXPECT_TRUE(t.partial());
  EXPECT_EQ(t.add(52, 3), (std::vector<int>{}));
  EXPECT_EQ(t.add(50, 2), (std::vector<int>{3}));
  EXPECT_TRUE(t.complete());
  EXPECT_FALSE(t.partial());
}

TEST(BucketTracker, OutOfOrderReleasesOnlyInBucketOrder) {
  BucketTracker t = small_tracker();
  EXPECT_TRUE(t.add(50, 5).empty());   // last bucket complete, not released
  EXPECT_TRUE(t.add(30, 20).empty());  // third complete, not released
  EXPECT_EQ(t.add(0, 10), (std::vector<int>{0}));
  EXPECT_EQ(t.released(), 1);
  EXPECT_EQ(t.add(20, 10), (std::vector<int>{}));
  EXPECT_EQ(t.add(10, 10), (std::vector<int>{1, 2, 3}));  // everything waiting, in order
  EXPECT_TRUE(t.complete());
}

TEST(BucketTracker, BackwardOrderOfSingleElements) {
  BucketTracker t = small_tracker();
  std::vector<int> released;
  for (int64_t i = 54; i >= 0; --i) {
    for (const int b : t.add(i, 1)) released.push_back(b);
  }
  EXPECT_EQ(released, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(t.complete());
}

TEST(BucketTracker, RejectsOverlapAndOutOfRangeWithoutChangingState) {
  BucketTracker t = small_tracker();
  (void)t.add(5, 10);
  EXPECT_THROW((void)t.add(14, 2), std::logic_error);   // overlaps the end of [5, 15)
  EXPECT_THROW((void)t.add(0, 6), std::logic_error);    // overlaps its start
  EXPECT_THROW((void)t.add(7, 1), std::logic_error);    // inside it
  EXPECT_THROW((void)t.add(50, 6), std::out_of_range);  // past the end
  EXPECT_THROW((void)t.add(-1, 2), std::out_of_range);
  EXPECT_THROW((void)t.add(3, -1), std::out_of_range);
  EXPECT_TRUE(t.add(20, 0).empty());  // empty range: nothing
  EXPECT_EQ(t.covered(0), 5);
  EXPECT_EQ(t.covered(1), 5);
  // The rest still completes the step exactly.
  (void)t.add(0, 5);
  (void)t.add(15, 40);
  EXPECT_TRUE(t.complete());
}

TEST(BucketTracker, ResetStartsANewStep) {
  BucketTracker t = small_tracker();
  (void)t.add(0, 55);
  EXPECT_TRUE(t.complete());
  t.reset();
  EXPECT_FALSE(t.complete());
  EXPECT_FALSE(t.partial());
  EXPECT_EQ(t.released(), 0);
  EXPECT_EQ(t.add(0, 10), (std::vector<int>{0}));  // the same ranges are accepted again
}

TEST(BucketTracker, RejectsBucketsWithGaps) {
  EXPECT_THROW(BucketTracker({{0, 10}, {11, 5}}), std::invalid_argument);
  EXPECT_THROW(BucketTracker({{0, 0}}), std::invalid_argument);
}

/// A world of `world` ranks in which the other ranks hold `peer` (summed into
/// `data` by all_reduce_sum); records every reduction.
class RecordingCommunicator final : public Communicator {
 public:
  struct Call {
    const float* data;
    int64_t count;
  };
  RecordingCommunicator(int world, std::vector<float> peer)
      : world_(world), peer_(std::move(peer)) {}

  [[nodiscard]] std::string name() const override { return "recording"; }
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world_size() const override { return world_; }
  [[nodiscard]] int local_rank() const override { return 0; }
  [[nodiscard]] int local_size() const override { return world_; }
  void all_reduce_sum(void* data, int64_t count, DType dtype, void* stream) override {
    ASSERT_EQ(dtype, DType::F32);
    ASSERT_EQ(stream, nullptr);
    auto* p = static_cast<float*>(data);
    calls.push_back({p, count});
    const int64_t offset = p - base;
    for (int64_t i = 0; i < count; ++i) p[i] += peer_[static_cast<size_t>(offset + i)];
  }
  std::vector<std::string> all_gather(const std::string& value) override { return {value}; }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

  const float* base = nullptr;
  std::vector<Call> calls;

 private:
  int world_;
  std::vector<float> peer_;  ///< the sum of the other ranks' gradients
};

TEST(GradientBuckets, HostBucketsAreAveragedInOrderOncePerStep) {
  const int64_t count = 1000;
  std::vector<float> grads(count);
  std::vector<float> peer(count);
  for (int64_t i = 0; i < count; ++i) {
    grads[static_cast<size_t>(i)] = static_cast<float>(i % 7);
    peer[static_cast<size_t>(i)] = static_cast<float>(3 * (i % 5));
  }
  RecordingCommunicator comm(2, peer);
  comm.base = grads.data();
  // 1e-3 MiB of F32 = 262 elements: buckets of 262, 262, 262, 214.
  GradientBuckets buckets(comm, {grads.data(), count, DType::F32}, nullptr,
                          {.bucket_mib = 1e-3, .first_bucket_mib = 1e-3});
  ASSERT_EQ(buckets.buckets().size(), 4U);
  const kernels::GradReadyFn hook = buckets.hook();
  ASSERT_TRUE(hook);

  // Backward reports the end of the buffer first, in odd pieces.
  hook(900, 100);
  hook(500, 400);
  EXPECT_TRUE(comm.calls.empty());
  hook(0, 300);
  ASSERT_EQ(comm.calls.size(), 1U);
  hook(300, 200);
  ASSERT_EQ(comm.calls.size(), 4U);
  for (size_t b = 0; b < 4; ++b) {
    EXPECT_EQ(comm.calls[b].data - grads.data(), buckets.buckets()[b].offset);
    EXPECT_EQ(comm.calls[b].count, buckets.buckets()[b].count);
  }
  EXPECT_EQ(buckets.completed_steps(), 1);
  for (int64_t i = 0; i < count; ++i) {
    // (a + b) / 2 with small integers: exact in float.
    const float expected = static_cast<float>(i % 7 + 3 * (i % 5)) / 2.0F;
    ASSERT_EQ(grads[static_cast<size_t>(i)], expected) << "element " << i;
  }
  EXPECT_NO_THROW(buckets.wait_all(nullptr));

  // The next step starts over.
  hook(0, count);
  EXPECT_EQ(comm.calls.size(), 8U);
  EXPECT_EQ(buckets.completed_steps(), 2);
}

TEST(GradientBuckets, OneRankEnqueuesNothing) {
  std::vector<float> grads(100, 2.0F);
  RecordingCommunicator comm(1, std::vector<float>(100, 5.0F));
  comm.base = grads.data();
  GradientBuckets buckets(comm, {grads.data(), 100, DType::F32}, nullptr);
  EXPECT_FALSE(buckets.hook());
  buckets.on_grad_ready(0, 100);
  EXPECT_TRUE(comm.calls.empty());
  EXPECT_EQ(grads, std::vector<float>(100, 2.0F));
  EXPECT_EQ(buckets.completed_steps(), 0);
  EXPECT_EQ(buckets.comm_stream(), nullptr);

  // The same with the real single worker.
  const auto single = make_single_worker();
  GradientBuckets with_single(*single, {grads.data(), 100, DType::F32}, nullptr);
  EXPECT_FALSE(with_single.hook());
}

TEST(GradientBuckets, HalfCoveredStepIsReportedByWaitAll) {
  std::vector<float> grads(600, 1.0F);
  RecordingCommunicator comm(2, std::vector<float>(600, 1.0F));
  comm.base = grads.data();
  GradientBuckets buckets(comm, {grads.data(), 600, DType::F32}, nullptr,
                          {.bucket_mib = 1e-3, .first_bucket_mib = 1e-3});
  buckets.on_grad_ready(0, 300);
  try {
    buckets.wait_all(nullptr);
    ADD_FAILURE() << "no exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("only 1 of 3 buckets"), std::string::npos) << e.what();
  }
  buckets.reset();
  EXPECT_NO_THROW(buckets.wait_all(nullptr));
  EXPECT_THROW(buckets.on_grad_ready(550, 100), std::out_of_range);
}

TEST(GradientBuckets, DefaultAverageRejectsHalfPrecisionOnHost) {
  std::vector<uint16_t> grads(10);
  RecordingCommunicator comm(2, std::vector<float>(10));
  GradientBuckets buckets(comm, {grads.data(), 10, DType::F16}, nullptr);
  EXPECT_THROW(buckets.on_grad_ready(0, 10), std::invalid_argument);
}

TEST(GradientBuckets, DeviceBuffersNeedCuda) {
  if (nccl_built()) GTEST_SKIP() << "built with CUDA: the gpu-labelled tests cover device buffers";
  std::vector<float> grads(10);
  RecordingCommunicator comm(2, std::vector<float>(10));
  int not_a_stream = 0;
  try {
    GradientBuckets buckets(comm, {grads.data(), 10, DType::F32}, &not_a_stream);
    ADD_FAILURE() << "no exception";
  } catch (const CommunicatorUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("CNNBENCH_CUDA=OFF"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace cnnbench::mpi
