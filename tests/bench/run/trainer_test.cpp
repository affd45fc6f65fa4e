// The trainer on simulated time: which steps are timed, when lines are shown,
// what the totals are, and how a stop, a duration and a NaN end the loop.
#include "bench/run/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <limits>
#include <thread>
#include <utility>
#include <vector>

#include "bench/report/stats.h"
#include "tests/bench/run/trainer_fakes.h"

namespace cnnbench::bench {
namespace {

using testing::FakeClock;
using testing::FakeCommunicator;
using testing::FakeExecutable;
using testing::RecordingReporter;

TrainerSettings settings(int num_batches, int warmup, int display_every = 10) {
  TrainerSettings s;
  s.num_batches = num_batches;
  s.num_warmup_batches = warmup;
  s.display_every = display_every;
  s.global_batch = 64;
  s.seed = 7;
  return s;
}

struct Rig {
  FakeClock clock;
  FakeExecutable exe{clock};
  FakeCommunicator comm;
  RecordingReporter reporter;
  RunInfo info;

  RunSummary run(const TrainerSettings& s, const std::atomic<bool>* stop = nullptr) {
    Trainer trainer(exe, comm, reporter, s);
    trainer.use_clock(clock);
    trainer.use_stop_flag(stop);
    return trainer.run(info);
  }
};

TEST(Trainer, WarmupStepsAreNotTimed) {
  Rig rig;
  // Warm-up steps take 100 ms, timed ones 10 ms: any warm-up step in the figures shows.
  rig.exe.step_ms = [](int call) { return call < 3 ? 100.0 : 10.0; };
  const RunSummary s = rig.run(settings(5, 3));

  EXPECT_EQ(rig.exe.train_steps, 8);
  EXPECT_EQ(rig.exe.batches_made, 1);  // generated once
  ASSERT_EQ(s.steps, 5);
  EXPECT_THAT(s.step_times_ms, ::testing::Each(::testing::DoubleNear(10.0, 1e-9)));
  EXPECT_NEAR(s.warmup_time_s, 0.3, 1e-9);
  EXPECT_NEAR(s.wall_time_s, 0.05, 1e-9);
  EXPECT_EQ(s.images, 5 * 64);
  EXPECT_NEAR(s.total_images_per_sec, 6400.0, 1e-6);  // 320 images / 0.05 s
  EXPECT_FALSE(s.interrupted);
  EXPECT_EQ(rig.comm.barriers, 2);
}

TEST(Trainer, DisplaysFirstStepAndEveryDisplayEvery) {
  Rig rig;
  const RunSummary s = rig.run(settings(25, 0, 10));
  std::vector<int> shown;
  for (const auto& st : rig.reporter.steps) shown.push_back(st.step);
  EXPECT_EQ(shown, (std::vector<int>{1, 10, 20}));
  // The loss is read at the shown steps and once more for the last (25th) step.
  EXPECT_EQ(rig.exe.loss_reads, 4);
  EXPECT_EQ(s.losses.size(), 3U);
  EXPECT_EQ(s.steps, 25);
  EXPECT_FLOAT_EQ(static_cast<float>(s.final_loss), 6.9F);
}

TEST(Trainer, LastShownStepLossIsReused) {
  Rig rig;
  rig.run(settings(20, 0, 10));
  EXPECT_EQ(rig.exe.loss_reads, 3);  // steps 1, 10, 20
}

TEST(Trainer, StepLinesCarryTheStatisticsOfAllTimedStepsSoFar) {
  Rig rig;
  const std::vector<double> times = {10, 20, 10, 40, 10, 10};
  rig.exe.step_ms = [&](int call) { return times[static_cast<size_t>(call)]; };
  rig.run(settings(6, 0, 3));
  ASSERT_EQ(rig.reporter.steps.size(), 3U);  // steps 1, 3, 6
  const StepStats& at3 = rig.reporter.steps[1];
  const Throughput expected = throughput(64, std::span(times).first(3));
  EXPECT_EQ(at3.step, 3);
  // Simulated time is a double: allow for its rounding.
  EXPECT_NEAR(at3.images_per_sec, expected.images_per_sec, 1e-6);
  EXPECT_NEAR(at3.uncertainty, expected.uncertainty, 1e-6);
  EXPECT_NEAR(at3.jitter, expected.jitter, 1e-6);
  EXPECT_NEAR(at3.step_time_ms, 10.0, 1e-9);
  EXPECT_NEAR(at3.elapsed_s, 0.040, 1e-9);
}

TEST(Trainer, TotalIsImagesOverWallTimeIncludingWorkBetweenSteps) {
  Rig rig;
  // Reading the loss costs 1 ms: inside the wall time, outside the step times.
  rig.exe.loss_read_ms = 1.0;
  const RunSummary s = rig.run(settings(20, 0, 10));
  // 20 steps × 10 ms + 3 loss reads × 1 ms = 203 ms; 20 × 64 images.
  EXPECT_NEAR(s.wall_time_s, 0.203, 1e-9);
  EXPECT_NEAR(s.total_images_per_sec, 1280.0 / 0.203, 1e-6);
  EXPECT_NEAR(s.last.images_per_sec, 6400.0, 1e-6);  // from the step times alone
  EXPECT_NEAR(s.step_time_ms.p50, 10.0, 1e-9);
}

TEST(Trainer, HostClockTimesStepsWhenTheExecutableHasNoDeviceEvents) {
  Rig rig;
  const RunSummary s = rig.run(settings(3, 0));
  EXPECT_EQ(s.step_timing, "host clock");
  const auto ten = ::testing::DoubleNear(10.0, 1e-6);  // the fake clock's step time
  EXPECT_THAT(s.step_times_ms, ::testing::ElementsAre(ten, ten, ten));
}

TEST(Trainer, DeviceEventsAreReadOneStepLateExceptWhereALineNeedsThem) {
  Rig rig;
  rig.exe.use_step_events = true;
  rig.exe.device_ms = [](int n) { return 2.0 + n; };  // differs from the host clock's 10 ms
  const RunSummary s = rig.run(settings(25, 2, 10));
  EXPECT_EQ(s.step_timing, "CUDA events");
  ASSERT_EQ(s.step_times_ms.size(), 25U);
  for (int n = 0; n < 25; ++n) EXPECT_DOUBLE_EQ(s.step_times_ms[size_t(n)], 2.0 + n) << n;
  // Every timed step is read exactly once, in order.
  ASSERT_EQ(rig.exe.event_reads.size(), 25U);
  for (int n = 0; n < 25; ++n) {
    const auto [step, enqueued] = rig.exe.event_reads[size_t(n)];
    EXPECT_EQ(step, n);
    const int timed_enqueued = enqueued - 2;  // two warm-up steps before
    const int timed_step = n + 1;             // 1-based
    const bool needed_now = timed_step == 1 || timed_step % 10 == 0 || timed_step == 25;
    if (needed_now) {
      EXPECT_GE(timed_enqueued, timed_step) << "step " << timed_step;
    } else {
      // Read only once the next step was enqueued: the host never waited for
      // the step it had just enqueued.
      EXPECT_EQ(timed_enqueued, timed_step + 1) << "step " << timed_step;
    }
  }
  // The displayed statistics cover exactly the steps so far.
  ASSERT_EQ(rig.reporter.steps.size(), 3U);
  EXPECT_EQ(rig.reporter.steps[1].step, 10);
  EXPECT_DOUBLE_EQ(rig.reporter.steps[1].step_time_ms, 11.0);
}

TEST(Trainer, DeviceEventsOfAnInterruptedLoopAreAllRead) {
  Rig rig;
  rig.exe.use_step_events = true;
  std::atomic<bool> stop{false};
  rig.exe.on_step = [&](int steps) {
    if (steps == 4) stop = true;
  };
  const RunSummary s = rig.run(settings(100, 0, 10), &stop);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.steps, 4);
  EXPECT_THAT(s.step_times_ms, ::testing::ElementsAre(2.0, 3.0, 4.0, 5.0));
}

TEST(Trainer, StopFlagEndsTheLoopAfterTheCurrentStep) {
  Rig rig;
  std::atomic<bool> stop{false};
  // The "signal" arrives during the 7th step overall = timed step 5.
  rig.exe.on_step = [&](int n) {
    if (n == 7) stop = true;
  };
  const RunSummary s = rig.run(settings(100, 2), &stop);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.steps, 5);
  EXPECT_EQ(rig.exe.train_steps, 7);
  EXPECT_NE(s.stop_reason.find("after step 5"), std::string::npos) << s.stop_reason;
  EXPECT_NEAR(s.total_images_per_sec, 6400.0, 1e-6);
  EXPECT_EQ(rig.comm.barriers, 2);
}

