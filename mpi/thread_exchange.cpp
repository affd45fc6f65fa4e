#include "mpi/thread_exchange.h"

#include <stdexcept>
#include <string>

#include "mpi/communicator.h"

namespace cnnbench::mpi {

ThreadExchange::ThreadExchange(int parties)
    : parties_(parties),
      barrier_(parties > 0 ? parties : 1),
      slots_(static_cast<size_t>(parties > 0 ? parties : 0)),
      left_(static_cast<size_t>(parties > 0 ? parties : 0)) {
  if (parties < 1) throw std::invalid_argument("ThreadExchange: needs at least one party");
}

void ThreadExchange::check_rank(int rank) const {
  if (rank < 0 || rank >= parties_) {
    throw std::invalid_argument("ThreadExchange: rank " + std::to_string(rank) + " is not in [0, " +
                                std::to_string(parties_) + ")");
  }
}

void ThreadExchange::sync(int rank, const char* operation) {
  if (!broken()) barrier_.arrive_and_wait();
  if (broken()) {
    // Leave as well, so that the remaining parties' arrivals keep matching.
    leave(rank);
    throw CommunicatorError(std::string(operation) +
                            " among the GPU threads of this process: "
                            "another thread stopped after an error (see its message)");
  }
}

std::vector<std::string> ThreadExchange::all_gather(int rank, const std::string& value) {
  check_rank(rank);
  slots_[static_cast<size_t>(rank)] = value;
  sync(rank, "all_gather");
  std::vector<std::string> out = slots_;
  // Nobody writes its slot again before everyone has read them all.
  sync(rank, "all_gather");
  return out;
}

void ThreadExchange::barrier(int rank) {
  check_rank(rank);
  sync(rank, "barrier");
}

void ThreadExchange::leave(int rank) {
  check_rank(rank);
  if (left_[static_cast<size_t>(rank)].exchange(true)) return;
  broken_.store(true, std::memory_order_release);
  barrier_.arrive_and_drop();
}

}  // namespace cnnbench::mpi
