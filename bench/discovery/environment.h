// Where a run happens: host, CPU, container orchestrator and library versions,
// for the header and the result JSON. Every source (environment variables,
// files, host name, core counts) is injectable so tests can fake a host.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gpu_info.h"
#include "mpi/launch.h"

namespace cnnbench::bench {

/// Reads an environment variable; std::nullopt when unset. The process's own is
/// mpi::process_environment() (main thread only, before other threads start).
using EnvLookup = mpi::EnvLookup;
/// Reads a whole (small) file; std::nullopt when it cannot be read.
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

/// Where collect_environment looks. system_sources() gives the real ones.
struct EnvironmentSources {
  EnvLookup env;
  FileReader read_file;
  std::function<std::string()> host_name;  ///< gethostname()
  std::function<int()> online_cores;       ///< logical CPUs online (sysconf)
  std::function<int()> usable_cores;       ///< logical CPUs in this process's affinity mask
};

/// This process's environment, /proc files, gethostname, sysconf and sched_getaffinity.
EnvironmentSources system_sources();

/// Versions of everything a result depends on; empty when not known or not built in.
struct Versions {
  std::string cnnbench;       ///< this program, "0.1.0"
  std::string nvidia_driver;  ///< kernel module, "550.54.15" (/proc/driver/nvidia/version)
  std::string cuda_driver;    ///< newest CUDA the driver supports, "12.4"
  std::string cuda_runtime;   ///< CUDA runtime linked in, "13.0"
  std::string cudnn, cublas;  ///< "major.minor.patch", from kernels::library_versions()
  std::string nccl;           ///< filled by the caller from mpi/ when known
  std::string onednn;         ///< filled by the caller from the CPU backend when known
  std::string mpi;            ///< filled by the caller from mpi/ when known
};

/// The host and the software a run used.
struct Environment {
  std::string host_name;
  std::string cpu_model;  ///< /proc/cpuinfo "model name"; empty when not found (e.g. Arm)
  int logical_cores = 0;  ///< online logical CPUs of the host
  int usable_cores = 0;   ///< logical CPUs this process may run on (cpuset, taskset)
  /// Inside an Amazon ECS task: ECS_CONTAINER_METADATA_URI_V4 is set. The task
  /// ARN is only available from that endpoint over HTTP, which is not queried.
  bool in_ecs = false;
  std::string ecs_metadata_uri;   ///< ECS_CONTAINER_METADATA_URI_V4
  std::string aws_execution_env;  ///< AWS_EXECUTION_ENV, e.g. "AWS_ECS_EC2"
  std::string aws_region;         ///< AWS_REGION, else AWS_DEFAULT_REGION
  std::string aws_batch_job_id;   ///< AWS_BATCH_JOB_ID (AWS Batch, multi-node jobs)
  std::optional<std::string> nvidia_visible_devices;  ///< as set, for the record
  std::optional<std::string> cuda_visible_devices;
  /// CNNBENCH_FAULT_INJECT_FLIP_BIT: a fault injector for the tests of the
  /// replica check (bench/replica_check.h); never in the result JSON.
  std::string fault_flip_bit;
  Versions versions;
};

/// Collects the Environment. `gpus` and `libraries` come from kernels::enumerate_gpus()
/// and kernels::library_versions(). Missing sources leave fields empty; never throws
/// but std::bad_alloc.
Environment collect_environment(const EnvironmentSources& sources, const kernels::GpuEnumeration& gpus,
                                const kernels::LibraryVersions& libraries);

/// Header lines in the tf_cnn_benchmarks layout (label padded to 13 columns), no
/// trailing newline:
///   Host:        ip-10-0-1-23 (Amazon ECS, AWS_ECS_EC2, us-east-1)
///   CPU:         Intel(R) Xeon(R) Platinum 8488C, 192 logical cores
///   Versions:    cnnbench 0.1.0, NVIDIA driver 550.54.15 (CUDA 12.4), CUDA runtime 13.0, ...
std::vector<std::string> format_environment(const Environment& environment);

}  // namespace cnnbench::bench
