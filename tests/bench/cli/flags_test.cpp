// Flags: what parses into which Config, and every invalid input rejected by
// run_program() with exit status 2 and a message naming the flag and the value.
#include "bench/cli/flags.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench/cli/program.h"

namespace cnnbench::bench {
namespace {

FlagsResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cnnbench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_flags(static_cast<int>(argv.size()), argv.data());
}

struct RunResult {
  int status;
  std::string out, err;
};

RunResult run_args(std::vector<std::string> args) {
  args.insert(args.begin(), "cnnbench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int status = run_program(static_cast<int>(argv.size()), argv.data(), out, err);
  return {status, out.str(), err.str()};
}

TEST(Flags, DefaultsLeaveDeviceDependentValuesUnset) {
  const Config c = parse({}).config;
  EXPECT_EQ(c.model, "resnet50");
  EXPECT_FALSE(c.batch_size);
  EXPECT_FALSE(c.num_batches);
  EXPECT_FALSE(c.num_warmup_batches);
  EXPECT_FALSE(c.precision);
  EXPECT_EQ(c.data_format, kernels::DataFormat::NHWC);
  EXPECT_FALSE(c.image_size);
  EXPECT_FALSE(c.duration_s);
  EXPECT_EQ(c.display_every, 10);
  EXPECT_EQ(c.device, DeviceChoice::Auto);
  EXPECT_TRUE(c.cuda_graph);
  EXPECT_FALSE(c.forward_only);
  EXPECT_FALSE(c.cudnn_runtime_compiled_engines);
  EXPECT_TRUE(c.plan_cache.empty());
}

TEST(Flags, PlanCacheAndRuntimeCompiledEngines) {
  const Config c =
      parse({"--plan_cache=/tmp/cnnbench-plans.json", "--cudnn_runtime_compiled_engines"}).config;
  EXPECT_EQ(c.plan_cache, "/tmp/cnnbench-plans.json");
  EXPECT_TRUE(c.cudnn_runtime_compiled_engines);
  const Config d = parse({"--check_every=50", "--verify"}).config;
  EXPECT_EQ(d.check_every, 50);
  EXPECT_TRUE(d.verify);
}

TEST(Flags, BothSpellingsOfValuesAndBooleans) {
  const Config c = parse({"--model", "vgg16", "--batch_size=32", "--num_batches", "7",
                          "--num_warmup_batches=0", "--forward_only", "--cuda_graph=false",
                          "--data_format", "NCHW", "--device=cpu", "--learning_rate=0.1",
                          "--momentum=0", "--weight_decay=5e-4", "--seed=18446744073709551615",
                          "--image_size=64", "--num_classes=10", "--log_format=both"})
                       .config;
  EXPECT_EQ(c.model, "vgg16");
  EXPECT_EQ(c.batch_size, 32);
  EXPECT_EQ(c.num_batches, 7);
  EXPECT_EQ(c.num_warmup_batches, 0);
  EXPECT_TRUE(c.forward_only);
  EXPECT_FALSE(c.cuda_graph);
  EXPECT_EQ(c.data_format, kernels::DataFormat::NCHW);
  EXPECT_EQ(c.device, DeviceChoice::Cpu);
  EXPECT_FLOAT_EQ(c.optimizer.learning_rate, 0.1F);
  EXPECT_FLOAT_EQ(c.optimizer.momentum, 0.0F);
  EXPECT_FLOAT_EQ(c.optimizer.weight_decay, 5e-4F);
  EXPECT_EQ(c.seed, 18446744073709551615ULL);
  EXPECT_EQ(c.image_size, 64);
  EXPECT_EQ(c.num_classes, 10);
  EXPECT_EQ(c.log_format, LogFormat::Both);
}

TEST(Flags, LastValueWinsAndUseFp16IsAnAlias) {
  EXPECT_EQ(parse({"--batch_size=8", "--batch_size=16"}).config.batch_size, 16);
  EXPECT_FALSE(parse({"--forward_only", "--forward_only=false"}).config.forward_only);
  EXPECT_EQ(parse({"--use_fp16"}).config.precision, kernels::Precision::Fp16);
  EXPECT_EQ(parse({"--use_fp16", "--precision=fp16"}).config.precision, kernels::Precision::Fp16);
  EXPECT_EQ(parse({"--use_fp16=false"}).config.precision, kernels::Precision::Fp32);
  EXPECT_EQ(parse({"--use_fp16=false", "--precision=bf16"}).config.precision,
            kernels::Precision::Bf16);
  EXPECT_EQ(parse({"--duration=2.5"}).config.duration_s, 2.5);
}

TEST(Flags, DistributionTelemetryAndScalingFlags) {
  const Config d = parse({}).config;
  EXPECT_DOUBLE_EQ(d.allreduce_bucket_mb, 25.0);
  EXPECT_EQ(d.telemetry_interval_ms, 1000);
  EXPECT_TRUE(d.scaling_sweep.empty());
  EXPECT_FALSE(d.baseline_images_per_sec);

  const Config c = parse({"--allreduce_bucket_mb=0.5", "--telemetry_interval_ms=0", "--scaling_sweep=1,2,4,8",
                          "--baseline_images_per_sec=2900.5"})
                       .config;
  EXPECT_DOUBLE_EQ(c.allreduce_bucket_mb, 0.5);
  EXPECT_EQ(c.telemetry_interval_ms, 0);
  EXPECT_EQ(c.scaling_sweep, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_DOUBLE_EQ(*c.baseline_images_per_sec, 2900.5);
  EXPECT_EQ(parse({"--telemetry_interval_ms=50"}).config.telemetry_interval_ms, 50);
}

TEST(Flags, HelpAndVersion) {
  EXPECT_EQ(parse({"--help"}).action, FlagsAction::Help);
  EXPECT_NE(parse({"--help"}).text.find("--batch_size"), std::string::npos);
  const FlagsResult v = parse({"--version"});
  EXPECT_EQ(v.action, FlagsAction::Version);
  EXPECT_EQ(v.text, "cnnbench " CNNBENCH_TEST_VERSION "\n");

  const RunResult r = run_args({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, v.text);
  EXPECT_EQ(run_args({"--help"}).status, 0);
}

struct BadFlag {
  std::vector<std::string> args;
  std::vector<std::string> mentions;  ///< each must appear in the message
};

TEST(Flags, EveryInvalidInputIsAUsageErrorNamingFlagAndValue) {
  const std::vector<BadFlag> cases = {
      {{"--model=resnet5"}, {"--model=resnet5", "resnet50", "vgg16", "trivial"}},
      {{"--batch_size=0"}, {"--batch_size=0", "1 to 65536"}},
      {{"--batch_size=65537"}, {"--batch_size=65537", "1 to 65536"}},
      {{"--batch_size=-3"}, {"--batch_size=-3"}},
      {{"--batch_size=abc"}, {"--batch_size=abc", "integer"}},
      {{"--batch_size=1.5"}, {"--batch_size=1.5", "integer"}},
      {{"--batch_size=99999999999999999999"}, {"--batch_size=99999999999999999999"}},
      {{"--batch_size"}, {"--batch_size"}},
      {{"--num_batches=0"}, {"--num_batches=0", "at least 1"}},
      {{"--num_warmup_batches=-1"}, {"--num_warmup_batches=-1", "at least 0"}},
      {{"--display_every=0"}, {"--display_every=0", "at least 1"}},
      {{"--model=vgg16", "--image_size=16"}, {"--image_size=16", "vgg16", "valid"}},
      {{"--image_size=1025"}, {"--image_size=1025", "1024"}},
      {{"--image_size=0"}, {"--image_size=0"}},
      {{"--num_classes=1"}, {"--num_classes=1", "2 to"}},
      {{"--learning_rate=0"}, {"--learning_rate=0", "greater than 0"}},
      {{"--learning_rate=-0.1"}, {"--learning_rate=-0.1"}},
      {{"--learning_rate=nan"}, {"--learning_rate=nan", "finite"}},
      {{"--learning_rate=inf"}, {"--learning_rate=inf", "finite"}},
      {{"--momentum=1"}, {"--momentum=1", "[0, 1)"}},
      {{"--momentum=-0.5"}, {"--momentum=-0.5", "[0, 1)"}},
      {{"--weight_decay=-1e-4"}, {"--weight_decay=-1e-4", "at least 0"}},
      {{"--duration=0"}, {"--duration=0", "greater than 0"}},
      {{"--duration=-5"}, {"--duration=-5"}},
      {{"--duration=ten"}, {"--duration=ten"}},
      {{"--duration=10", "--num_batches=5"}, {"--duration=10", "--num_batches=5", "not both"}},
      {{"--use_fp16", "--precision=bf16"}, {"--use_fp16", "--precision=bf16"}},
      {{"--use_fp16=false", "--precision=fp16"}, {"--use_fp16=false", "--precision=fp16"}},
      {{"--precision=fp8"}, {"--precision=fp8", "fp32, tf32, fp16, bf16"}},
      {{"--data_format=NCWH"}, {"--data_format=NCWH", "NHWC, NCHW"}},
      {{"--device=tpu"}, {"--device=tpu", "auto, cpu, gpu"}},
      {{"--log_format=xml"}, {"--log_format=xml", "text, emf, both"}},
      {{"--list_models", "--format=yaml"}, {"--format=yaml", "table, json"}},
      {{"--format=json"}, {"--format=json", "--list_models"}},
      {{"--forward_only=maybe"}, {"--forward_only=maybe", "true or false"}},
      {{"--num_gpus=-1"}, {"--num_gpus=-1"}},
      {{"--device=cpu", "--num_gpus=2"}, {"--num_gpus=2", "--device=cpu"}},
      {{"--num_threads=-1"}, {"--num_threads=-1"}},
      {{"--seed=-1"}, {"--seed=-1"}},
      {{"--metrics_namespace=AWS/EC2"}, {"--metrics_namespace=AWS/EC2", "AWS/"}},
      {{"--metrics_namespace="}, {"--metrics_namespace"}},
      {{"--result_json=/no/such/dir/r.json"}, {"--result_json=/no/such/dir/r.json", "/no/such/dir"}},
      {{"--result_json=/tmp"}, {"--result_json=/tmp", "is a directory"}},
      {{"--plan_cache=/no/such/dir/plans.json"}, {"--plan_cache=/no/such/dir/plans.json", "/no/such/dir"}},
      {{"--plan_cache=/tmp"}, {"--plan_cache=/tmp", "is a directory"}},
      {{"--cudnn_runtime_compiled_engines=sometimes"}, {"--cudnn_runtime_compiled_engines=sometimes", "true or false"}},
      {{"--check_every=-1"}, {"--check_every=-1"}},
      {{"--check_every=often"}, {"--check_every=often"}},
      {{"--verify=maybe"}, {"--verify=maybe", "true or false"}},
      {{"--verify", "--device=cpu"}, {"--verify=true", "--device=cpu"}},
      {{"--allreduce_bucket_mb=0"}, {"--allreduce_bucket_mb=0", "greater than 0 and at most 4096"}},
      {{"--allreduce_bucket_mb=5000"}, {"--allreduce_bucket_mb=5000", "at most 4096"}},
      {{"--allreduce_bucket_mb=big"}, {"--allreduce_bucket_mb=big", "MiB"}},
      {{"--telemetry_interval_ms=10"}, {"--telemetry_interval_ms=10", "0 (GPU telemetry off) or 50 to 60000"}},
      {{"--telemetry_interval_ms=60001"}, {"--telemetry_interval_ms=60001", "60000"}},
      {{"--telemetry_interval_ms=-1"}, {"--telemetry_interval_ms=-1", "50 to 60000"}},
      {{"--telemetry_interval_ms=1s"}, {"--telemetry_interval_ms=1s"}},
      {{"--scaling_sweep=2,1"}, {"--scaling_sweep=2,1", "increasing, e.g. 1,2,4,8"}},
      {{"--scaling_sweep=1,1"}, {"--scaling_sweep=1,1", "increasing"}},
      {{"--scaling_sweep=0"}, {"--scaling_sweep=0", "from 1 to 1024"}},
      {{"--scaling_sweep=1,,2"}, {"--scaling_sweep=1,,2"}},
      {{"--scaling_sweep="}, {"--scaling_sweep"}},
      {{"--scaling_sweep=1,2,"}, {"--scaling_sweep=1,2,"}},
      {{"--device=cpu", "--scaling_sweep=1,2"}, {"--scaling_sweep=1,2", "--device=cpu"}},
      {{"--num_gpus=2", "--scaling_sweep=1,2"}, {"--scaling_sweep=1,2", "--num_gpus=2", "not both"}},
      {{"--baseline_images_per_sec=0"}, {"--baseline_images_per_sec=0", "greater than 0"}},
      {{"--baseline_images_per_sec=fast"}, {"--baseline_images_per_sec=fast"}},
      {{"--no_such_flag=1"}, {"--no_such_flag"}},
      {{"surplus"}, {"surplus"}},
  };
  for (const auto& c : cases) {
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    SCOPED_TRACE(cmd);
    const RunResult r = run_args(c.args);
    EXPECT_EQ(r.status, kExitUsage);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind("cnnbench: error: ", 0), 0U) << r.err;
    EXPECT_NE(r.err.find("\nsee cnnbench --help\n"), std::string::npos) << r.err;
    for (const auto& m : c.mentions) EXPECT_NE(r.err.find(m), std::string::npos) << m << " in " << r.err;
  }
}

}  // namespace
}  // namespace cnnbench::bench
