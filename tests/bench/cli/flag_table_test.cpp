// The flag table drives parsing, --help, the resolved echo and the fuzz
// dictionary; resolve() fills every device-dependent default and infers the
// model's shapes once.
#include "bench/cli/flag_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/cli/flags.h"
#include "bench/cli/resolve.h"

namespace cnnbench::bench {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

Config parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cnnbench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_flags(static_cast<int>(argv.size()), argv.data()).config;
}

RunSite site(bool gpu, bool in_ecs = false) {
  RunSite s;
  s.devices.kind = gpu ? "gpu" : "cpu";
  if (gpu) {
    for (int i = 0; i < 2; ++i) {
      DeviceEntry d;
      d.ordinal = i;
      d.uuid = "GPU-" + std::to_string(i);
      s.devices.gpus.push_back(d);
    }
  }
  s.environment.in_ecs = in_ecs;
  return s;
}

TEST(FlagTable, EveryFlagIsNamedOnceAndHelpStatesItsDefault) {
  std::set<std::string> names;
  const std::string help = help_text();
  for (const Flag& f : flag_table()) {
    EXPECT_TRUE(names.insert(f.name).second) << "--" << f.name << " twice";
    EXPECT_FALSE(help_line(f).empty()) << f.name;
    EXPECT_THAT(help, HasSubstr("--" + f.name)) << f.name;
    EXPECT_EQ(f.bind.boolean, f.value_name.empty()) << f.name;
  }
  EXPECT_EQ(help_line(flag("batch_size")), "images per device per step; default 64 on GPU, 16 on CPU");
  EXPECT_EQ(help_line(flag("num_gpus")), "GPUs to use; default 0 = every allocated GPU");
  EXPECT_EQ(help_line(flag("precision")), "default fp16 on GPU, fp32 on CPU");
  EXPECT_EQ(help_line(flag("forward_only")), "time inference (forward pass and loss) instead of training");
  EXPECT_THROW(flag("no_such_flag"), std::logic_error);
}

TEST(FlagTable, DefaultsParseWithTheFlagsOwnParser) {
  // Every default is a valid value of its flag: applying it changes nothing more.
  for (const Flag& f : flag_table()) {
    if (f.default_value.gpu.empty()) continue;
    Config c;
    EXPECT_NO_THROW(f.bind.set(f.default_value.on(true), c)) << f.name;
    EXPECT_NO_THROW(f.bind.set(f.default_value.on(false), c)) << f.name;
  }
}

TEST(Resolve, DeviceDefaultsFollowTheDevice) {
  struct Expected {
    const char* model;
    bool gpu, in_ecs;
    int batch, num_batches, num_warmup_batches;
    kernels::Precision precision;
    int image_size;
    LogFormat log_format;
  };
  for (const Expected& e : {Expected{"resnet50", true, false, 64, 100, 10, kernels::Precision::Fp16, 224, LogFormat::Text},
                            Expected{"inception3", false, true, 16, 20, 2, kernels::Precision::Fp32, 299, LogFormat::Both}}) {
    SCOPED_TRACE(e.model);
    const RunPlan p = resolve(parse({std::string("--model=") + e.model}), site(e.gpu, e.in_ecs), 0);
    EXPECT_EQ(p.batch, e.batch);
    EXPECT_EQ(p.num_batches, e.num_batches);
    EXPECT_EQ(p.num_warmup_batches, e.num_warmup_batches);
    EXPECT_EQ(p.precision, e.precision);
    EXPECT_EQ(p.image_size, e.image_size);
    EXPECT_EQ(p.log_format, e.log_format);
  }
  // Given values win on either device.
  const RunPlan given = resolve(parse({"--batch_size=8", "--precision=bf16"}), site(false), 0);
  EXPECT_EQ(given.batch, 8);
  EXPECT_EQ(given.precision, kernels::Precision::Bf16);
}

TEST(Resolve, ShapesAreInferredOnceForTheRun) {
  const RunPlan p = resolve(parse({"--model=trivial", "--image_size=32", "--batch_size=3"}), site(false), 0);
  EXPECT_TRUE(p.graph.shapes_inferred_for(3, 32, 32));
  EXPECT_EQ(p.graph.name(), "trivial");
  EXPECT_EQ(p.graph.node(0).output.n, 3);
}

TEST(Resolve, EchoHoldsResolvedValuesAndNamesTheDefaults) {
  const RunPlan p = resolve(parse({"--model=vgg16", "--num_batches=7", "--momentum=0.5"}), site(true), 0);
  EXPECT_EQ(p.config_echo["model"], "vgg16");
  EXPECT_EQ(p.config_echo["batch_size"], 64);
  EXPECT_EQ(p.config_echo["num_batches"], 7);
  EXPECT_EQ(p.config_echo["precision"], "fp16");
  EXPECT_EQ(p.config_echo["image_size"], 224);
  EXPECT_EQ(p.config_echo["num_gpus"], 2);
  EXPECT_EQ(p.config_echo["log_format"], "text");
  EXPECT_TRUE(p.config_echo["duration_s"].is_null());
  EXPECT_FLOAT_EQ(p.config_echo["optimizer"]["momentum"].get<float>(), 0.5F);
  EXPECT_THAT(p.config_defaults, Contains("batch_size"));
  EXPECT_THAT(p.config_defaults, Contains("optimizer.learning_rate"));
  EXPECT_THAT(p.config_defaults, Not(Contains("model")));
  EXPECT_THAT(p.config_defaults, Not(Contains("num_batches")));
  EXPECT_THAT(p.config_defaults, Not(Contains("optimizer.momentum")));
  // Every echoed key is either given or a default, never both.
  for (const Flag& f : flag_table()) {
    if (f.key.empty()) continue;
    const bool defaulted = std::find(p.config_defaults.begin(), p.config_defaults.end(), f.key) != p.config_defaults.end();
    EXPECT_NE(defaulted, f.name == "model" || f.name == "num_batches" || f.name == "momentum") << f.key;
  }

  const RunPlan d = resolve(parse({"--duration=2.5", "--use_fp16=false"}), site(true), 0);
  EXPECT_TRUE(d.config_echo["num_batches"].is_null());
  EXPECT_DOUBLE_EQ(d.config_echo["duration_s"].get<double>(), 2.5);
  EXPECT_EQ(d.config_echo["precision"], "fp32");
  EXPECT_THAT(d.config_defaults, Not(Contains("precision")));  // given as --use_fp16
}

TEST(FlagTable, FuzzDictionaryIsMadeFromTheTable) {
  const std::string path = std::string(CNNBENCH_SOURCE_DIR) + "/tests/fuzz/flags.dict";
  const std::string generated = fuzz_dictionary();
  for (const Flag& f : flag_table()) EXPECT_THAT(generated, HasSubstr("\"--" + f.name + "=\"\n"));
  EXPECT_THAT(generated, HasSubstr("\"fp16\"\n"));
  EXPECT_THAT(generated, HasSubstr("\"65537\"\n"));  // one past --batch_size's range
  if (const char* write = std::getenv("CNNBENCH_WRITE_FUZZ_DICTIONARY"); write != nullptr && std::string(write) == "1") {
    std::ofstream(path) << generated;
  }
  std::ifstream in(path);
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_EQ(committed.str(), generated)
      << path << " differs from the flag table; rewrite it with CNNBENCH_WRITE_FUZZ_DICTIONARY=1 "
      << "ctest -R FlagTable.FuzzDictionaryIsMadeFromTheTable";
}

}  // namespace
}  // namespace cnnbench::bench
