#include "bench/run/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench/report/stats.h"

namespace cnnbench::bench {
namespace {

/// Reads the loss (waiting for the device) and rejects NaN and ±inf. `where`
/// names the step for the message, e.g. "timed step 7".
double read_finite_loss(kernels::Executable& executable, const std::string& where) {
  const float loss = executable.loss();
  if (!std::isfinite(loss)) {
    throw NonFiniteLossError(std::string("the loss is ") + (std::isnan(loss) ? "NaN" : "infinite") +
                             " at " + where +
                             ": training diverged; try a smaller --learning_rate");
  }
  return loss;
}

}  // namespace

double SteadyClock::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void HostStepTimer::stop() {
  executable_.synchronize();
  // A step shorter than the clock's resolution would read as 0 ms, which no
  // rate can be derived from; 1 ns stands for "below resolution".
  done_ms_.push_back(std::max((clock_.now_s() - start_s_) * 1e3, 1e-6));
}

std::vector<double> HostStepTimer::take(int /*in_flight*/) {
  // stop() already waited: every stopped step is done.
  return std::exchange(done_ms_, {});
}

DeviceEventStepTimer::DeviceEventStepTimer(std::unique_ptr<kernels::StepEvents> events)
    : events_(std::move(events)) {
  if (events_ == nullptr) throw std::invalid_argument("DeviceEventStepTimer: no step events");
  if (events_->capacity() < 2) {
    throw std::invalid_argument("DeviceEventStepTimer: step events must hold 2 steps to read one late");
  }
}

std::vector<double> DeviceEventStepTimer::take(int in_flight) {
  std::vector<double> times;
  while (events_->pending() > std::max(0, in_flight)) times.push_back(events_->elapsed_ms());
  return times;
}

Trainer::Trainer(kernels::Executable& executable, mpi::Communicator& comm, Reporter& reporter,
                 TrainerSettings settings)
    : executable_(executable), comm_(comm), reporter_(reporter), settings_(settings) {
  if (settings_.global_batch < 1) throw std::invalid_argument("Trainer: global_batch must be >= 1");
  if (settings_.display_every < 1) throw std::invalid_argument("Trainer: display_every must be >= 1");
  if (settings_.num_warmup_batches < 0) {
    throw std::invalid_argument("Trainer: num_warmup_batches must be >= 0");
  }
  if (!(settings_.duration_s > 0) && settings_.num_batches < 1) {
    throw std::invalid_argument("Trainer: num_batches must be >= 1 when no duration is set");
  }
}

void Trainer::enqueue_step(const kernels::Batch& batch, const kernels::GradReadyFn& on_grad_ready) {
  if (settings_.forward_only) {
    executable_.forward_only(batch);
  } else {
    executable_.train_step(batch, on_grad_ready);
  }
  if (after_enqueue_) after_enqueue_();
}

Trainer::Vote Trainer::vote(bool done) {
  Vote v;
  const bool stop = stop_requested();
  if (comm_.world_size() == 1) {
    v.stop = stop;
    v.stop_rank = stop ? comm_.rank() : -1;
    v.done = done;
    return v;
  }
  // One byte per rank: 'S' stop flag set, 'D' duration passed, '-' neither.
  const std::vector<std::string> votes = comm_.all_gather(stop ? "S" : done ? "D" : "-");
  for (size_t r = 0; r < votes.size(); ++r) {
    if (votes[r] == "S" && !v.stop) {
      v.stop = true;
      v.stop_rank = static_cast<int>(r);
    }
    v.done = v.done || votes[r] == "D";
  }
  return v;
}

std::string Trainer::stop_origin(const Vote& v) const {
  if (v.stop_rank < 0 || v.stop_rank == comm_.rank()) return "";
  return " (asked on rank " + std::to_string(v.stop_rank) + ")";
}

RunSummary Trainer::run(const RunInfo& info) {
  const double run_start_s = clock_->now_s();
  const double program_start_s =
      settings_.program_start_s >= 0 ? settings_.program_start_s : run_start_s;
  if (!timer_) {
    if (auto events = executable_.make_step_events()) {
      timer_ = std::make_unique<DeviceEventStepTimer>(std::move(events));
    } else {
      timer_ = std::make_unique<HostStepTimer>(executable_, *clock_);
    }
  }

  // Generated once, on the device: data movement is not what is measured.
  const kernels::Batch batch = executable_.synthetic_batch(settings_.seed);
  RunSummary summary;

  // A vote before every warm-up step and before the timed loop: a stop asked
  // for during set-up or warm-up ends the run within one step. Each warm-up step
  // is waited for, so that the vote follows the device, not the enqueueing.
  const double warmup_start_s = clock_->now_s();
  int warmup_done = 0;
  while (true) {
    if (const Vote v = vote(false); v.stop) {
      summary.interrupted = true;
      summary.stop_reason =
          "stop requested" + stop_origin(v) +
          (warmup_done == 0 ? std::string(" before the first step")
           : warmup_done < settings_.num_warmup_batches
               ? " during warm-up, after " + std::to_string(warmup_done) + " of " +
                     std::to_string(settings_.num_warmup_batches) + " steps"
               : std::string(" at the end of warm-up"));
      break;
    }
    if (warmup_done == settings_.num_warmup_batches) break;
    enqueue_step(batch, on_grad_ready_);
    ++warmup_done;
    executable_.synchronize();
  }
  summary.warmup_time_s = clock_->now_s() - warmup_start_s;
  if (warmup_done > 0) {
    read_finite_loss(executable_, "warm-up step " + std::to_string(warmup_done));
  }

  StepSeries series(static_cast<double>(settings_.global_batch));
  double final_loss = std::numeric_limits<double>::quiet_NaN();
  if (!summary.interrupted) {
    // In timed steps the hook is wrapped once, to add its host time up.
    double grad_hook_time_s = 0;
    kernels::GradReadyFn timed_grad_ready;
    if (on_grad_ready_) {
      timed_grad_ready = [this, &grad_hook_time_s](int64_t offset, int64_t count) {
        const double start_s = clock_->now_s();
        on_grad_ready_(offset, count);
        grad_hook_time_s += clock_->now_s() - start_s;
      };
    }
    if (before_timed_loop_) before_timed_loop_();
    comm_.barrier();
    double checks_time_s = 0;  // periodic checks: between steps, not training
    const double loop_start_s = clock_->now_s();
    summary.setup_time_s = loop_start_s - program_start_s;
    for (int step = 1;; ++step) {
      timer_->start();
      enqueue_step(batch, timed_grad_ready);
      timer_->stop();
      // tf_cnn_benchmarks displays the first timed step and every display_every-th.
      const bool display = step == 1 || step % settings_.display_every == 0;
      // Step times are read one step late, except where a line needs them all.
      for (const double ms : timer_->take(display ? 0 : 1)) series.add(ms);
      if (display) {
        StepStats stats = series.stats();
        stats.loss = read_finite_loss(executable_, "timed step " + std::to_string(step));
        stats.elapsed_s = clock_->now_s() - loop_start_s;
        summary.losses.push_back(stats.loss);
        final_loss = stats.loss;
        reporter_.step(info, stats);
      } else {
        final_loss = std::numeric_limits<double>::quiet_NaN();
      }
      if (periodic_check_ && check_every_ > 0 && step % check_every_ == 0) {
        const double check_start_s = clock_->now_s();
        const bool keep_going = periodic_check_(step);
        checks_time_s += clock_->now_s() - check_start_s;
        if (!keep_going) {
          summary.stop_reason = "a periodic check failed after step " + std::to_string(step);
          break;
        }
      }
      const bool duration_passed = settings_.duration_s > 0 &&
                                   clock_->now_s() - loop_start_s - checks_time_s >=
                                       settings_.duration_s;
      const Vote v = vote(duration_passed);
      if (v.stop) {
        summary.interrupted = true;
        summary.stop_reason = "stop requested" + stop_origin(v) +
                              " during the timed loop, after step " + std::to_string(step);
        break;
      }
      const bool done = settings_.duration_s > 0 ? v.done : step >= settings_.num_batches;
      if (done) break;
    }
    for (const double ms : timer_->take(0)) series.add(ms);
    executable_.synchronize();
    comm_.barrier();
    summary.wall_time_s = clock_->now_s() - loop_start_s - checks_time_s;
    summary.grad_hook_time_s = grad_hook_time_s;
    if (after_timed_loop_) after_timed_loop_();
  }

  summary.step_timing = timer_->name();
  summary.steps = series.count();
  summary.images = int64_t{summary.steps} * settings_.global_batch;
  if (summary.steps > 0) {
    // After the loop, outside the timed wall time: one more device wait.
    if (std::isnan(final_loss)) {
      final_loss = read_finite_loss(executable_, "timed step " + std::to_string(summary.steps));
    }
    if (summary.wall_time_s > 0) {
      summary.total_images_per_sec = static_cast<double>(summary.images) / summary.wall_time_s;
    }
    summary.last = series.stats();
    summary.last.loss = final_loss;
    summary.last.elapsed_s = summary.wall_time_s;
    summary.step_times_ms = series.times_ms();
    summary.step_time_ms = summarize(summary.step_times_ms);
  }
  summary.final_loss = final_loss;
  return summary;
}

}  // namespace cnnbench::bench
