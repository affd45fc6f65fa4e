// Host-side collectives among the threads of one process (one thread per GPU in
// a LocalGroup): all-gather of strings and a barrier, on std::barrier.
#pragma once

#include <atomic>
#include <barrier>
#include <string>
#include <vector>

namespace cnnbench::mpi {

/// `parties` threads, each calling with its own rank in [0, parties). Every call
/// is collective: all remaining parties make the same calls in the same order.
///
/// A party that stops after an error calls leave(rank): it drops out of the
/// barrier (std::barrier::arrive_and_drop), so the others are never left waiting
/// for it, and their pending and later calls throw CommunicatorError instead of
/// returning incomplete results.
class ThreadExchange {
 public:
  explicit ThreadExchange(int parties);
  ThreadExchange(const ThreadExchange&) = delete;
  ThreadExchange& operator=(const ThreadExchange&) = delete;

  [[nodiscard]] int parties() const { return parties_; }
  /// Every party's `value`, indexed by rank.
  std::vector<std::string> all_gather(int rank, const std::string& value);
  void barrier(int rank);
  /// Party `rank` leaves after an error (at most once per rank; later calls of
  /// it are ignored). Thread-safe.
  void leave(int rank);
  /// Whether some party left.
  [[nodiscard]] bool broken() const { return broken_.load(std::memory_order_acquire); }

 private:
  void check_rank(int rank) const;
  /// Arrives and waits; throws when some party has left.
  void sync(int rank, const char* operation);

  int parties_;
  std::barrier<> barrier_;
  std::vector<std::string> slots_;       ///< slot r written only by party r, between two syncs
  std::vector<std::atomic<bool>> left_;  ///< value-initialised: false
  std::atomic<bool> broken_{false};
};

}  // namespace cnnbench::mpi
