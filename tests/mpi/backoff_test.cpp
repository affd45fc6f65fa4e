// The poll schedule of waits on the step's critical path (mpi/backoff.h).
#include "mpi/backoff.h"

#include <gtest/gtest.h>

#include <chrono>

namespace cnnbench::mpi {
namespace {

using std::chrono::microseconds;

TEST(Backoff, SpinsFirstThenSleepsShortAndNeverLongerThanTheCap) {
  Backoff b;
  for (int i = 0; i < Backoff::kSpinPolls; ++i) EXPECT_EQ(b.next(), microseconds{0}) << "poll " << i;
  EXPECT_EQ(b.next(), Backoff::kFirstSleep);
  EXPECT_EQ(b.next(), Backoff::kFirstSleep * 2);
  microseconds last{0};
  for (int i = 0; i < 1000; ++i) {
    last = b.next();
    EXPECT_LE(last, Backoff::kMaxSleep);
    EXPECT_GT(last, microseconds{0});
  }
  EXPECT_EQ(last, Backoff::kMaxSleep);
  // A wait is noticed at most 100 µs late: far below a 1 ms back-off.
  EXPECT_LE(Backoff::kMaxSleep, microseconds{100});
}

TEST(Backoff, PauseWaitsAboutWhatNextSays) {
  Backoff b;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < Backoff::kSpinPolls + 10; ++i) b.pause();
  const auto took = std::chrono::steady_clock::now() - start;
  // 200 yields and ten sleeps of 5 to 100 µs (about 0.7 ms): far under half a
  // second even on a loaded machine, where a 1 ms back-off schedule would already
  // differ only by its cap, which the test above pins.
  EXPECT_LT(took, std::chrono::milliseconds(500));
}

}  // namespace
}  // namespace cnnbench::mpi