TEST(Trainer, StopDuringWarmupSkipsTheTimedLoop) {
  Rig rig;
  std::atomic<bool> stop{false};
  rig.exe.on_step = [&](int n) {
    if (n == 2) stop = true;
  };
  const RunSummary s = rig.run(settings(100, 5), &stop);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(rig.exe.train_steps, 2);
  EXPECT_EQ(s.total_images_per_sec, 0.0);
  EXPECT_TRUE(rig.reporter.steps.empty());
}

TEST(Trainer, StopBeforeTheFirstStepRunsNoStep) {
  Rig rig;
  std::atomic<bool> stop{true};
  const RunSummary s = rig.run(settings(100, 5), &stop);
  EXPECT_TRUE(s.interrupted);
  EXPECT_EQ(rig.exe.train_steps, 0);
  EXPECT_EQ(s.steps, 0);
  EXPECT_NE(s.stop_reason.find("before the first step"), std::string::npos) << s.stop_reason;
}

/// Rank 0 of two, whose peer (rank 1) votes with `peer_vote(vote index)`; the
/// other collectives (all_gather of anything else) echo the value.
class VotingPeer final : public mpi::Communicator {
 public:
  std::function<std::string(int)> peer_vote = [](int) { return "-"; };
  int votes = 0;
  [[nodiscard]] std::string name() const override { return "voting"; }
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world_size() const override { return 2; }
  [[nodiscard]] int local_rank() const override { return 0; }
  [[nodiscard]] int local_size() const override { return 2; }
  void all_reduce_sum(void*, int64_t, kernels::DType, void*) override {}
  std::vector<std::string> all_gather(const std::string& value) override {
    return {value, peer_vote(votes++)};
  }
  void barrier() override {}
  [[noreturn]] void abort(int) override { throw std::logic_error("abort"); }
};

