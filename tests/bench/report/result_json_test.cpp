// --result_json: the document of a fake run validates against
// bench/report/schema/result.schema.json (with the jsonschema package of
// CNNBENCH_TEST_PYTHON), is written atomically, and write errors are clear.
#include "bench/report/result_json.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/cli/flags.h"
#include "bench/cli/resolve.h"

#ifndef CNNBENCH_TEST_PYTHON
#define CNNBENCH_TEST_PYTHON "python3"
#endif

namespace cnnbench::bench {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

class ResultJson : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("cnnbench_result_json_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static ResultJsonOptions options(const std::string& path) {
    ResultJsonOptions o;
    o.path = path;
    o.environment.host_name = "ip-10-0-1-23";
    o.environment.cpu_model = "Intel(R) Xeon(R) Platinum 8488C";
    o.environment.logical_cores = 192;
    o.environment.usable_cores = 192;
    o.environment.in_ecs = true;
    o.environment.ecs_metadata_uri = "http://169.254.170.2/v4/abc";
    o.environment.nvidia_visible_devices = "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab";
    o.environment.versions.cnnbench = "0.1.0";
    o.environment.versions.cuda_driver = "13.0";
    o.environment.versions.cudnn = "9.19.0";
    o.device_source = "NVIDIA_VISIBLE_DEVICES=GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab: 1 GPU matched by UUID";
    // The flags as the program echoes them: parsed, then resolved for one GPU.
    const std::vector<std::string> args = {"cnnbench", "--model=resnet50", "--num_batches=30", "--precision=fp16",
                                           "--log_format=both", "--result_json=result.json"};
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    RunSite site;
    site.devices.kind = "gpu";
    site.devices.gpus.push_back(info().devices.front());
    site.environment = o.environment;
    const RunPlan plan = resolve(parse_flags(static_cast<int>(argv.size()), argv.data()).config, site, 0);
    o.config = plan.config_echo;
    o.config_defaults = plan.config_defaults;
    int64_t now = 1'790'000'000'000;
    o.clock_ms = [now]() mutable { return now += 1500; };
    return o;
  }

  static RunInfo info() {
    RunInfo i;
    i.model = "resnet50";
    i.image_size = 224;
    i.num_classes = 1000;
    i.mode = "training";
    i.per_device_batch = 256;
    i.global_batch = 256;
    i.num_batches = 30;
    i.num_warmup_batches = 10;
    i.display_every = 10;
    i.device_kind = "gpu";
    i.device_reason = "--device=auto: 1 GPU allocated";
    i.devices.push_back(DeviceEntry{.ordinal = 0,
                                    .name = "NVIDIA H100 80GB HBM3",
                                    .uuid = "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab",
                                    .pci_bus_id = "00000000:19:00.0",
                                    .host_id = "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab",
                                    .memory_bytes = int64_t{80} << 30});
    i.data_format = "NHWC";
    i.precision = "fp16 (dynamic loss scaling)";
    i.optimizer = "momentum";
    i.learning_rate = 0.1F;
    i.momentum = 0.9F;
    i.weight_decay = 1e-4F;
    i.variables = "local";
    i.param_count = 25557032;
    i.gflops_per_image = 8.18;
    i.backend = "cuDNN 9.19.0, NHWC fp16, CUDA graph";
    i.seed = 1234;
    return i;
  }

  static std::vector<StepStats> steps() {
    return {{.step = 10, .images_per_sec = 2911.3, .uncertainty = 0, .jitter = 0, .step_time_ms = 88.0, .loss = 7.02, .elapsed_s = 0.9},
            {.step = 20, .images_per_sec = 2904.8, .uncertainty = 3.1, .jitter = 5.2, .step_time_ms = 88.3, .loss = kNaN, .elapsed_s = 1.8},
            {.step = 30, .images_per_sec = 2906.0, .uncertainty = 2.2, .jitter = 4.1, .step_time_ms = 88.1, .loss = 6.95, .elapsed_s = 2.6}};
  }

