#include "bench/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include "bench/stats.h"

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

double HostStepTimer::stop_ms() {
  executable_.synchronize();
  // A step shorter than the clock's resolution would read as 0 ms, which no
  // rate can be derived from; 1 ns stands for "below resolution".
  return std::max((clock_.now_s() - start_s_) * 1e3, 1e-6);
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

void Trainer::enqueue_step(const kernels::Batch& batch) {
  if (settings_.forward_only) {
    executable_.forward_only(batch);
  } else {
    executable_.train_step(batch, on_grad_ready_);
  }
}

RunSummary Trainer::run(const RunInfo& info) {
  const double run_start_s = clock_->now_s();
  const double program_start_s =
      settings_.program_start_s >= 0 ? settings_.program_start_s : run_start_s;
  if (!timer_) timer_ = std::make_unique<HostStepTimer>(executable_, *clock_);

  // Generated once, on the device: data movement is not what is measured.
  const kernels::Batch batch = executable_.synthetic_batch(settings_.seed);
  RunSummary summary;

  const double warmup_start_s = clock_->now_s();
  int warmup_done = 0;
  while (warmup_done < settings_.num_warmup_batches) {
    enqueue_step(batch);
    ++warmup_done;
    if (warmup_done < settings_.num_warmup_batches && stop_requested()) {
      summary.interrupted = true;
      summary.stop_reason = "stop requested during warm-up, after " + std::to_string(warmup_done) +
                            " of " + std::to_string(settings_.num_warmup_batches) + " steps";
      break;
    }
  }
  executable_.synchronize();
  summary.warmup_time_s = clock_->now_s() - warmup_start_s;
  if (warmup_done > 0) {
    read_finite_loss(executable_, "warm-up step " + std::to_string(warmup_done));
  }
  if (!summary.interrupted && stop_requested()) {
    summary.interrupted = true;
    summary.stop_reason = "stop requested at the end of warm-up";
  }

  StepSeries series(static_cast<double>(settings_.global_batch));
  double final_loss = std::numeric_limits<double>::quiet_NaN();
  if (!summary.interrupted) {
    comm_.barrier();
    const double loop_start_s = clock_->now_s();
    summary.setup_time_s = loop_start_s - program_start_s;
    for (int step = 1;; ++step) {
      timer_->start();
      enqueue_step(batch);
      series.add(timer_->stop_ms());
      // tf_cnn_benchmarks displays the first timed step and every display_every-th.
      if (step == 1 || step % settings_.display_every == 0) {
        StepStats stats = series.stats();
        stats.loss = read_finite_loss(executable_, "timed step " + std::to_string(step));
        stats.elapsed_s = clock_->now_s() - loop_start_s;
        summary.losses.push_back(stats.loss);
        final_loss = stats.loss;
        reporter_.step(info, stats);
      } else {
        final_loss = std::numeric_limits<double>::quiet_NaN();
      }
      if (stop_requested()) {
        summary.interrupted = true;
        summary.stop_reason = "stop requested during the timed loop, after step " +
                              std::to_string(step);
        break;
      }
      const bool done = settings_.duration_s > 0
                            ? clock_->now_s() - loop_start_s >= settings_.duration_s
                            : step >= settings_.num_batches;
      if (done) break;
    }
    executable_.synchronize();
    comm_.barrier();
    summary.wall_time_s = clock_->now_s() - loop_start_s;
  }

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
