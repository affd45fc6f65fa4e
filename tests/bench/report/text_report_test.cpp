// The text report against golden text: tf_cnn_benchmarks' shape, byte for byte.
#include "bench/report/text_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench/report/stats.h"

namespace cnnbench::bench {
namespace {

RunInfo four_gpu_info() {
  RunInfo info;
  info.model = "resnet50";
  info.image_size = 224;
  info.num_classes = 1000;
  info.mode = "training";
  info.per_device_batch = 64;
  info.global_batch = 256;
  info.num_batches = 5;
  info.num_warmup_batches = 2;
  info.display_every = 2;
  info.device_kind = "gpu";
  info.device_reason = "--device=auto: 4 GPUs allocated";
  for (const char* uuid : {"GPU-a", "GPU-b", "GPU-c", "GPU-d"}) {
    DeviceEntry d;
    d.name = "NVIDIA H100 80GB HBM3";
    d.uuid = uuid;
    info.devices.push_back(d);
  }
  info.data_format = "NHWC";
  info.precision = "fp16 (dynamic loss scaling, fp32 master weights)";
  info.optimizer = "momentum";
  info.learning_rate = 0.1F;
  info.momentum = 0.9F;
  info.weight_decay = 1e-4F;
  info.variables = "replicated, all-reduce: nccl";
  info.world_size = 4;
  info.param_count = 25557032;
  info.gflops_per_image = 8.2;
  info.backend = "cuDNN 9.1.0, CUDA graph, NHWC fp16";
  info.device_memory_bytes = 3584LL * 1024 * 1024;
  return info;
}

const char* const kGoldenHeader =
    "Model:       resnet50\n"
    "Dataset:     imagenet (synthetic)\n"
    "Mode:        training\n"
    "Batch size:  256 global\n"
    "             64 per device\n"
    "Num batches: 5\n"
    "Num warm-up: 2 (untimed)\n"
    "Devices:     4 x NVIDIA H100 80GB HBM3 [GPU-a, GPU-b, GPU-c, GPU-d]\n"
    "Device:      gpu (--device=auto: 4 GPUs allocated)\n"
    "Data format: NHWC\n"
    "Precision:   fp16 (dynamic loss scaling, fp32 master weights)\n"
    "Optimizer:   momentum (momentum 0.9, learning rate 0.1, weight decay 0.0001)\n"
    "Variables:   replicated, all-reduce: nccl\n"
    "Image size:  224 x 224 pixels\n"
    "Parameters:  25557032 (25.56 million)\n"
    "FLOPs:       8.20 GFLOPs/image (forward; multiply-add = 2 FLOPs)\n"
    "Backend:     cuDNN 9.1.0, CUDA graph, NHWC fp16\n"
    "Memory:      3584.0 MiB per device\n"
    "==========\n"
    "Running warm up\n";

// Step times 100, 80, 100, 125, 100 ms at 256 images per step, lines at steps 1, 2, 4:
//   step 1: 256 / 0.1 s = 2560.0, one speed: +/- 0, jitter 0
//   step 2: 256 / 0.090 s = 2844.4; speeds 2560, 3200: std 320 / √2 = 226.3;
//           MAD 320 × 1.4826 = 474.4
//   step 4: 256 / 0.10125 s = 2528.4; speeds 2560, 3200, 2560, 2048: std 408.55 / 2 =
//           204.3; median 2560, |dev| 0, 640, 0, 512 → MAD 256 × 1.4826 = 379.5
// total: 1280 images / 0.52 s = 2461.54; sorted times 80, 100, 100, 100, 125:
//   p50 100, p90 100 + 0.6 × 25 = 115, p99 100 + 0.96 × 25 = 124, mean 101.
const char* const kGoldenSteps =
    "Done warm up\n"
    "Step\tImg/sec\ttotal_loss\n"
    "1\timages/sec: 2560.0 +/- 0.0 (jitter = 0.0)\t7.021\n"
    "2\timages/sec: 2844.4 +/- 226.3 (jitter = 474.4)\t7.000\n"
    "4\timages/sec: 2528.4 +/- 204.3 (jitter = 379.5)\t6.987\n";

const char* const kGoldenSummary =
    "----------------------------------------------------------------\n"
    "total images/sec: 2461.54\n"
    "----------------------------------------------------------------\n"
    "timed steps: 5 (1280 images in 0.520 s of wall time)\n"
    "step time p50/p90/p99: 100.00 / 115.00 / 124.00 ms\n"
    "step time mean/min/max: 101.00 / 80.00 / 125.00 ms\n"
    "warm-up: 2 steps in 0.300 s (untimed)\n"
    "final loss: 6.950 (mean cross-entropy of the last step)\n";

/// Drives a reporter the way the trainer does, from fixed step times.
RunSummary drive(Reporter& reporter, const RunInfo& info) {
  const std::vector<double> times = {100, 80, 100, 125, 100};
  const std::vector<double> losses = {7.021, 7.0, 7.2, 6.987, 6.95};
  StepSeries series(info.global_batch);
  reporter.header(info);
  for (size_t i = 0; i < times.size(); ++i) {
    series.add(times[i]);
    const int step = static_cast<int>(i) + 1;
    if (step == 1 || step % info.display_every == 0) {
      StepStats s = series.stats();
      s.loss = losses[i];
      reporter.step(info, s);
    }
  }
  RunSummary summary;
  summary.steps = series.count();
  summary.images = 1280;
  summary.wall_time_s = 0.52;
  summary.total_images_per_sec = 1280 / 0.52;
  summary.step_times_ms = series.times_ms();
  summary.step_time_ms = summarize(summary.step_times_ms);
  summary.final_loss = 6.95;
  summary.warmup_time_s = 0.3;
  return summary;
}

TEST(TextReporter, GoldenHeaderStepsAndSummary) {
  std::ostringstream out;
  TextReporter reporter(out);
  const RunInfo info = four_gpu_info();
  const RunSummary summary = drive(reporter, info);
  reporter.summary({.info = info, .summary = summary});
  EXPECT_EQ(out.str(), std::string(kGoldenHeader) + kGoldenSteps + kGoldenSummary);
}

TEST(TextReporter, InterruptedRunSaysSo) {
  std::ostringstream out;
  TextReporter reporter(out);
  const RunInfo info = four_gpu_info();
  RunSummary summary = drive(reporter, info);
  summary.interrupted = true;
  summary.stop_reason = "SIGTERM during the timed loop";
  reporter.summary({.info = info, .summary = summary});
  const std::string text = out.str();
  const std::string last = "interrupted: SIGTERM during the timed loop; the figures above cover "
                           "the 5 timed steps completed\n";
  ASSERT_GE(text.size(), last.size());
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

TEST(TextReporter, GpuSetUpPhasesNotesStepTimingAndCapture) {
  std::ostringstream out;
  TextReporter reporter(out);
  RunInfo info = four_gpu_info();
  info.setup.plans_s = 1.5;
  info.setup.autotune_s = 4.25;
  info.setup.allocation_s = 0.5;
  info.setup.plans_built = 42;
  info.setup.plans_autotuned = 40;
  info.setup.plans_from_cache = 2;
  info.setup.notes = {"plan cache /tmp/p.json was written for GPU 'A10G'; ignored"};
  RunSummary summary = drive(reporter, info);
  summary.step_timing = "CUDA events";
  info.setup.capture_s = 0.125;  // known only after warm-up
  reporter.summary({.info = info, .summary = summary});
  const std::string text = out.str();
  EXPECT_NE(text.find("Memory:      3584.0 MiB per device\n"
                      "Set-up:      plans 1.50 s, autotuning 4.25 s, allocation 0.50 s; 42 cuDNN "
                      "plans (40 autotuned, 2 from the plan cache)\n"
                      "Note:        plan cache /tmp/p.json was written for GPU 'A10G'; ignored\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step time p50/p90/p99: 100.00 / 115.00 / 124.00 ms (CUDA events)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("warm-up: 2 steps in 0.300 s (untimed); CUDA graph capture 0.125 s of it\n"),
            std::string::npos)
      << text;
}

TEST(TextReporter, CpuRunWithoutWarmupAndStopBeforeAnyStep) {
  RunInfo info;
  info.model = "trivial";
  info.mode = "forward-only";
  info.per_device_batch = info.global_batch = 4;
  info.duration_s = 30;
  info.device_kind = "cpu";
  info.device_reason = "--device=cpu";
  DeviceEntry cpu;
  cpu.name = "AMD EPYC 7R13 Processor";
  info.devices.push_back(cpu);
  std::ostringstream out;
  TextReporter reporter(out);
  reporter.header(info);
  RunSummary summary;
  summary.interrupted = true;
  summary.stop_reason = "SIGINT during warm-up";
  reporter.summary({.info = info, .summary = summary});
  const std::string text = out.str();
  EXPECT_NE(text.find("Num batches: as many as run in 30 s (--duration)\n"), std::string::npos);
  EXPECT_NE(text.find("Devices:     AMD EPYC 7R13 Processor\n"), std::string::npos);
  EXPECT_NE(text.find("Device:      cpu (--device=cpu)\n"), std::string::npos);
  EXPECT_EQ(text.find("Running warm up"), std::string::npos);
  EXPECT_NE(text.find("total images/sec: 0.00\n"), std::string::npos);
  EXPECT_EQ(text.find("step time"), std::string::npos);
  EXPECT_NE(text.find("interrupted: SIGINT during warm-up; the figures above cover the 0 timed "
                      "steps completed\n"),
            std::string::npos);
}

}  // namespace
}  // namespace cnnbench::bench
