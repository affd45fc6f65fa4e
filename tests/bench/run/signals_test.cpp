// StopSignals: SIGTERM and SIGINT set the stop flag and the exit code; a second
// signal of the same kind quits at once; the previous handlers come back.
#include "bench/run/signals.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

namespace cnnbench::bench {
namespace {

std::atomic<int> g_custom_calls{0};
void custom_handler(int /*signo*/) { g_custom_calls.fetch_add(1); }

// The handler currently installed for `signo`.
void (*current_handler(int signo))(int) {
  struct sigaction now {};
  sigaction(signo, nullptr, &now);
  return now.sa_handler;
}

TEST(StopSignals, SigtermSetsTheFlagAndCode143) {
  StopSignals signals;
  EXPECT_FALSE(signals.stop_requested());
  EXPECT_EQ(signals.exit_code(), 0);
  EXPECT_EQ(signals.signal_name(), "");
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_TRUE(signals.stop_requested());
  EXPECT_TRUE(signals.stop_flag().load());
  EXPECT_EQ(signals.signal_number(), SIGTERM);
  EXPECT_EQ(signals.exit_code(), 143);
  EXPECT_EQ(signals.signal_name(), "SIGTERM");
}

TEST(StopSignals, SigintSetsTheFlagAndCode130) {
  StopSignals signals;
  ASSERT_EQ(raise(SIGINT), 0);
  EXPECT_TRUE(signals.stop_requested());
  EXPECT_EQ(signals.exit_code(), 130);
  EXPECT_EQ(signals.signal_name(), "SIGINT");
}

TEST(StopSignals, ADifferentSecondSignalKeepsTheFirst) {
  StopSignals signals;
  ASSERT_EQ(raise(SIGTERM), 0);
  ASSERT_EQ(raise(SIGINT), 0);  // already stopping: ignored
  EXPECT_EQ(signals.exit_code(), 143);
}

TEST(StopSignals, ANewGuardStartsClear) {
  {
    StopSignals first;
    raise(SIGINT);
  }
  StopSignals second;
  EXPECT_FALSE(second.stop_requested());
  EXPECT_EQ(second.exit_code(), 0);
}

TEST(StopSignals, PreviousHandlersAreRestored) {
  struct sigaction custom {};
  custom.sa_handler = custom_handler;
  sigemptyset(&custom.sa_mask);
  struct sigaction saved_term {}, saved_int {};
  ASSERT_EQ(sigaction(SIGTERM, &custom, &saved_term), 0);
  ASSERT_EQ(sigaction(SIGINT, &custom, &saved_int), 0);
  {
    StopSignals signals;
    EXPECT_NE(current_handler(SIGTERM), &custom_handler);
    EXPECT_NE(current_handler(SIGINT), &custom_handler);
  }
  EXPECT_EQ(current_handler(SIGTERM), &custom_handler);
  EXPECT_EQ(current_handler(SIGINT), &custom_handler);
  g_custom_calls = 0;
  raise(SIGTERM);
  EXPECT_EQ(g_custom_calls.load(), 1);
  sigaction(SIGTERM, &saved_term, nullptr);
  sigaction(SIGINT, &saved_int, nullptr);
}

TEST(StopSignals, OnlyOneAtATime) {
  StopSignals signals;
  EXPECT_THROW(StopSignals{}, std::logic_error);
}

using StopSignalsDeathTest = ::testing::Test;

TEST_F(StopSignalsDeathTest, SecondSigintQuitsWith130) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StopSignals signals;
        raise(SIGINT);
        raise(SIGINT);
      },
      ::testing::ExitedWithCode(130), "second SIGINT, quitting now");
}

TEST_F(StopSignalsDeathTest, SecondSigtermQuitsWith143) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StopSignals signals;
        raise(SIGTERM);
        raise(SIGTERM);
      },
      ::testing::ExitedWithCode(143), "second SIGTERM");
}

}  // namespace
}  // namespace cnnbench::bench
