// CloudWatch EMF: every line the reporter (emf_report.h) writes for a fake run
// passes the specification's rules, and the validator of the format (emf.h)
// rejects lines that break them.
#include "bench/report/emf.h"
#include "bench/report/emf_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/bench/report/fake_run.h"

namespace cnnbench::bench {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using json = nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kStartMs = 1'790'000'000'000;

RunInfo gpu_run() {
  return testing::fake_gpu_run({{0, ""}, {1, ""}, {2, ""}, {3, ""}}, 256, 1, "NVIDIA H100 80GB HBM3");
}

std::vector<StepStats> steps() {
  std::vector<StepStats> s(3);
  s[0] = {.step = 10, .images_per_sec = 11590.4, .uncertainty = 3.1, .jitter = 5.2, .step_time_ms = 88.3,
          .loss = 7.02, .elapsed_s = 0.9};
  s[1] = {.step = 20, .images_per_sec = 11601.0, .uncertainty = 2.0, .jitter = 4.0, .step_time_ms = 88.1,
          .loss = kNaN, .elapsed_s = 1.8};  // loss not read at this step
  s[2] = {.step = 30, .images_per_sec = 11603.2, .uncertainty = kNaN, .jitter = 3.0, .step_time_ms = 88.0,
          .loss = 6.95, .elapsed_s = 2.6};
  return s;
}

RunSummary summary_of(const std::vector<StepStats>& s) {
  RunSummary r;
  r.steps = 30;
  r.images = 30 * 1024;
  r.wall_time_s = 2.65;
  r.total_images_per_sec = 11592.4;
  r.last = s.back();
  r.step_time_ms = {.mean = 88.2, .min = 87.9, .p50 = 88.1, .p90 = 88.4, .p99 = 89.0, .max = 89.2};
  r.final_loss = 6.95;
  return r;
}

// Runs a fake run through an EmfReporter and returns its lines.
EmfOptions options_with(std::string metrics_namespace, std::vector<std::pair<std::string, std::string>> context = {}) {
  EmfOptions o;
  o.metrics_namespace = std::move(metrics_namespace);
  o.context = std::move(context);
  return o;
}

std::vector<std::string> run_lines(const RunInfo& info, const RunSummary& summary,
                                   EmfOptions options = options_with("cnnbench")) {
  std::ostringstream out;
  int64_t now = kStartMs;
  options.clock_ms = [&now] { return now += 1000; };
  EmfReporter reporter(out, std::move(options));
  reporter.header(info);
  for (const auto& s : steps()) reporter.step(info, s);
  reporter.summary({.info = info, .summary = summary});
  EXPECT_EQ(reporter.failed_events(), 0);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  EXPECT_EQ(out.str().back(), '\n');
  return lines;
}

// "M7": built by appending, since GCC 12 warns (-Wrestrict, a known false
// positive) on "literal" + std::to_string(...).
std::string numbered(const char* prefix, int i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

std::string valid_line() {
  EmfEvent e("cnnbench", kStartMs);
  e.dimension("Model", "resnet50").dimension_set({"Model"});
  e.metric("ImagesPerSecond", EmfUnit::CountPerSecond, 1234.5);
  return e.to_line();
}

TEST(EmfReporter, EveryLinePassesTheSpecification) {
  const auto lines = run_lines(gpu_run(), summary_of(steps()));
  ASSERT_EQ(lines.size(), 4U);  // three displayed steps and the summary; nothing at the header
  for (const auto& line : lines) EXPECT_THAT(validate_emf_line(line), IsEmpty()) << line;
}

TEST(EmfReporter, StepLinesCarryDimensionsMetricsAndContext) {
  const auto lines = run_lines(gpu_run(), summary_of(steps()), options_with("bench/team-a", {{"Host", "ip-10-0-1-23"}}));
  const json first = json::parse(lines[0]);
  EXPECT_EQ(first["_aws"]["Timestamp"], kStartMs + 1000);
  const json& directive = first["_aws"]["CloudWatchMetrics"][0];
  EXPECT_EQ(directive["Namespace"], "bench/team-a");
  EXPECT_EQ(directive["Dimensions"], json::parse(R"([["Model","Precision","NumGPUs"],["Model"]])"));
  EXPECT_EQ(directive["Metrics"], json::parse(R"([{"Name":"ImagesPerSecond","Unit":"Count/Second"},
      {"Name":"StepTime","Unit":"Milliseconds"},{"Name":"Loss","Unit":"None"}])"));
  EXPECT_EQ(first["Model"], "resnet50");
  EXPECT_EQ(first["Precision"], "fp16");
  EXPECT_EQ(first["NumGPUs"], "4");
  EXPECT_DOUBLE_EQ(first["ImagesPerSecond"].get<double>(), 11590.4);
  EXPECT_DOUBLE_EQ(first["StepTime"].get<double>(), 88.3);
  EXPECT_DOUBLE_EQ(first["Loss"].get<double>(), 7.02);
  EXPECT_EQ(first["Step"], 10);
  EXPECT_EQ(first["Event"], "step");
  EXPECT_EQ(first["WorldSize"], 1);
  EXPECT_EQ(first["GlobalBatch"], 1024);
  EXPECT_EQ(first["Host"], "ip-10-0-1-23");
  EXPECT_EQ(json::parse(lines[1])["_aws"]["Timestamp"], kStartMs + 2000);
}

TEST(EmfReporter, NanLossNeverReachesALine) {
  const auto lines = run_lines(gpu_run(), summary_of(steps()));
  const json second = json::parse(lines[1]);  // step 20: loss NaN
  EXPECT_FALSE(second.contains("Loss"));
  for (const auto& m : second["_aws"]["CloudWatchMetrics"][0]["Metrics"]) EXPECT_NE(m["Name"], "Loss");
  EXPECT_TRUE(second.contains("ImagesPerSecond"));
  const json third = json::parse(lines[2]);  // a NaN context value becomes null, never NaN
  EXPECT_TRUE(third["ImagesPerSecondUncertainty"].is_null());
  for (const auto& line : lines) EXPECT_THAT(line, Not(HasSubstr("NaN")));
}

TEST(EmfReporter, SummaryLine) {
  const auto lines = run_lines(gpu_run(), summary_of(steps()));
  const json last = json::parse(lines.back());
  EXPECT_EQ(last["Event"], "summary");
  EXPECT_DOUBLE_EQ(last["TotalImagesPerSecond"].get<double>(), 11592.4);
  EXPECT_DOUBLE_EQ(last["StepTimeP50"].get<double>(), 88.1);
  EXPECT_DOUBLE_EQ(last["StepTimeP90"].get<double>(), 88.4);
  EXPECT_DOUBLE_EQ(last["StepTimeP99"].get<double>(), 89.0);
  EXPECT_EQ(last["Interrupted"], 0.0);
  EXPECT_EQ(last["Steps"], 30);
  std::vector<std::string> names;
  for (const auto& m : last["_aws"]["CloudWatchMetrics"][0]["Metrics"]) names.push_back(m["Name"]);
  EXPECT_THAT(names, Contains("TotalImagesPerSecond"));
  EXPECT_THAT(names, Not(Contains("ImagesPerSecond")));  // the step series keeps only step values
}

TEST(EmfReporter, InterruptedDuringWarmupStillWritesAValidSummary) {
  RunSummary r;
  r.interrupted = true;
  r.stop_reason = "SIGTERM during warm-up";
  r.final_loss = kNaN;
  const auto lines = run_lines(gpu_run(), r);
  const json last = json::parse(lines.back());
  EXPECT_THAT(validate_emf_line(lines.back()), IsEmpty());
  EXPECT_EQ(last["Interrupted"], 1.0);
  EXPECT_EQ(last["StopReason"], "SIGTERM during warm-up");
  EXPECT_FALSE(last.contains("TotalImagesPerSecond"));
}

TEST(EmfReporter, CpuRunHasZeroGpus) {
  RunInfo info = gpu_run();
  info.device_kind = "cpu";
  info.precision = "fp32";
  DeviceEntry cpu;
  cpu.name = "Intel(R) Xeon(R)";
  info.devices = {cpu};
  const auto lines = run_lines(info, summary_of(steps()));
  const json first = json::parse(lines[0]);
  EXPECT_EQ(first["NumGPUs"], "0");
  EXPECT_EQ(first["Precision"], "fp32");
  for (const auto& line : lines) EXPECT_THAT(validate_emf_line(line), IsEmpty()) << line;
}

TEST(EmfReporter, EmptyAndNonAsciiDimensionValuesAreMadeValid) {
  RunInfo info = gpu_run();
  info.model = "";
  info.precision = "f\xc3\xbc" "16";
  const auto lines = run_lines(info, summary_of(steps()));
  const json first = json::parse(lines[0]);
  EXPECT_EQ(first["Model"], "unknown");
  EXPECT_EQ(first["Precision"], "f??16");
  for (const auto& line : lines) EXPECT_THAT(validate_emf_line(line), IsEmpty()) << line;
}

TEST(EmfReporter, InvalidNamespaceIsRejectedUpFront) {
  std::ostringstream out;
  try {
    EmfReporter reporter(out, options_with("AWS/EC2"));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("--metrics_namespace='AWS/EC2'"), HasSubstr("reserved")));
  }
  EXPECT_THROW(EmfReporter(out, options_with("bad namespace!")), std::invalid_argument);
  EXPECT_THROW(EmfReporter(out, options_with(std::string(256, 'a'))), std::invalid_argument);
  EXPECT_NO_THROW(EmfReporter(out, options_with("Team A/cnnbench:#1_x.y-z")));
}

