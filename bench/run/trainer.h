// The training loop: warm-up, timed steps, step statistics and the run's totals.
// Device-neutral: it drives a kernels::Executable and a mpi::Communicator, and
// the way a step is timed is a StepTimer (host clock here, device events on CUDA).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/report/reporter.h"
#include "kernels/backend.h"
#include "mpi/communicator.h"

namespace cnnbench::bench {

/// A monotonic clock in seconds. Injected so that tests can run the trainer on
/// simulated time.
class Clock {
 public:
  virtual ~Clock() = default;
  /// Seconds from an arbitrary fixed origin; never decreases.
  [[nodiscard]] virtual double now_s() const = 0;
};

/// std::chrono::steady_clock in seconds.
class SteadyClock final : public Clock {
 public:
  [[nodiscard]] double now_s() const override;
};

/// Times steps. start() is called before a step's work is enqueued and stop()
/// right after; take(in_flight) returns the times (ms, > 0) of stopped steps
/// not returned before, oldest first, waiting until at most `in_flight`
/// stopped steps are left unreturned. A timer that reads a step one step late
/// (take(1)) never makes the host wait for the step it has just enqueued, so
/// the device is never idle between steps because of the timing.
class StepTimer {
 public:
  virtual ~StepTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual std::vector<double> take(int in_flight) = 0;
  /// How steps are timed, for the report ("host clock", "CUDA events").
  [[nodiscard]] virtual std::string name() const = 0;
};

/// Host clock around the step, read after Executable::synchronize() in stop(),
/// so that the time covers the work and not only its enqueueing (the CPU
/// backend, whose steps are synchronous anyway).
class HostStepTimer final : public StepTimer {
 public:
  /// `executable` and `clock` must outlive the timer.
  HostStepTimer(kernels::Executable& executable, const Clock& clock)
      : executable_(executable), clock_(clock) {}
  void start() override { start_s_ = clock_.now_s(); }
  void stop() override;
  std::vector<double> take(int in_flight) override;
  [[nodiscard]] std::string name() const override { return "host clock"; }

 private:
  kernels::Executable& executable_;
  const Clock& clock_;
  double start_s_ = 0;
  std::vector<double> done_ms_;
};

/// Device events recorded on the executable's stream around each step
/// (kernels::StepEvents), read one step late: the step time is the device's
/// time from the step's first to its last work, never a host wait.
class DeviceEventStepTimer final : public StepTimer {
 public:
  /// Throws std::invalid_argument when `events` is null or holds fewer than 2 steps.
  explicit DeviceEventStepTimer(std::unique_ptr<kernels::StepEvents> events);
  void start() override { events_->record_start(); }
  void stop() override { events_->record_stop(); }
  std::vector<double> take(int in_flight) override;
  [[nodiscard]] std::string name() const override { return "CUDA events"; }

 private:
  std::unique_ptr<kernels::StepEvents> events_;
};

/// The loss became NaN or infinite; what() names the step.
class NonFiniteLossError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What the trainer runs, resolved from the Config and the device choice.
struct TrainerSettings {
  int num_batches = 0;         ///< timed steps; ignored when duration_s > 0
  double duration_s = 0;       ///< > 0: timed steps until this many seconds have passed
  int num_warmup_batches = 0;  ///< untimed steps first
  int display_every = 10;      ///< a step line at timed step 1 and every display_every steps
  bool forward_only = false;   ///< Executable::forward_only instead of train_step
  uint64_t seed = 0;           ///< of the synthetic batch
  int64_t global_batch = 0;    ///< images per step over all devices of all ranks
  /// Clock time (same clock as the trainer's) when the program started, for
  /// RunSummary::setup_time_s; negative = measure from the start of run().
  double program_start_s = -1;
};

/// Runs warm-up and timed steps and fills the RunSummary, following
/// tf_cnn_benchmarks' benchmark_cnn.py: step lines at the first timed step and
/// every display_every steps with get_perf_timing's statistics (stats.h), and
/// total images/sec = images of all ranks / wall time of the timed loop, the loop
/// being bracketed by two barriers so that every rank's work is inside it.
///
/// The loss is read only at displayed steps and after the last step, because
/// reading it waits for the device. A stop flag, when set (by a signal handler),
/// ends the loop after the current step; the summary is then marked interrupted.
///
/// With several ranks, every rank must leave the loop after the same step, or
/// one would wait for ever in the next step's all-reduce: after each step (warm-up
/// included) the ranks exchange a one-byte vote (Communicator::all_gather, on the
/// host: microseconds beside a step), and all stop when any rank's stop flag is
/// set or, with a duration, when any rank's clock has passed it.
///
/// Errors: NonFiniteLossError when a loss read is NaN or infinite (naming the
/// step); whatever the Executable, Communicator or Reporter throws.
class Trainer {
 public:
  /// All references must outlive the trainer.
  Trainer(kernels::Executable& executable, mpi::Communicator& comm, Reporter& reporter,
          TrainerSettings settings);

