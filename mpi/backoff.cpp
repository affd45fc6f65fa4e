#include "mpi/backoff.h"

#include <algorithm>
#include <thread>

namespace cnnbench::mpi {

std::chrono::microseconds Backoff::next() {
  if (polls_ < kSpinPolls) {
    ++polls_;
    return std::chrono::microseconds{0};
  }
  const std::chrono::microseconds d = sleep_;
  sleep_ = std::min(sleep_ * 2, kMaxSleep);
  return d;
}

void Backoff::pause() {
  const std::chrono::microseconds d = next();
  if (d.count() == 0) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(d);
  }
}

}  // namespace cnnbench::mpi
