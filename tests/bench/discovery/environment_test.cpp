// Environment: collected from fake sources (environment variables, files, host
// name, core counts) and formatted as header lines.
#include "bench/discovery/environment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace cnnbench::bench {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kCpuinfo =
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8488C\n"
    "flags\t\t: fpu vme\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8488C\n";
constexpr const char* kDriver =
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";

EnvironmentSources fake(std::map<std::string, std::string> env, std::map<std::string, std::string> files) {
  EnvironmentSources s;
  s.env = [env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  s.read_file = [files](const std::string& path) -> std::optional<std::string> {
    const auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  s.host_name = [] { return std::string("ip-10-0-1-23"); };
  s.online_cores = [] { return 192; };
  s.usable_cores = [] { return 96; };
  return s;
}

kernels::GpuEnumeration gpus() {
  kernels::GpuEnumeration g;
  g.built_with_cuda = true;
  g.driver_version = 12040;
  g.runtime_version = 13000;
  return g;
}

TEST(Environment, CollectsAnEcsGpuHost) {
  const auto sources = fake({{"ECS_CONTAINER_METADATA_URI_V4", "http://169.254.170.2/v4/0123abcd-4567"},
                             {"AWS_EXECUTION_ENV", "AWS_ECS_EC2"},
                             {"AWS_REGION", "us-east-1"},
                             {"NVIDIA_VISIBLE_DEVICES", "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab"}},
                            {{"/proc/cpuinfo", kCpuinfo}, {"/proc/driver/nvidia/version", kDriver}});
  Environment e = collect_environment(sources, gpus(), {.cudnn = "9.19.0", .cublas = "13.0.2"});
  e.versions.nccl = "2.28.9";  // from mpi::nccl_library_version(), as the program fills it
  EXPECT_EQ(e.host_name, "ip-10-0-1-23");
  EXPECT_EQ(e.cpu_model, "Intel(R) Xeon(R) Platinum 8488C");
  EXPECT_EQ(e.logical_cores, 192);
  EXPECT_EQ(e.usable_cores, 96);
  EXPECT_TRUE(e.in_ecs);
  EXPECT_EQ(e.ecs_metadata_uri, "http://169.254.170.2/v4/0123abcd-4567");
  EXPECT_EQ(e.aws_execution_env, "AWS_ECS_EC2");
  EXPECT_EQ(e.aws_region, "us-east-1");
  EXPECT_EQ(e.nvidia_visible_devices, "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab");
  EXPECT_EQ(e.cuda_visible_devices, std::nullopt);
  EXPECT_FALSE(e.versions.cnnbench.empty());
  EXPECT_EQ(e.versions.nvidia_driver, "550.54.15");
  EXPECT_EQ(e.versions.cuda_driver, "12.4");
  EXPECT_EQ(e.versions.cuda_runtime, "13.0");
  EXPECT_EQ(e.versions.cudnn, "9.19.0");
  EXPECT_EQ(e.versions.nccl, "2.28.9");

  const auto lines = format_environment(e);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0], "Host:        ip-10-0-1-23 (Amazon ECS, AWS_ECS_EC2, us-east-1)");
  EXPECT_EQ(lines[1], "CPU:         Intel(R) Xeon(R) Platinum 8488C, 192 logical cores (96 usable by this process)");
  EXPECT_THAT(lines[2], AllOf(HasSubstr("Versions:    cnnbench "), HasSubstr("NVIDIA driver 550.54.15 (CUDA 12.4)"),
                              HasSubstr("CUDA runtime 13.0"), HasSubstr("cuDNN 9.19.0"), HasSubstr("cuBLAS 13.0.2"),
                              HasSubstr("NCCL 2.28.9")));
}

TEST(Environment, OpenKernelModuleVersion) {
  const auto sources = fake({}, {{"/proc/driver/nvidia/version",
                                  "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release "
                                  "Build  (dvs-builder@U16-T02-35-3)  Sat Aug 19 01:13:28 UTC 2023\n"}});
  EXPECT_EQ(collect_environment(sources, gpus(), {}).versions.nvidia_driver, "535.104.05");
}

TEST(Environment, BareCpuHostWithoutAnything) {
  EnvironmentSources none;  // no source at all
  kernels::GpuEnumeration no_cuda;
  const Environment e = collect_environment(none, no_cuda, {});
  EXPECT_FALSE(e.in_ecs);
  EXPECT_TRUE(e.cpu_model.empty());
  EXPECT_TRUE(e.versions.cuda_driver.empty());
  const auto lines = format_environment(e);
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_EQ(lines[0], "Host:        unknown");
  EXPECT_EQ(lines[1], "CPU:         unknown model, 0 logical cores");
  EXPECT_THAT(lines[2], AllOf(HasSubstr("cnnbench"), Not(HasSubstr("NVIDIA driver")), Not(HasSubstr("cuDNN"))));
}

TEST(Environment, RegionFallsBackAndBatchIsNamed) {
  const auto sources = fake({{"AWS_DEFAULT_REGION", "eu-west-1"}, {"AWS_BATCH_JOB_ID", "job-42#1"}}, {});
  const Environment e = collect_environment(sources, gpus(), {});
  EXPECT_EQ(e.aws_region, "eu-west-1");
  EXPECT_FALSE(e.in_ecs);
  EXPECT_EQ(format_environment(e)[0], "Host:        ip-10-0-1-23 (AWS Batch job job-42#1, eu-west-1)");
}

TEST(Environment, SystemSourcesWork) {
  const EnvironmentSources s = system_sources();
  EXPECT_FALSE(s.host_name().empty());
  EXPECT_GE(s.online_cores(), 1);
  EXPECT_GE(s.usable_cores(), 1);
  EXPECT_LE(s.usable_cores(), s.online_cores());
  EXPECT_TRUE(s.read_file("/proc/cpuinfo").has_value());
  EXPECT_FALSE(s.read_file("/nonexistent/cnnbench").has_value());
  EXPECT_TRUE(s.env("PATH").has_value());
  EXPECT_FALSE(s.env("CNNBENCH_SURELY_UNSET_VARIABLE").has_value());
}

}  // namespace
}  // namespace cnnbench::bench
