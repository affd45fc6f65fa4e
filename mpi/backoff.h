// How a host thread polls the device while it waits on the step's critical
// path (a collective, a stream event): spin first, then short sleeps.
#pragma once

#include <chrono>
#include <cstdint>

namespace cnnbench::mpi {

/// The poll schedule: the first kSpinPolls polls only yield the CPU (a wait
/// that ends within tens of microseconds costs no sleep granularity), then
/// sleeps start at kFirstSleep and double up to kMaxSleep. A collective that
/// finishes while the thread sleeps is thus noticed at most kMaxSleep late —
/// never the 1 ms a coarse back-off would add to every step — while a long
/// wait (a slow or hung peer, until the watchdog's deadline) costs about
/// 10,000 wake-ups a second.
class Backoff {
 public:
  static constexpr int kSpinPolls = 200;
  static constexpr std::chrono::microseconds kFirstSleep{5};
  static constexpr std::chrono::microseconds kMaxSleep{100};

  /// The pause before the next poll; zero means yield only. Pure.
  std::chrono::microseconds next();
  /// Waits next(): std::this_thread::yield() or sleep_for.
  void pause();

 private:
  int polls_ = 0;
  std::chrono::microseconds sleep_{kFirstSleep};
};

}  // namespace cnnbench::mpi
