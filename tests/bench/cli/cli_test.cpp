// The built cnnbench binary run as a child process: exit statuses, stderr,
// --list_models JSON, and short end-to-end CPU runs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/error.h"
#include "models/zoo.h"

namespace {

struct Child {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Runs the binary with `args` (trusted, test-written: no quoting needed).
Child run_cnnbench(const std::string& args) {
  // ctest runs each test in its own process, in parallel: the pid keeps their files apart.
  static int n = 0;
  const std::string base = ::testing::TempDir() + "cnnbench_cli_" + std::to_string(::getpid()) + "_" +
                           std::to_string(++n);
  const std::string cmd = std::string("'") + CNNBENCH_BINARY_DIR + "/bench/cnnbench' " + args +
                          " >'" + base + ".out' 2>'" + base + ".err'";
  const int raw = std::system(cmd.c_str());
  Child c;
  c.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  c.out = slurp(base + ".out");
  c.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return c;
}

bool cpu_backend_missing(const Child& c) {
  return c.err.find("CPU backend is not built") != std::string::npos;
}

/// Checks a finished training run's text: a positive finite total and finite
/// losses on every step line.
void expect_sane_run(const Child& c) {
  ASSERT_EQ(c.status, 0) << c.out << c.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(c.out, m, std::regex(R"(\ntotal images/sec: (\S+)\n)"))) << c.out;
  const double total = std::stod(m[1].str());
  EXPECT_TRUE(std::isfinite(total) && total > 0) << m[1];
  const std::regex step_line(R"((^|\n)\d+\timages/sec: [0-9.]+ \+/- [0-9.]+ \(jitter = [0-9.]+\)\t(\S+))");
  int lines = 0;
  for (auto it = std::sregex_iterator(c.out.begin(), c.out.end(), step_line);
       it != std::sregex_iterator(); ++it) {
    const double loss = std::stod((*it)[2].str());
    EXPECT_TRUE(std::isfinite(loss)) << (*it)[0];
    ++lines;
  }
  EXPECT_GE(lines, 1) << c.out;
}

TEST(CnnbenchBinary, BadFlagExitsTwoWithTheFlagOnStderr) {
  const Child c = run_cnnbench("--batch_size=abc");
  EXPECT_EQ(c.status, 2);
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.err.rfind("cnnbench: error: --batch_size=abc", 0), 0U) << c.err;
  EXPECT_NE(c.err.find("see cnnbench --help"), std::string::npos);

  const Child unknown = run_cnnbench("--bogus");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("--bogus"), std::string::npos) << unknown.err;
}

TEST(CnnbenchBinary, VersionAndHelpExitZero) {
  const Child v = run_cnnbench("--version");
  EXPECT_EQ(v.status, 0);
  EXPECT_EQ(v.out.rfind("cnnbench ", 0), 0U) << v.out;
  const Child h = run_cnnbench("--help");
  EXPECT_EQ(h.status, 0);
  EXPECT_NE(h.out.find("--num_warmup_batches"), std::string::npos);
}

TEST(CnnbenchBinary, ListModelsJsonHasTheWholeZoo) {
  const Child c = run_cnnbench("--list_models --format=json");
  ASSERT_EQ(c.status, 0) << c.err;
  const auto doc = nlohmann::json::parse(c.out);
  const auto& list = doc.at("models");
  ASSERT_EQ(list.size(), 10U);
  ASSERT_EQ(list.size(), cnnbench::models::zoo().size());
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& m = list[i];
    EXPECT_EQ(m.at("name"), cnnbench::models::zoo()[i].name);
    EXPECT_GT(m.at("parameters").get<int64_t>(), 0);
    EXPECT_GT(m.at("gflops_per_image").get<double>(), 0);
    EXPECT_GE(m.at("default_image_size").get<int>(), 32);
  }
  const Child table = run_cnnbench("--list_models");
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.out.find("resnet50"), std::string::npos);
}

TEST(CnnbenchBinary, GpuAskedForWithoutCudaIsAnErrorNotAFallback) {
  try {
    (void)cnnbench::kernels::make_cuda_backend();
    GTEST_SKIP() << "this build has a CUDA backend";
  } catch (const cnnbench::kernels::BackendUnavailable&) {
  }
  const Child c = run_cnnbench("--device=gpu --model=trivial");
  EXPECT_EQ(c.status, 1);
  EXPECT_EQ(c.out, "");
  EXPECT_NE(c.err.find("--device=gpu"), std::string::npos) << c.err;
}

TEST(CnnbenchBinary, TrivialOnTheCpuEndToEnd) {
  const Child c = run_cnnbench(
      "--device=cpu --model=trivial --batch_size=4 --num_batches=5 --num_warmup_batches=1 "
      "--image_size=32 --display_every=2");
  if (cpu_backend_missing(c)) GTEST_SKIP() << c.err;
  expect_sane_run(c);
  EXPECT_NE(c.out.find("Device:      cpu (--device=cpu)"), std::string::npos) << c.out;
}

TEST(CnnbenchBinary, SmallResnet50OnTheCpuEndToEnd) {
  const Child c = run_cnnbench(
      "--device=cpu --model=resnet50 --batch_size=2 --num_batches=3 --num_warmup_batches=1 "
      "--image_size=32");
  if (cpu_backend_missing(c)) GTEST_SKIP() << c.err;
  expect_sane_run(c);
}

}  // namespace