  /// Replaces the steady clock (tests run on simulated time).
  void use_clock(const Clock& clock) { clock_ = &clock; }
  /// Replaces the default timer (device events where the executable has them,
  /// else the host clock).
  void use_step_timer(std::unique_ptr<StepTimer> timer) { timer_ = std::move(timer); }
  /// Checked between steps; may be null (never stop early). Must outlive run().
  void use_stop_flag(const std::atomic<bool>* stop) { stop_ = stop; }
  /// Passed to every Executable::train_step: with several ranks, the gradient
  /// all-reduce (mpi::GradientBuckets::hook()); empty (the default) with one.
  /// The host time spent inside it during timed steps is RunSummary::grad_hook_time_s.
  void use_grad_ready(kernels::GradReadyFn on_grad_ready) { on_grad_ready_ = std::move(on_grad_ready); }
  /// Called after each step is enqueued and before it is waited for (warm-up and
  /// timed steps): with GPUs and several ranks, a wait on the communication
  /// stream (mpi::Communicator::wait) that turns a hung all-reduce into an error
  /// instead of a hang in Executable::synchronize(). May be empty.
  void use_after_enqueue(std::function<void()> after_enqueue) { after_enqueue_ = std::move(after_enqueue); }
  /// Called right before the first timed step and right after the last one (e.g.
  /// to sample GPU telemetry over the timed loop only); either may be empty.
  void use_timed_loop_hooks(std::function<void()> before, std::function<void()> after) {
    before_timed_loop_ = std::move(before);
    after_timed_loop_ = std::move(after);
  }

  /// Calls `check(step)` after every `every`-th timed step (every > 0), outside
  /// the step's timed region and on every rank at the same step (a collective,
  /// e.g. the replica check). Returning false ends the loop after that step
  /// (RunSummary::stop_reason says so; the run is not marked interrupted). The
  /// checks' wall time is left out of RunSummary::wall_time_s.
  void use_periodic_check(int every, std::function<bool(int step)> check) {
    check_every_ = every;
    periodic_check_ = std::move(check);
  }

  /// Runs the whole benchmark; `info` is passed to the reporter with each step.
  RunSummary run(const RunInfo& info);

 private:
  /// What the ranks agreed on after a step.
  struct Vote {
    bool stop = false;    ///< some rank's stop flag was set
    int stop_rank = -1;   ///< the lowest such rank
    bool done = false;    ///< some rank's clock passed the duration
  };

  /// One step of either kind, enqueued (not waited for); `on_grad_ready` is
  /// passed to train_step.
  void enqueue_step(const kernels::Batch& batch, const kernels::GradReadyFn& on_grad_ready);
  [[nodiscard]] bool stop_requested() const {
    return stop_ != nullptr && stop_->load(std::memory_order_relaxed);
  }
  /// Every rank's stop flag and `done`, combined; a collective with several ranks.
  Vote vote(bool done);
  /// " (asked on rank r)" when another rank asked for the stop, else "".
  [[nodiscard]] std::string stop_origin(const Vote& v) const;

  kernels::Executable& executable_;
  mpi::Communicator& comm_;
  Reporter& reporter_;
  TrainerSettings settings_;
  SteadyClock steady_clock_;
  const Clock* clock_ = &steady_clock_;
  std::unique_ptr<StepTimer> timer_;
  const std::atomic<bool>* stop_ = nullptr;
  kernels::GradReadyFn on_grad_ready_;
  std::function<void()> after_enqueue_;
  std::function<void()> before_timed_loop_;
  std::function<void()> after_timed_loop_;
  int check_every_ = 0;
  std::function<bool(int)> periodic_check_;
};

}  // namespace cnnbench::bench