  static RunSummary summary() {
    RunSummary s;
    s.steps = 30;
    s.images = 30 * 256;
    s.wall_time_s = 2.64;
    s.total_images_per_sec = 2909.1;
    s.last = steps().back();
    s.step_time_ms = {.mean = 88.1, .min = 87.7, .p50 = 88.1, .p90 = 88.4, .p99 = 89.0, .max = 89.3};
    for (int i = 0; i < 30; ++i) s.step_times_ms.push_back(88.0 + 0.01 * i);
    s.losses = {7.02, kNaN, 6.95};
    s.final_loss = 6.95;
    s.interrupted = true;
    s.stop_reason = "SIGTERM during the timed loop, after step 30";
    s.warmup_time_s = 1.2;
    s.setup_time_s = 4.5;
    return s;
  }

  // Runs the fake run through a reporter writing to `path`.
  static std::string run(const std::string& path) {
    ResultJsonReporter reporter(options(path));
    const RunInfo i = info();
    reporter.header(i);
    for (const auto& s : steps()) reporter.step(i, s);
    reporter.summary({.info = i, .summary = summary()});
    EXPECT_EQ(reporter.written(), reporter.error().empty());
    return reporter.error();
  }

  // Runs validate_json_schema.py on `documents`; returns its exit status (77 =
  // jsonschema missing) and its output in `output`.
  static int validate(const std::vector<fs::path>& documents, std::string& output) {
    std::string command = std::string("'") + CNNBENCH_TEST_PYTHON + "' '" + CNNBENCH_SOURCE_DIR +
                          "/tests/bench/report/validate_json_schema.py' --ref '" + CNNBENCH_SOURCE_DIR +
                          "/bench/telemetry/telemetry.schema.json' '" + CNNBENCH_SOURCE_DIR +
                          "/bench/report/schema/result.schema.json'";
    for (const auto& d : documents) command += " '" + d.string() + "'";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    output.clear();
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::vector<std::string> files() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
    return names;
  }

  fs::path dir_;
};

