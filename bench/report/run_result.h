// What a run reports: the header block, the step lines, and at the end one
// RunResult, assembled once on rank 0, that the text report (text_report.h),
// the CloudWatch EMF lines (emf_report.h) and the result JSON (result_json.h)
// all write from (Reporter, reporter.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/discovery/device_list.h"
#include "bench/telemetry/telemetry_report.h"
#include "kernels/backend.h"

namespace cnnbench::bench {

/// The header block: what is being run, printed once before the first step.
struct RunInfo {
  std::string model;
  int image_size = 0;               ///< square side, pixels
  int num_classes = 0;
  std::string mode;                 ///< "training" or "forward-only"
  int per_device_batch = 0;
  int global_batch = 0;             ///< per_device_batch × number of devices (all ranks)
  int num_batches = 0;              ///< timed steps; 0 when duration_s is used
  double duration_s = 0;            ///< --duration, 0 when num_batches is used
  int num_warmup_batches = 0;
  int display_every = 0;
  std::string device_kind;          ///< "cpu" or "gpu"
  std::string device_reason;        ///< why (e.g. "--device=auto: no GPU allocated or visible")
  std::vector<DeviceEntry> devices; ///< every device of every rank, rank order
  std::string data_format;          ///< "NHWC" / "NCHW"
  std::string precision;            ///< "fp32", "fp16 (dynamic loss scaling)", ...
  std::string optimizer;            ///< "momentum"
  float learning_rate = 0, momentum = 0, weight_decay = 0;
  std::string variables;            ///< "replicated, all-reduce: nccl" or "local"
  int world_size = 1;
  int64_t param_count = 0;
  double gflops_per_image = 0;      ///< forward, multiply-add = 2 FLOPs
  std::string backend;              ///< Executable::description()
  /// Executable::setup_report(); capture_s is refreshed after the run (the
  /// step is captured during warm-up).
  kernels::SetupReport setup;
  /// --verify's lines (one per GPU and precision), empty without --verify.
  std::vector<std::string> verify_lines;
  bool verify_passed = true;
  int64_t device_memory_bytes = 0;  ///< bytes the executable allocated (per device)
  uint64_t seed = 0;
};

/// One displayed step line (tf_cnn_benchmarks' formulas, over the timed steps so far).
struct StepStats {
  int step = 0;                  ///< 1-based index of the timed step
  double images_per_sec = 0;     ///< global batch / mean step time since warm-up
  double uncertainty = 0;        ///< std-dev of per-step images/sec / √(steps)
  double jitter = 0;             ///< 1.4826 × median absolute deviation of per-step images/sec
  double step_time_ms = 0;       ///< this step's time
  double loss = 0;               ///< mean cross-entropy of this step (NaN when not read)
  double elapsed_s = 0;          ///< since the timed loop started
};

/// Summary statistics of a series of step times.
struct Percentiles {
  double mean = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

/// The replica check's outcome as reported (run/replica_check.h).
struct ReplicaReport {
  int replicas = 0;         ///< workers compared (GPUs, or CPU ranks)
  int checks = 0;           ///< checks run (every --check_every steps and at the end)
  int after_step = 0;       ///< timed steps done at the last check
  bool identical = true;
  std::string hash;         ///< the majority's parameter hash, "0x..."
  std::vector<std::string> lines;  ///< the report lines (text output)
  double seconds = 0;       ///< wall time of all checks on rank 0 (outside the timed steps)
};

/// The end of a run: the totals and everything measured.
struct RunSummary {
  int steps = 0;                       ///< timed steps completed
  int64_t images = 0;                  ///< images processed by all ranks in the timed steps
  double wall_time_s = 0;              ///< wall time of the timed loop
  double total_images_per_sec = 0;     ///< images / wall_time_s (all ranks)
  StepStats last;                      ///< the statistics over all timed steps
  Percentiles step_time_ms;            ///< of per-step times
  std::vector<double> step_times_ms;   ///< every timed step, in order
  std::string step_timing;             ///< how steps were timed: "CUDA events" or "host clock"
  std::vector<double> losses;          ///< loss at each displayed step (NaN where unread)
  double final_loss = 0;
  bool interrupted = false;            ///< stopped by a signal before the end
  std::string stop_reason;             ///< e.g. "SIGTERM during the timed loop"
  double warmup_time_s = 0;
  double setup_time_s = 0;             ///< start of the program to the first timed step
  /// Host time this rank spent inside the gradient all-reduce hook during the timed
  /// steps: on CPU ranks the blocking MPI all-reduce (waiting for slower ranks
  /// included); on GPUs only the enqueueing (the all-reduce runs on its own stream).
  double grad_hook_time_s = 0;
  /// The replica check (training runs); absent for forward-only runs.
  std::optional<ReplicaReport> replicas;
};

/// One rank's figures, as rank 0 gathered them.
struct RankFigures {
  int rank = 0;
  std::string host;
  std::vector<std::string> devices;  ///< UUIDs of its GPUs, or {"cpu"}
  int ordinal = -1;                  ///< CUDA ordinal of its GPU; -1 on the CPU
  int steps = 0;                     ///< timed steps it completed
  /// Its own images over its own time stepping (rank_figures.h: own_figures).
  double images_per_sec = 0;
  Percentiles step_time_ms;          ///< of its own per-step times
};

/// One run of a scaling sweep (--scaling_sweep).
struct SweepPoint {
  int gpus = 0;
  double images_per_sec = 0;  ///< total over the GPUs
  bool interrupted = false;
};

/// Everything a run produced, assembled once on rank 0 after its last step:
/// what every report writes at the end.
struct RunResult {
  RunInfo info{};
  RunSummary summary{};
  /// Every rank's own figures in rank order; empty: the result JSON derives rank
  /// 0's from the summary, and the text report prints no per-rank table.
  std::vector<RankFigures> ranks{};
  /// GPU telemetry over the timed loop, or why there is none; unset = not collected.
  std::optional<telemetry::TelemetryReport> telemetry{};
  /// Lines the text report prints after the telemetry (GPUs of other hosts not sampled).
  std::vector<std::string> telemetry_notes{};
  /// --baseline_images_per_sec: a one-GPU figure to compute the scaling
  /// efficiency against; 0 = none.
  double baseline_images_per_sec = 0;
  /// --scaling_sweep: its runs so far, this one last; empty outside a sweep.
  std::vector<SweepPoint> sweep{};
};

}  // namespace cnnbench::bench
