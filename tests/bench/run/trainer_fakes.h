// Test doubles for the trainer: an executable whose steps take known simulated
// times, a clock they advance, a communicator that counts its calls and a
// reporter that records what it is given.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/report/reporter.h"
#include "bench/run/trainer.h"
#include "kernels/backend.h"
#include "mpi/communicator.h"

namespace cnnbench::bench::testing {

/// Simulated time: only the fakes move it.
class FakeClock final : public Clock {
 public:
  [[nodiscard]] double now_s() const override { return t_; }
  void advance_ms(double ms) { t_ += ms / 1e3; }

 private:
  double t_ = 100.0;
};

/// Each step (train or forward) advances the clock by step_ms(call index, from 0,
/// warm-up included); reading the loss advances it by loss_read_ms.
class FakeExecutable final : public kernels::Executable {
 public:
  explicit FakeExecutable(FakeClock& clock) : clock_(clock) {}

  std::function<double(int)> step_ms = [](int) { return 10.0; };
  std::function<float(int)> loss_at = [](int) { return 6.9F; };  ///< by steps run so far
  std::function<void(int)> on_step;                              ///< after each step
  double loss_read_ms = 0;

  int train_steps = 0, forward_steps = 0, loss_reads = 0, syncs = 0, batches_made = 0;
  int grad_ready_calls = 0;

  kernels::Batch synthetic_batch(uint64_t /*seed*/) override {
    ++batches_made;
    return {images_.data(), labels_.data(), 2};
  }
  kernels::Batch upload_batch(const float* /*images*/, const int32_t* /*labels*/) override {
    return {images_.data(), labels_.data(), 2};
  }
  void train_step(const kernels::Batch& /*batch*/, const kernels::GradReadyFn& ready) override {
    if (ready) {
      ready(0, 3);
      ready(3, 5);
      grad_ready_calls += 2;
    }
    ++train_steps;
    finish_step();
  }
  void forward_only(const kernels::Batch& /*batch*/) override {
    ++forward_steps;
    finish_step();
  }
  float loss() override {
    ++loss_reads;
    clock_.advance_ms(loss_read_ms);
    return loss_at(steps());
  }
  void synchronize() override { ++syncs; }
  kernels::BufferView parameters() override { return {params_.data(), 8, kernels::DType::F32}; }
  kernels::BufferView gradients() override { return {grads_.data(), 8, kernels::DType::F32}; }
  void read_parameters(int64_t offset, int64_t count, float* out) override {
    kernels::check_flat_range("parameters", offset, count, 8);
    std::copy_n(params_.data() + offset, count, out);
  }
  void read_gradients(int64_t offset, int64_t count, float* out) override {
    kernels::check_flat_range("gradients", offset, count, 8);
    std::copy_n(grads_.data() + offset, count, out);
  }
  void write_parameters(int64_t offset, const float* values, int64_t count) override {
    kernels::check_flat_range("parameters", offset, count, 8);
    std::copy_n(values, count, params_.data() + offset);
  }
  kernels::ParamHashes parameter_hashes(const std::vector<models::ParamSlot>& layout) override {
    return kernels::hash_parameters_host(params_.data(), layout);
  }
  [[nodiscard]] kernels::MemoryReport memory() const override { return {}; }
  [[nodiscard]] std::string description() const override { return "fake"; }

  [[nodiscard]] int steps() const { return train_steps + forward_steps; }

  /// With use_step_events: make_step_events() returns FakeStepEvents whose
  /// step n (0-based over timed steps) took device_ms(n), and `event_reads`
  /// gets (step n read, steps enqueued at that moment) for every read.
  bool use_step_events = false;
  std::function<double(int)> device_ms = [](int n) { return 2.0 + n; };
  std::vector<std::pair<int, int>> event_reads;
  std::unique_ptr<kernels::StepEvents> make_step_events() override;

 private:
  void finish_step() {
    clock_.advance_ms(step_ms(steps() - 1));
    if (on_step) on_step(steps());
  }

  FakeClock& clock_;
  std::vector<float> images_ = std::vector<float>(16);
  std::vector<int32_t> labels_ = std::vector<int32_t>(2);
  std::vector<float> params_ = std::vector<float>(8);
  std::vector<float> grads_ = std::vector<float>(8);
};

/// Step events of a FakeExecutable (see FakeExecutable::use_step_events).
class FakeStepEvents final : public kernels::StepEvents {
 public:
  explicit FakeStepEvents(FakeExecutable& exec) : exec_(exec) {}
  void record_start() override {
    if (started_ != stopped_) throw std::logic_error("record_start twice");
    if (pending() == capacity()) throw std::logic_error("ring full");
    ++started_;
  }
  void record_stop() override {
    if (started_ != stopped_ + 1) throw std::logic_error("record_stop without start");
    ++stopped_;
  }
  double elapsed_ms() override {
    if (pending() == 0) throw std::logic_error("nothing to read");
    exec_.event_reads.emplace_back(read_, exec_.steps());
    return exec_.device_ms(read_++);
  }
  [[nodiscard]] int pending() const override { return stopped_ - read_; }
  [[nodiscard]] int capacity() const override { return 4; }

 private:
  FakeExecutable& exec_;
  int started_ = 0, stopped_ = 0, read_ = 0;
};

inline std::unique_ptr<kernels::StepEvents> FakeExecutable::make_step_events() {
  if (!use_step_events) return nullptr;
  return std::make_unique<FakeStepEvents>(*this);
}

/// A communicator of `world_size` workers seen from rank 0, counting barriers.
class FakeCommunicator final : public mpi::Communicator {
 public:
  explicit FakeCommunicator(int world_size = 1) : world_size_(world_size) {}
  [[nodiscard]] std::string name() const override { return "fake"; }
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world_size() const override { return world_size_; }
  [[nodiscard]] int local_rank() const override { return 0; }
  [[nodiscard]] int local_size() const override { return 1; }
  void all_reduce_sum(void* /*data*/, int64_t /*count*/, kernels::DType /*dtype*/,
                      void* /*stream*/) override {
    throw std::logic_error("the trainer reduces nothing itself");
  }
  std::vector<std::string> all_gather(const std::string& value) override {
    return std::vector<std::string>(static_cast<size_t>(world_size_), value);
  }
  void barrier() override { ++barriers; }
  [[noreturn]] void abort(int /*exit_code*/) override { throw std::logic_error("abort"); }

  int barriers = 0;

 private:
  int world_size_;
};

/// Keeps every call.
class RecordingReporter final : public Reporter {
 public:
  void header(const RunInfo& /*info*/) override { ++headers; }
  void step(const RunInfo& /*info*/, const StepStats& stats) override { steps.push_back(stats); }
  void summary(const RunResult& r) override { summaries.push_back(r.summary); }

  int headers = 0;
  std::vector<StepStats> steps;
  std::vector<RunSummary> summaries;
};

}  // namespace cnnbench::bench::testing
