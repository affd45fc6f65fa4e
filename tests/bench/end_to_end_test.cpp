// The built cnnbench binary as operators run it: CloudWatch EMF lines beside the
// text report, the result JSON checked against its schema, clean stops on
// SIGTERM and SIGINT, and the exit statuses of bad device environments. Every
// run is the trivial model on 32×32 images on the CPU: milliseconds per step.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/report/emf.h"
#include "kernels/gpu_info.h"

#ifndef CNNBENCH_TEST_PYTHON
#define CNNBENCH_TEST_PYTHON "python3"
#endif

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// A small CPU run: trivial model, 32×32 images, batch 4.
const std::vector<std::string> kSmallCpuRun = {"--device=cpu", "--model=trivial", "--image_size=32",
                                               "--batch_size=4"};

std::string slurp(const fs::path& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Environment changes for a child: a value sets the variable, nullopt unsets it.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

/// The binary running as a child process, its stdout and stderr in files.
class Child {
 public:
  Child(const fs::path& dir, const std::vector<std::string>& args, const EnvChanges& env = {})
      : out_(dir / "stdout"), err_(dir / "stderr") {
    const std::string binary = std::string(CNNBENCH_BINARY_DIR) + "/bench/cnnbench";
    std::vector<std::string> argv_storage = {binary};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      for (const auto& [name, value] : env) {
        if (value) {
          ::setenv(name.c_str(), value->c_str(), 1);
        } else {
          ::unsetenv(name.c_str());
        }
      }
      if (std::freopen(out_.c_str(), "w", stdout) == nullptr || std::freopen(err_.c_str(), "w", stderr) == nullptr) {
        ::_exit(126);
      }
      std::vector<char*> argv;
      for (auto& a : argv_storage) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  /// Waits until stdout contains `marker`; false after `timeout` or when the child ended.
  bool wait_for_output(const std::string& marker, std::chrono::seconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      if (slurp(out_).find(marker) != std::string::npos) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return slurp(out_).find(marker) != std::string::npos;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  void signal(int signo) { ::kill(pid_, signo); }

  /// The exit status (-1 when killed by a signal); kills the child after `timeout`.
  int wait(std::chrono::seconds timeout) {
    if (reaped_) return status_;
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        reaped_ = true;
        ADD_FAILURE() << "cnnbench did not end within " << timeout.count() << " s";
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    reaped_ = true;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return status_;
  }

  [[nodiscard]] std::string out() const { return slurp(out_); }
  [[nodiscard]] std::string err() const { return slurp(err_); }

 private:
  fs::path out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = -1;
};

class EndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / (std::string("cnnbench_e2e_") + info->name() + "_" +
                                             std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// Runs to the end; the status.
  int run(std::vector<std::string> args, const EnvChanges& env = {}) {
    child_ = std::make_unique<Child>(dir_, args, env);
    return child_->wait(std::chrono::seconds(120));
  }

  /// Exit status of validate_json_schema.py for the result document (77: jsonschema missing).
  int validate(const fs::path& document, std::string& output) const {
    const std::string command = std::string("'") + CNNBENCH_TEST_PYTHON + "' '" + CNNBENCH_SOURCE_DIR +
                                "/tests/bench/report/validate_json_schema.py' --ref '" + CNNBENCH_SOURCE_DIR +
                                "/bench/telemetry/telemetry.schema.json' '" + CNNBENCH_SOURCE_DIR +
                                "/bench/report/schema/result.schema.json' '" + document.string() + "' 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return -1;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
    const int status = ::pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  /// Stops a run with `signo` once `marker` is on stdout; checks that it ends
  /// within a second with `expected_status`, a summary and a valid JSON marked
  /// interrupted; returns stdout.
  std::string stop_run(std::vector<std::string> args, const std::string& marker, int signo, int expected_status,
                       std::chrono::milliseconds delay = std::chrono::milliseconds(0)) {
    const fs::path json = dir_ / "r.json";
    args.push_back("--result_json=" + json.string());
    Child child(dir_, args);
    if (!child.wait_for_output(marker, std::chrono::seconds(60))) {
      ADD_FAILURE() << "no '" << marker << "' on stdout:\n" << child.out() << child.err();
      return "";
    }
    std::this_thread::sleep_for(delay);
    const auto sent = Clock::now();
    child.signal(signo);
    const int status = child.wait(std::chrono::seconds(30));
    const double took = std::chrono::duration<double>(Clock::now() - sent).count();
    EXPECT_EQ(status, expected_status) << child.out() << child.err();
    EXPECT_LT(took, 1.0) << "the stop took " << took << " s";
    const std::string out = child.out();
    EXPECT_NE(out.find("\ntotal images/sec: "), std::string::npos) << out;
    EXPECT_NE(out.find("\ninterrupted: stop requested"), std::string::npos) << out;
    const nlohmann::json doc = nlohmann::json::parse(slurp(json), nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << slurp(json);
    if (!doc.is_discarded()) {
      EXPECT_TRUE(doc.at("interrupted").get<bool>());
      EXPECT_NE(doc.at("stop_reason").get<std::string>().find("stop requested"), std::string::npos);
    }
    std::string output;
    const int valid = validate(json, output);
    if (valid != 77) {
      EXPECT_EQ(valid, 0) << output;
    }
    return out;
  }

  fs::path dir_;
  std::unique_ptr<Child> child_;
};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(EndToEnd, LogFormatBothPrintsValidEmfLinesTextAndAValidResultJson) {
  const fs::path json = dir_ / "r.json";
  const int status = run(with(kSmallCpuRun, {"--num_batches=4", "--num_warmup_batches=1", "--display_every=2",
                                             "--log_format=both", "--result_json=" + json.string()}));
  const std::string out = child_->out();
  ASSERT_EQ(status, 0) << out << child_->err();

  int step_events = 0, summary_events = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    EXPECT_EQ(cnnbench::bench::validate_emf_line(line), std::vector<std::string>{}) << line;
    const auto event = nlohmann::json::parse(line);
    EXPECT_EQ(event.at("Model"), "trivial");
    step_events += event.at("Event") == "step";
    summary_events += event.at("Event") == "summary";
  }
  EXPECT_EQ(step_events, 3) << out;  // timed steps 1, 2 and 4
  EXPECT_EQ(summary_events, 1) << out;
  EXPECT_EQ(out.rfind("Model:       trivial\n", 0), 0U) << out;
  EXPECT_NE(out.find("\ntotal images/sec: "), std::string::npos) << out;
  EXPECT_NE(out.find("\nGPU telemetry off: this run trains on the CPU"), std::string::npos) << out;
  EXPECT_NE(out.find("\nVersions:    cnnbench "), std::string::npos) << out;

  std::string output;
  const int valid = validate(json, output);
  if (valid == 77) GTEST_SKIP() << "jsonschema is not installed for " << CNNBENCH_TEST_PYTHON;
  EXPECT_EQ(valid, 0) << output;
  const auto doc = nlohmann::json::parse(slurp(json));
  EXPECT_FALSE(doc.at("interrupted").get<bool>());
  EXPECT_EQ(doc.at("summary").at("steps"), 4);
  ASSERT_EQ(doc.at("per_rank").size(), 1U);
  EXPECT_EQ(doc.at("per_rank")[0].at("devices")[0], "cpu");
  EXPECT_FALSE(doc.at("telemetry").at("available").get<bool>());
}

TEST_F(EndToEnd, InsideEcsTheDefaultIsBothAndEmfAlonePrintsOnlyEvents) {
  // Inside ECS the default is both; --log_format=emf alone prints no text at all.
  const EnvChanges ecs = {{"ECS_CONTAINER_METADATA_URI_V4", "http://169.254.170.2/v4/abc"}};
  ASSERT_EQ(run(with(kSmallCpuRun, {"--num_batches=2", "--num_warmup_batches=0"}), ecs), 0) << child_->err();
  const std::string both = child_->out();
  EXPECT_NE(both.find("\n{\"_aws\":"), std::string::npos) << both;
  EXPECT_NE(both.find("total images/sec"), std::string::npos) << both;
  EXPECT_NE(both.find("Amazon ECS"), std::string::npos) << both;

  ASSERT_EQ(run(with(kSmallCpuRun, {"--num_batches=2", "--num_warmup_batches=0", "--log_format=emf"})), 0);
  std::istringstream lines(child_->out());
  int events = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(cnnbench::bench::validate_emf_line(line), std::vector<std::string>{}) << line;
    ++events;
  }
  EXPECT_EQ(events, 2);  // timed step 1 and the summary
}

TEST_F(EndToEnd, DurationRunsTimedStepsForThatLong) {
  const fs::path json = dir_ / "r.json";
  ASSERT_EQ(run(with(kSmallCpuRun, {"--duration=0.3", "--result_json=" + json.string()})), 0) << child_->err();
  EXPECT_NE(child_->out().find("Num batches: as many as run in 0.3 s (--duration)\n"), std::string::npos)
      << child_->out();
  const auto doc = nlohmann::json::parse(slurp(json));
  EXPECT_GE(doc.at("summary").at("wall_time_s").get<double>(), 0.3);
  EXPECT_LT(doc.at("summary").at("wall_time_s").get<double>(), 5.0);
  EXPECT_GT(doc.at("summary").at("steps").get<int>(), 1);
  EXPECT_FALSE(doc.at("interrupted").get<bool>());
}

TEST_F(EndToEnd, SigtermDuringTheTimedLoopPrintsTheSummaryAndExits143) {
  const std::string out = stop_run(with(kSmallCpuRun, {"--duration=120", "--display_every=1"}),
                                   "\n1\timages/sec: ", SIGTERM, 143);
  EXPECT_NE(out.find("during the timed loop, after step"), std::string::npos) << out;
}

TEST_F(EndToEnd, SigintDuringWarmupPrintsTheSummaryAndExits130) {
  const std::string out = stop_run(with(kSmallCpuRun, {"--num_warmup_batches=100000000", "--num_batches=5"}),
                                   "Running warm up\n", SIGINT, 130, std::chrono::milliseconds(300));
  EXPECT_NE(out.find("during warm-up, after"), std::string::npos) << out;
  EXPECT_NE(out.find("timed steps: 0 "), std::string::npos) << out;
}

TEST_F(EndToEnd, ResultJsonWriteErrorExitsOneAfterTheSummary) {
  // /proc/self takes no new files, even for root; the flag's own checks pass.
  ASSERT_EQ(run(with(kSmallCpuRun, {"--num_batches=2", "--result_json=/proc/self/r.json"})), 1);
  EXPECT_NE(child_->out().find("\ntotal images/sec: "), std::string::npos) << child_->out();
  EXPECT_NE(child_->err().find("cnnbench: error: --result_json=/proc/self/r.json: cannot create"),
            std::string::npos)
      << child_->err();
}

TEST_F(EndToEnd, MalformedVisibleDevicesAreUsageErrors) {
  const auto args = with(kSmallCpuRun, {"--num_batches=1"});
  ASSERT_EQ(run(args, {{"NVIDIA_VISIBLE_DEVICES", "0,,1"}}), 2);
  EXPECT_EQ(child_->out(), "");
  EXPECT_NE(child_->err().find("NVIDIA_VISIBLE_DEVICES='0,,1'"), std::string::npos) << child_->err();
  EXPECT_NE(child_->err().find("valid:"), std::string::npos) << child_->err();

  ASSERT_EQ(run(args, {{"CUDA_VISIBLE_DEVICES", "all"}}), 2);
  EXPECT_NE(child_->err().find("CUDA_VISIBLE_DEVICES='all'"), std::string::npos) << child_->err();

  ASSERT_EQ(run(args, {{"OMPI_COMM_WORLD_SIZE", "two"}}), 2);
  EXPECT_NE(child_->err().find("OMPI_COMM_WORLD_SIZE='two'"), std::string::npos) << child_->err();
}

TEST_F(EndToEnd, AnAllocatedGpuThatCudaCannotShowIsAFailureNeverACpuRun) {
  const std::string uuid = "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab";
  ASSERT_EQ(run({"--model=trivial", "--image_size=32", "--batch_size=2", "--num_batches=1"},
                {{"NVIDIA_VISIBLE_DEVICES", uuid}, {"CUDA_VISIBLE_DEVICES", std::nullopt}}),
            1);
  EXPECT_EQ(child_->out(), "") << "a CPU run started";
  const std::string err = child_->err();
  EXPECT_NE(err.find(uuid), std::string::npos) << err;
  // Either CUDA sees no GPU at all (this machine) or not this one (a GPU host).
  EXPECT_TRUE(err.find("Likely cause") != std::string::npos || err.find("which CUDA does not show") != std::string::npos)
      << err;
}

TEST_F(EndToEnd, VerifyWithoutAGpuIsAClearError) {
  // --device=cpu: refused with the flags.
  ASSERT_EQ(run(with(kSmallCpuRun, {"--num_batches=1", "--verify"})), 2);
  EXPECT_NE(child_->err().find("--verify=true conflicts with --device=cpu"), std::string::npos)
      << child_->err();
  // --device=auto that lands on the CPU: refused before training, naming why.
  if (!cnnbench::kernels::enumerate_gpus().gpus.empty()) GTEST_SKIP() << "this machine has GPUs";
  ASSERT_EQ(run({"--model=trivial", "--image_size=32", "--batch_size=2", "--num_batches=1", "--verify"},
                {{"NVIDIA_VISIBLE_DEVICES", std::nullopt}}),
            1);
  EXPECT_NE(child_->err().find("--verify checks a GPU's training step against the CPU backend, and "
                               "this run trains on the CPU"),
            std::string::npos)
      << child_->err();
  EXPECT_EQ(child_->out().find("total images/sec"), std::string::npos) << "it trained";
}

TEST_F(EndToEnd, AOneWorkerRunReportsItsReplicaCheckAndAFlippedBitIsIgnoredElsewhere) {
  const fs::path json = dir_ / "r.json";
  // The fault injector names rank 1, which a one-worker run does not have.
  ASSERT_EQ(run(with(kSmallCpuRun, {"--num_batches=2", "--result_json=" + json.string()}),
                {{"CNNBENCH_FAULT_INJECT_FLIP_BIT", "1:0:3"}}),
            0)
      << child_->err();
  EXPECT_NE(child_->out().find("replicas: identical across 1 CPU rank (parameter hash 0x"),
            std::string::npos)
      << child_->out();
  const nlohmann::json doc = nlohmann::json::parse(slurp(json));
  EXPECT_TRUE(doc.at("replicas").at("identical").get<bool>());
  EXPECT_EQ(doc.at("replicas").at("replicas").get<int>(), 1);
  // A malformed injector value is an error naming the variable.
  ASSERT_EQ(run(with(kSmallCpuRun, {"--num_batches=1"}), {{"CNNBENCH_FAULT_INJECT_FLIP_BIT", "x"}}), 1);
  EXPECT_NE(child_->err().find("CNNBENCH_FAULT_INJECT_FLIP_BIT=x"), std::string::npos) << child_->err();
}

TEST_F(EndToEnd, ScalingSweepWithoutGpusIsAUsageError) {
  if (!cnnbench::kernels::enumerate_gpus().gpus.empty()) GTEST_SKIP() << "this machine has GPUs";
  ASSERT_EQ(run({"--model=trivial", "--image_size=32", "--scaling_sweep=1,2"},
                {{"NVIDIA_VISIBLE_DEVICES", std::nullopt}}),
            2);
  EXPECT_EQ(child_->out(), "");
  EXPECT_NE(child_->err().find("--scaling_sweep=1,2: the scaling sweep runs on GPUs"), std::string::npos)
      << child_->err();
}

}  // namespace
