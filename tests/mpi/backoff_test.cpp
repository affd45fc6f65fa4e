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

}  // namespace
}  // namespace cnnbench::mpi