json read_json(const fs::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

TEST_F(ResultJson, DocumentMatchesTheSchema) {
  const fs::path path = dir_ / "result.json";
  ASSERT_EQ(run(path.string()), "");
  std::string output;
  const int status = validate({path}, output);
  if (status == 77) GTEST_SKIP() << "jsonschema is not installed for " << CNNBENCH_TEST_PYTHON;
  EXPECT_EQ(status, 0) << "the document does not match bench/report/schema/result.schema.json:\n" << output;
}

TEST_F(ResultJson, DocumentHoldsTheRun) {
  const fs::path path = dir_ / "result.json";
  ASSERT_EQ(run(path.string()), "");
  const json doc = read_json(path);
  EXPECT_EQ(doc["schema_version"], "1.1");
  EXPECT_EQ(doc["started_at"], "2026-09-21T14:13:21.500Z");
  EXPECT_EQ(doc["config"]["model"], "resnet50");
  EXPECT_EQ(doc["config"]["num_batches"], 30);
  EXPECT_EQ(doc["config"]["num_warmup_batches"], 10);  // resolved for a GPU run
  EXPECT_EQ(doc["config"]["batch_size"], 64);
  EXPECT_EQ(doc["config"]["image_size"], 224);
  EXPECT_EQ(doc["config"]["num_gpus"], 1);
  EXPECT_THAT(doc["config_defaults"].get<std::vector<std::string>>(),
              AllOf(::testing::Contains("num_warmup_batches"), ::testing::Contains("batch_size"),
                    ::testing::Not(::testing::Contains("num_batches")), ::testing::Not(::testing::Contains("model"))));
  EXPECT_EQ(doc["config"]["precision"], "fp16");
  EXPECT_EQ(doc["config"]["log_format"], "both");
  EXPECT_EQ(doc["config"]["device"], "auto");
  EXPECT_EQ(doc["config"]["seed"], 1234);
  EXPECT_EQ(doc["environment"]["host_name"], "ip-10-0-1-23");
  EXPECT_TRUE(doc["environment"]["in_ecs"].get<bool>());
  EXPECT_TRUE(doc["environment"]["cuda_visible_devices"].is_null());
  EXPECT_EQ(doc["environment"]["versions"]["cudnn"], "9.19.0");
  EXPECT_EQ(doc["devices"][0]["uuid"], "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab");
  EXPECT_EQ(doc["devices"][0]["pci_bus_id"], "00000000:19:00.0");
  EXPECT_DOUBLE_EQ(doc["summary"]["total_images_per_sec"].get<double>(), 2909.1);
  EXPECT_DOUBLE_EQ(doc["summary"]["jitter"].get<double>(), 4.1);
  EXPECT_DOUBLE_EQ(doc["summary"]["step_time_ms"]["p99"].get<double>(), 89.0);
  EXPECT_EQ(doc["step_times_ms"].size(), 30U);
  ASSERT_EQ(doc["displayed_steps"].size(), 3U);
  EXPECT_TRUE(doc["displayed_steps"][1]["loss"].is_null());
  EXPECT_EQ(doc["losses"], json::parse("[7.02, null, 6.95]"));
  EXPECT_TRUE(doc["interrupted"].get<bool>());
  EXPECT_THAT(doc["stop_reason"].get<std::string>(), HasSubstr("SIGTERM"));
  ASSERT_EQ(doc["per_rank"].size(), 1U);
  EXPECT_EQ(doc["per_rank"][0]["rank"], 0);
  EXPECT_EQ(doc["per_rank"][0]["host"], "ip-10-0-1-23");
  EXPECT_EQ(doc["per_rank"][0]["devices"][0], "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab");
  EXPECT_DOUBLE_EQ(doc["per_rank"][0]["images_per_sec"].get<double>(), 2909.1);
}

TEST_F(ResultJson, SchemaRejectsWhatItDoesNotDescribe) {
  const fs::path path = dir_ / "result.json";
  ASSERT_EQ(run(path.string()), "");
  const json good = read_json(path);
  const std::vector<std::pair<const char*, std::function<void(json&)>>> edits = {
      {"an extra top-level member", [](json& d) { d["extra"] = 1; }},
      {"a missing required member", [](json& d) { d.erase("devices"); }},
      {"a wrong type", [](json& d) { d["interrupted"] = "no"; }},
      {"another schema version", [](json& d) { d["schema_version"] = "2"; }},
      {"an unknown config key", [](json& d) { d["config"]["unknown_flag"] = true; }},
      {"an empty per_rank", [](json& d) { d["per_rank"] = json::array(); }},
      {"a NaN written as a string", [](json& d) { d["summary"]["jitter"] = "NaN"; }},
      {"telemetry of another shape", [](json& d) { d["telemetry"]["available"] = "no"; }},
      {"no telemetry", [](json& d) { d.erase("telemetry"); }},
      {"a per-rank entry without its ordinal", [](json& d) { d["per_rank"][0].erase("ordinal"); }},
      {"a scaling sweep without points", [](json& d) {
         d["scaling_sweep"] = {{"scaling", "weak"}, {"per_gpu_batch", 64}, {"reference", "x"},
                               {"reference_images_per_sec", 1.0}};
       }},
  };
  std::vector<fs::path> bad;
  for (size_t i = 0; i < edits.size(); ++i) {
    json doc = good;
    edits[i].second(doc);
    std::string name = "bad";
    name += std::to_string(i) + ".json";
    bad.push_back(dir_ / name);
    std::ofstream(bad.back()) << doc.dump();
  }
  std::string output;
  const int status = validate(bad, output);
  if (status == 77) GTEST_SKIP() << "jsonschema is not installed for " << CNNBENCH_TEST_PYTHON;
  EXPECT_EQ(status, 1);
  for (size_t i = 0; i < edits.size(); ++i) {
    EXPECT_THAT(output, HasSubstr(bad[i].string() + ": invalid")) << "the schema accepts " << edits[i].first;
  }
}

TEST_F(ResultJson, AtomicWriteLeavesNoTemporaryFile) {
  const fs::path path = dir_ / "result.json";
  std::ofstream(path) << "old contents";
  ASSERT_EQ(run(path.string()), "");
  EXPECT_EQ(files(), std::vector<std::string>{"result.json"});
  EXPECT_EQ(read_json(path)["schema_version"], "1.1");
}

TEST_F(ResultJson, MissingDirectoryGivesAClearError) {
  const std::string path = (dir_ / "no_such_dir" / "result.json").string();
  const std::string error = run(path);
  EXPECT_THAT(error, AllOf(HasSubstr("--result_json=" + path), HasSubstr("cannot create"),
                           HasSubstr("No such file or directory")));
  EXPECT_TRUE(files().empty());
}

TEST_F(ResultJson, PathThatIsADirectoryGivesAClearErrorAndNoLeftover) {
  fs::create_directories(dir_ / "taken");
  const std::string path = (dir_ / "taken").string();
  const std::string error = run(path);
  EXPECT_THAT(error, AllOf(HasSubstr("--result_json=" + path), HasSubstr("cannot rename")));
  EXPECT_EQ(files(), std::vector<std::string>{"taken"});
}

TEST_F(ResultJson, TrailingSlashIsNotAFile) {
  const std::string path = dir_.string() + "/";
  EXPECT_THAT(run(path), HasSubstr("names a directory"));
}

TEST_F(ResultJson, RankFiguresReplaceTheDefault) {
  const fs::path path = dir_ / "result.json";
  ResultJsonReporter reporter(options(path.string()));
  RunInfo i = info();
  i.world_size = 2;
  reporter.header(i);
  RunResult result{.info = i, .summary = summary()};
  result.ranks = {RankFigures{.rank = 0, .host = "a", .devices = {"GPU-1"}, .steps = 30, .images_per_sec = 1450.0, .step_time_ms = {}},
                  RankFigures{.rank = 1, .host = "b", .devices = {"GPU-2"}, .steps = 30, .images_per_sec = kNaN, .step_time_ms = {}}};
  reporter.summary(result);
  ASSERT_EQ(reporter.error(), "");
  const json doc = read_json(path);
  ASSERT_EQ(doc["per_rank"].size(), 2U);
  EXPECT_EQ(doc["per_rank"][1]["host"], "b");
  EXPECT_TRUE(doc["per_rank"][1]["images_per_sec"].is_null());
}

TEST_F(ResultJson, TelemetryScalingAndSweepMembersMatchTheSchema) {
  const fs::path path = dir_ / "result.json";
  ResultJsonReporter reporter(options(path.string()));
  const RunInfo i = info();
  reporter.header(i);
  RunResult result{.info = i, .summary = summary()};
  result.telemetry = telemetry::unavailable_report("NVML not found (libnvidia-ml.so.1): GPU telemetry off");
  result.baseline_images_per_sec = 3000.0;
  result.sweep = {SweepPoint{.gpus = 1, .images_per_sec = 2909.1, .interrupted = true}};
  reporter.summary(result);
  ASSERT_EQ(reporter.error(), "");
  const json doc = read_json(path);
  EXPECT_FALSE(doc["telemetry"]["available"].get<bool>());
  EXPECT_THAT(doc["telemetry"]["reason"].get<std::string>(), HasSubstr("NVML not found"));
  EXPECT_DOUBLE_EQ(doc["scaling"]["efficiency"].get<double>(), 2909.1 / 3000.0);
  EXPECT_DOUBLE_EQ(doc["scaling"]["baseline_images_per_sec"].get<double>(), 3000.0);
  EXPECT_EQ(doc["scaling"]["devices"], 1);
  EXPECT_EQ(doc["scaling_sweep"]["points"][0]["gpus"], 1);
  EXPECT_EQ(doc["scaling_sweep"]["per_gpu_batch"], 256);
  EXPECT_TRUE(doc["scaling_sweep"]["points"][0]["interrupted"].get<bool>());
  std::string output;
  const int status = validate({path}, output);
  if (status == 77) GTEST_SKIP() << "jsonschema is not installed for " << CNNBENCH_TEST_PYTHON;
  EXPECT_EQ(status, 0) << output;
}

TEST_F(ResultJson, WriteFileAtomicallyReplacesContents) {
  const fs::path path = dir_ / "x.txt";
  write_file_atomically(path.string(), "first", "--out");
  write_file_atomically(path.string(), "second", "--out");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "second");
  EXPECT_EQ(files(), std::vector<std::string>{"x.txt"});
  EXPECT_THROW(write_file_atomically("", "x", "--out"), std::runtime_error);
}

}  // namespace
}  // namespace cnnbench::bench