// A stream whose every write fails, as stdout does on a closed pipe.
class FailingBuffer : public std::streambuf {
 protected:
  int_type overflow(int_type /*ch*/) override { return traits_type::eof(); }
  std::streamsize xsputn(const char* /*s*/, std::streamsize /*n*/) override { return 0; }
};

TEST(EmfReporter, AFailingStreamIsCountedNotThrown) {
  FailingBuffer buffer;
  std::ostream out(&buffer);
  EmfReporter reporter(out, options_with("cnnbench"));
  const RunInfo info = gpu_run();
  EXPECT_NO_THROW(reporter.step(info, steps()[0]));
  const RunResult result{.info = info, .summary = summary_of(steps())};
  EXPECT_NO_THROW(reporter.summary(result));
  EXPECT_EQ(reporter.failed_events(), 2);
}

TEST(EmfEvent, GuardsItsOwnNames) {
  EmfEvent e("cnnbench", kStartMs);
  e.dimension("Model", "resnet50");
  EXPECT_THROW(e.dimension("Model", "vgg16"), std::invalid_argument);
  EXPECT_THROW(e.dimension(":Colon", "x"), std::invalid_argument);
  EXPECT_THROW(e.dimension_set({"Precision"}), std::invalid_argument);
  EXPECT_THROW(e.metric("Model", EmfUnit::Count, 1), std::invalid_argument);
  EXPECT_THROW(e.property("_aws", 1), std::invalid_argument);
  EXPECT_FALSE(e.metric("Inf", EmfUnit::Count, std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(e.metric("Huge", EmfUnit::Count, 1e200));
  EXPECT_THROW(EmfEvent("", kStartMs), std::invalid_argument);
}

TEST(EmfEvent, HundredMetricsAndThirtyDimensionsAreTheLimits) {
  EmfEvent e("cnnbench", kStartMs);
  std::vector<std::string> keys;
  for (int i = 0; i < 31; ++i) {
    keys.push_back(numbered("D", i));
    e.dimension(keys.back(), "v");
  }
  EXPECT_THROW(e.dimension_set(keys), std::invalid_argument);
  keys.pop_back();
  e.dimension_set(keys);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(e.metric(numbered("M", i), EmfUnit::Percent, i));
  EXPECT_THROW(e.metric("M100", EmfUnit::Percent, 100), std::invalid_argument);
  EXPECT_EQ(e.metric_count(), 100U);
  EXPECT_THAT(validate_emf_line(e.to_line()), IsEmpty());
}

TEST(EmfUnits, SpelledAsCloudWatchSpellsThem) {
  EXPECT_STREQ(to_string(EmfUnit::CountPerSecond), "Count/Second");
  EXPECT_STREQ(to_string(EmfUnit::Milliseconds), "Milliseconds");
  EXPECT_STREQ(to_string(EmfUnit::Percent), "Percent");
  EXPECT_STREQ(to_string(EmfUnit::Megabytes), "Megabytes");
  EXPECT_STREQ(to_string(EmfUnit::GigabitsPerSecond), "Gigabits/Second");
  EXPECT_STREQ(to_string(EmfUnit::None), "None");
}

// ---------------------------------------------------------------- validator

// Applies `edit` to a valid line and returns the validator's problems.
template <typename Edit>
std::vector<std::string> problems_after(Edit edit) {
  json doc = json::parse(valid_line());
  edit(doc);
  return validate_emf_line(doc.dump());
}

std::string joined(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

TEST(EmfValidator, AcceptsAValidLine) { EXPECT_THAT(validate_emf_line(valid_line()), IsEmpty()); }

TEST(EmfValidator, RejectsMissingTimestamp) {
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"].erase("Timestamp"); })), HasSubstr("Timestamp is missing"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["Timestamp"] = "now"; })), HasSubstr("Timestamp must be"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["Timestamp"] = -5; })), HasSubstr("Timestamp must be"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["Timestamp"] = 1.5; })), HasSubstr("Timestamp must be"));
}

TEST(EmfValidator, RejectsUnknownUnit) {
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] = "Images/Second"; })),
              HasSubstr("which CloudWatch does not know"));
}