TEST(Trainer, EveryRankStopsAfterTheStepInWhichAnyRankAskedToStop) {
  FakeClock clock;
  FakeExecutable exe(clock);
  VotingPeer comm;
  RecordingReporter reporter;
  // Votes: before warm-up steps 1 and 2, at the end of warm-up, then after each
  // timed step: vote 3 follows timed step 1, vote 6 timed step 4.
  comm.peer_vote = [](int vote) { return vote == 6 ? "S" : "-"; };
  TrainerSettings s = settings(100, 2);
  s.global_batch = 128;
  Trainer trainer(exe, comm, reporter, s);
  trainer.use_clock(clock);
  const RunSummary r = trainer.run(RunInfo{});
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(comm.votes, 7);
  EXPECT_NE(r.stop_reason.find("(asked on rank 1) during the timed loop, after step 4"), std::string::npos)
      << r.stop_reason;
}

TEST(Trainer, APeersStopDuringWarmupStopsThisRankToo) {
  FakeClock clock;
  FakeExecutable exe(clock);
  VotingPeer comm;
  RecordingReporter reporter;
  comm.peer_vote = [](int vote) { return vote == 1 ? "S" : "-"; };
  Trainer trainer(exe, comm, reporter, settings(100, 5));
  trainer.use_clock(clock);
  const RunSummary r = trainer.run(RunInfo{});
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(exe.train_steps, 1);
  EXPECT_NE(r.stop_reason.find("during warm-up, after 1 of 5"), std::string::npos) << r.stop_reason;
}

TEST(Trainer, WithADurationEveryRankEndsWhenAnyRankSawItPass) {
  FakeClock clock;
  FakeExecutable exe(clock);
  VotingPeer comm;
  RecordingReporter reporter;
  // This rank's clock would run to 1 s; the peer's passed the duration at timed step 3.
  comm.peer_vote = [](int vote) { return vote == 3 ? "D" : "-"; };
  TrainerSettings s = settings(0, 0);
  s.duration_s = 1.0;
  Trainer trainer(exe, comm, reporter, s);
  trainer.use_clock(clock);
  const RunSummary r = trainer.run(RunInfo{});
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.steps, 3);
}

