#include "bench/run/signals.h"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace cnnbench::bench {
namespace {

// The program's only global mutable state: a signal handler can reach nothing
// else. g_signal is written by the handler (first signal wins) and reset by the
// StopSignals constructor; g_stop mirrors "a signal arrived" as the atomic<bool>
// the trainer polls; g_installed enforces one StopSignals at a time.
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_installed{false};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<bool>::is_always_lock_free,
              "the signal handler may only use lock-free atomics");

void say(std::string_view text) {
  // Nothing can be done about a failed write inside a signal handler.
  const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

void on_stop_signal(int signo) {
  const int saved_errno = errno;  // write(2) may change it under the interrupted code
  int first = 0;
  if (g_signal.compare_exchange_strong(first, signo)) {
    g_stop.store(true);
    say(signo == SIGINT ? "\ncnnbench: SIGINT received, stopping after the current step (press Ctrl-C again to quit now)\n"
                        : "\ncnnbench: SIGTERM received, stopping after the current step\n");
  } else if (first == signo) {
    say(signo == SIGINT ? "cnnbench: second SIGINT, quitting now\n" : "cnnbench: second SIGTERM, quitting now\n");
    ::_exit(128 + signo);
  }
  errno = saved_errno;
}

void install(int signo, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (::sigaction(signo, &action, previous) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            std::string("sigaction(") + (signo == SIGINT ? "SIGINT" : "SIGTERM") + ")");
  }
}

}  // namespace

StopSignals::StopSignals() {
  if (g_installed.exchange(true)) throw std::logic_error("StopSignals: another instance is alive");
  g_signal.store(0);
  g_stop.store(false);
  try {
    install(SIGTERM, &previous_term_);
  } catch (...) {
    g_installed.store(false);
    throw;
  }
  try {
    install(SIGINT, &previous_int_);
  } catch (...) {
    ::sigaction(SIGTERM, &previous_term_, nullptr);
    g_installed.store(false);
    throw;
  }
}

StopSignals::~StopSignals() {
  ::sigaction(SIGINT, &previous_int_, nullptr);
  ::sigaction(SIGTERM, &previous_term_, nullptr);
  g_installed.store(false);
}

const std::atomic<bool>& StopSignals::stop_flag() const { return g_stop; }

bool StopSignals::stop_requested() const { return g_stop.load(); }

int StopSignals::signal_number() const { return g_signal.load(); }

int StopSignals::exit_code() const {
  const int signo = g_signal.load();
  return signo == 0 ? 0 : 128 + signo;
}

std::string StopSignals::signal_name() const {
  switch (g_signal.load()) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "";
  }
}

}  // namespace cnnbench::bench
