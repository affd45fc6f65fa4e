// Host collectives among the threads of one process (the LocalGroup's helper).
#include "mpi/thread_exchange.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mpi/communicator.h"

namespace cnnbench::mpi {
namespace {

TEST(ThreadExchange, AllGatherOfStringsOfDifferentLengthsRepeatedly) {
  constexpr int kParties = 4;
  constexpr int kRounds = 200;
  ThreadExchange exchange(kParties);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kParties; ++r) {
    threads.emplace_back([&, r] {
      for (int round = 0; round < kRounds; ++round) {
        // Rank r sends r * round characters: empty strings included.
        const std::string mine(static_cast<size_t>(r * (round % 5)), static_cast<char>('a' + r));
        const auto all = exchange.all_gather(r, mine);
        for (int p = 0; p < kParties; ++p) {
          const std::string expected(static_cast<size_t>(p * (round % 5)),
                                     static_cast<char>('a' + p));
          if (all.size() != kParties || all[static_cast<size_t>(p)] != expected) ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ThreadExchange, BarrierHoldsEveryoneUntilTheLastArrives) {
  constexpr int kParties = 3;
  ThreadExchange exchange(kParties);
  std::atomic<int> arrived{0};
  std::atomic<int> early{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kParties; ++r) {
    threads.emplace_back([&, r] {
      if (r == kParties - 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ++arrived;
      exchange.barrier(r);
      if (arrived.load() != kParties) ++early;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(early.load(), 0);
}

TEST(ThreadExchange, APartyThatLeavesReleasesTheOthersWithAnError) {
  constexpr int kParties = 3;
  ThreadExchange exchange(kParties);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kParties; ++r) {
    threads.emplace_back([&, r] {
      if (r == 0) {
        // Fails before the barrier and leaves instead of arriving.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        exchange.leave(0);
        exchange.leave(0);  // a second leave is ignored
        return;
      }
      try {
        exchange.barrier(r);
        (void)exchange.all_gather(r, "x");
      } catch (const CommunicatorError& e) {
        if (std::string(e.what()).find("another thread stopped") != std::string::npos) ++errors;
      }
      // Later calls fail at once instead of waiting.
      try {
        exchange.barrier(r);
      } catch (const CommunicatorError&) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 2 * (kParties - 1));
  EXPECT_TRUE(exchange.broken());
}

TEST(ThreadExchange, OnePartyIsItsOwnWorld) {
  ThreadExchange exchange(1);
  EXPECT_EQ(exchange.all_gather(0, "solo"), std::vector<std::string>{"solo"});
  exchange.barrier(0);
}

TEST(ThreadExchange, RejectsBadRanksAndSizes) {
  EXPECT_THROW(ThreadExchange(0), std::invalid_argument);
  ThreadExchange exchange(2);
  EXPECT_THROW(exchange.barrier(2), std::invalid_argument);
  EXPECT_THROW((void)exchange.all_gather(-1, ""), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::mpi