TEST(Trainer, HostTimeInTheGradientHookIsMeasuredOverTimedStepsOnly) {
  FakeClock clock;
  FakeExecutable exe(clock);
  FakeCommunicator comm(2);
  RecordingReporter reporter;
  TrainerSettings s = settings(3, 2);
  s.global_batch = 128;
  Trainer trainer(exe, comm, reporter, s);
  trainer.use_clock(clock);
  // Each call blocks 1.5 ms, as an MPI all-reduce waiting for a slower rank.
  trainer.use_grad_ready([&clock](int64_t, int64_t) { clock.advance_ms(1.5); });
  int before = 0, after = 0, enqueued = 0;
  trainer.use_timed_loop_hooks([&] { ++before; }, [&] { ++after; });
  trainer.use_after_enqueue([&] { ++enqueued; });
  const RunSummary r = trainer.run(RunInfo{});
  // 3 timed steps × 2 ranges × 1.5 ms; the 2 warm-up steps are not counted.
  EXPECT_NEAR(r.grad_hook_time_s, 0.009, 1e-12);
  EXPECT_EQ(before, 1);
  EXPECT_EQ(after, 1);
  EXPECT_EQ(enqueued, 5);
}

TEST(Trainer, DurationRunsUntilThatTimeHasPassed) {
  Rig rig;
  TrainerSettings s = settings(0, 1, 4);
  s.duration_s = 0.095;
  const RunSummary r = rig.run(s);
  // 10 ms steps: after step 9, 90 ms < 95 ms; after step 10, 100 ms ≥ 95 ms.
  EXPECT_EQ(r.steps, 10);
  EXPECT_NEAR(r.wall_time_s, 0.100, 1e-9);
  std::vector<int> shown;
  for (const auto& st : rig.reporter.steps) shown.push_back(st.step);
  EXPECT_EQ(shown, (std::vector<int>{1, 4, 8}));
}

TEST(Trainer, DurationStopsInTimeOnTheRealClock) {
  FakeClock unused;
  FakeExecutable exe(unused);
  exe.on_step = [](int) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); };
  FakeCommunicator comm;
  RecordingReporter reporter;
  TrainerSettings s = settings(0, 0, 1000);
  s.duration_s = 0.2;
  Trainer trainer(exe, comm, reporter, s);
  const auto t0 = std::chrono::steady_clock::now();
  const RunSummary r = trainer.run(RunInfo{});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(r.wall_time_s, 0.2);
  EXPECT_LT(took, 0.6);
  EXPECT_GT(r.steps, 10);
  EXPECT_GT(r.step_time_ms.min, 1.9);  // host timer around a 2 ms sleep
}

TEST(Trainer, NonFiniteLossIsAnErrorNamingTheStep) {
  Rig rig;
  rig.exe.loss_at = [](int steps_run) {
    return steps_run >= 12 ? std::numeric_limits<float>::quiet_NaN() : 6.9F;
  };
  // Warm-up 2, then timed steps; the loss is read at timed steps 1, 5, 10: step 10
  // is the 12th step run.
  try {
    rig.run(settings(20, 2, 5));
    FAIL() << "expected NonFiniteLossError";
  } catch (const NonFiniteLossError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at timed step 10"), std::string::npos) << e.what();
  }
}

TEST(Trainer, ForwardOnlyRunsForwardSteps) {
  Rig rig;
  TrainerSettings s = settings(4, 1);
  s.forward_only = true;
  rig.run(s);
  EXPECT_EQ(rig.exe.forward_steps, 5);
  EXPECT_EQ(rig.exe.train_steps, 0);
}

TEST(Trainer, GradReadyHookReachesEveryTrainStep) {
  FakeClock clock;
  FakeExecutable exe(clock);
  FakeCommunicator comm(2);
  RecordingReporter reporter;
  TrainerSettings s = settings(2, 1);
  s.global_batch = 128;  // 2 ranks × 64
  Trainer trainer(exe, comm, reporter, s);
  trainer.use_clock(clock);
  std::vector<std::pair<int64_t, int64_t>> ranges;
  trainer.use_grad_ready([&](int64_t offset, int64_t count) { ranges.emplace_back(offset, count); });
  const RunSummary r = trainer.run(RunInfo{});
  ASSERT_EQ(ranges.size(), 6U);  // 3 steps × 2 ranges
  EXPECT_EQ(ranges[1], (std::pair<int64_t, int64_t>{3, 5}));
  EXPECT_EQ(r.images, 2 * 128);
}

TEST(Trainer, NoHookByDefault) {
  Rig rig;
  rig.run(settings(2, 0));
  EXPECT_EQ(rig.exe.grad_ready_calls, 0);
}

TEST(Trainer, RejectsImpossibleSettings) {
  Rig rig;
  EXPECT_THROW(Trainer(rig.exe, rig.comm, rig.reporter, settings(0, 0)), std::invalid_argument);
  EXPECT_THROW(Trainer(rig.exe, rig.comm, rig.reporter, settings(5, 0, 0)), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench::bench