TEST(EmfValidator, RejectsDimensionKeyMissingFromTheObject) {
  EXPECT_THAT(joined(problems_after([](json& d) { d.erase("Model"); })),
              HasSubstr("dimension Model is not a member of the root object"));
}

TEST(EmfValidator, RejectsBadDimensionValues) {
  EXPECT_THAT(joined(problems_after([](json& d) { d["Model"] = 50; })), HasSubstr("must hold a string"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["Model"] = ""; })), HasSubstr("1 to 1024 characters"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["Model"] = std::string(1025, 'x'); })), HasSubstr("1 to 1024"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["Model"] = "   "; })), HasSubstr("non-space"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["Model"] = "r\xc3\xa9snet"; })), HasSubstr("printable ASCII"));
}

TEST(EmfValidator, RejectsTooManyMetricsAndDimensions) {
  EXPECT_THAT(joined(problems_after([](json& d) {
                auto& metrics = d["_aws"]["CloudWatchMetrics"][0]["Metrics"];
                for (int i = 0; i < 100; ++i) {
                  const std::string name = numbered("M", i);
                  metrics.push_back({{"Name", name}, {"Unit", "Count"}});
                  d[name] = i;
                }
              })),
              HasSubstr("defines 101 metrics (at most 100)"));
  EXPECT_THAT(joined(problems_after([](json& d) {
                json set = json::array();
                for (int i = 0; i < 31; ++i) {
                  const std::string name = numbered("D", i);
                  set.push_back(name);
                  d[name] = "v";
                }
                d["_aws"]["CloudWatchMetrics"][0]["Dimensions"].push_back(set);
              })),
              HasSubstr("a set of 31 keys (at most 30)"));
}

TEST(EmfValidator, RejectsBadMetricValues) {
  EXPECT_THAT(joined(problems_after([](json& d) { d.erase("ImagesPerSecond"); })),
              HasSubstr("metric ImagesPerSecond is not a member"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["ImagesPerSecond"] = "NaN"; })), HasSubstr("must hold a number"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["ImagesPerSecond"] = nullptr; })), HasSubstr("must hold a number"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["ImagesPerSecond"] = 1e300; })), HasSubstr("2^360"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["ImagesPerSecond"] = json::array(); })), HasSubstr("1 to 100 numbers"));
  EXPECT_THAT(problems_after([](json& d) { d["ImagesPerSecond"] = json::array({1, 2, 3}); }), IsEmpty());
  // nlohmann writes NaN as null; a raw NaN token is not JSON at all.
  std::string raw = valid_line();
  raw.replace(raw.find("1234.5"), 6, "NaN");
  EXPECT_THAT(joined(validate_emf_line(raw)), HasSubstr("not valid JSON"));
}

TEST(EmfValidator, RejectsStructuralProblems) {
  EXPECT_THAT(joined(validate_emf_line("{\"a\":1}")), HasSubstr("no _aws object"));
  EXPECT_THAT(joined(validate_emf_line("[1,2]")), HasSubstr("not a JSON object"));
  EXPECT_THAT(joined(validate_emf_line(valid_line() + "\n" + valid_line())), HasSubstr("more than one line"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"] = json::array(); })),
              HasSubstr("non-empty array"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"][0]["Extra"] = 1; })),
              HasSubstr("unknown member Extra"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"][0]["Namespace"] = "AWS/EC2"; })),
              HasSubstr("reserved"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"][0].erase("Namespace"); })),
              HasSubstr("Namespace is missing"));
  EXPECT_THAT(joined(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["StorageResolution"] = 5; })),
              HasSubstr("StorageResolution"));
  EXPECT_THAT(problems_after([](json& d) { d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["StorageResolution"] = 1; }),
              IsEmpty());
  EXPECT_THAT(joined(problems_after([](json& d) {
                d["_aws"]["CloudWatchMetrics"][0]["Metrics"].push_back({{"Name", "ImagesPerSecond"}});
              })),
              HasSubstr("defined twice"));
  EXPECT_THAT(joined(problems_after([](json& d) {
                d["_aws"]["CloudWatchMetrics"][0]["Metrics"].push_back({{"Name", "Model"}});
              })),
              HasSubstr("also a dimension"));
  EXPECT_THAT(joined(validate_emf_line(std::string(kEmfMaxEventBytes + 1, ' '))), HasSubstr("bytes (at most"));
}

TEST(EmfNamespace, Rules) {
  EXPECT_FALSE(check_emf_namespace("cnnbench"));
  EXPECT_FALSE(check_emf_namespace("a.b-c_d/e#f:g h"));
  EXPECT_TRUE(check_emf_namespace(""));
  EXPECT_TRUE(check_emf_namespace("   "));
  EXPECT_TRUE(check_emf_namespace("AWS/ECS"));
  EXPECT_TRUE(check_emf_namespace("caf\xc3\xa9"));
  EXPECT_TRUE(check_emf_namespace(std::string(256, 'n')));
  EXPECT_FALSE(check_emf_namespace(std::string(255, 'n')));
}

}  // namespace
}  // namespace cnnbench::bench
