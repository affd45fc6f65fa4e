// Preflight checks over made-up hosts: every finding says what is wrong, with
// the values found, and how to fix it.
#include "bench/discovery/preflight.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace cnnbench::bench::preflight {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

mpi::EnvLookup fake_env(std::map<std::string, std::string> vars = {}) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

HostFacts docker_host(uint64_t shm_bytes) {
  HostFacts host;
  host.shm_bytes = shm_bytes;
  host.in_container = true;
  host.interfaces = {"lo", "eth0"};
  host.effective_uid = 0;
  return host;
}

TEST(ShmBytesNeeded, GrowsWithTheGpusOfTheHost) {
  EXPECT_EQ(shm_bytes_needed(0), 0U);
  EXPECT_EQ(shm_bytes_needed(1), 0U);
  EXPECT_EQ(shm_bytes_needed(2), 76'800'000U);  // already above Docker's 64 MiB
  EXPECT_GT(shm_bytes_needed(2), 64 * kMiB);
  EXPECT_EQ(shm_bytes_needed(8), 4 * shm_bytes_needed(2));
  EXPECT_LT(shm_bytes_needed(8), 1024 * kMiB);  // NCCL's 1 GiB advice covers 8 GPUs
}

TEST(CheckShm, DockerDefaultWithFourGpusWarnsWithDockerAndEcsFixes) {
  const auto f = check_shm(docker_host(64 * kMiB), 4, fake_env());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->check, "shm");
  EXPECT_TRUE(contains(f->problem, "/dev/shm is 64 MiB")) << f->problem;
  EXPECT_TRUE(contains(f->problem, "146 MiB")) << f->problem;
  EXPECT_TRUE(contains(f->problem, "4 GPUs")) << f->problem;
  EXPECT_TRUE(contains(f->fix, "--shm-size=1g")) << f->fix;
  EXPECT_TRUE(contains(f->fix, "linuxParameters.sharedMemorySize")) << f->fix;
}

TEST(CheckShm, ErrorWhenPeerToPeerIsOffAndEcsFixFirstInEcs) {
  HostFacts host = docker_host(64 * kMiB);
  host.in_ecs = true;
  const auto f = check_shm(host, 2, fake_env({{"NCCL_P2P_DISABLE", "1"}}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_TRUE(contains(f->problem, "No space left on device")) << f->problem;
  EXPECT_EQ(f->fix.rfind("in the ECS task definition", 0), 0U) << f->fix;
}

TEST(CheckShm, NothingWhenLargeEnoughOneGpuOrShmDisabled) {
  EXPECT_FALSE(check_shm(docker_host(1024 * kMiB), 8, fake_env()));
  EXPECT_FALSE(check_shm(docker_host(64 * kMiB), 1, fake_env()));
  EXPECT_FALSE(check_shm(docker_host(64 * kMiB), 8, fake_env({{"NCCL_SHM_DISABLE", "1"}})));
}

TEST(CheckShm, MissingShmAndBareMetalFix) {
  HostFacts host;
  host.in_container = false;
  const auto missing = check_shm(host, 2, fake_env());
  ASSERT_TRUE(missing);
  EXPECT_TRUE(contains(missing->problem, "does not exist")) << missing->problem;
  host.shm_bytes = 32 * kMiB;
  const auto small = check_shm(host, 2, fake_env());
  ASSERT_TRUE(small);
  EXPECT_TRUE(contains(small->fix, "mount -o remount,size=1G /dev/shm")) << small->fix;
}

TEST(CheckDuplicateGpus, NamesBothRanksAndTheUuid) {
  const auto f = check_duplicate_gpus({"GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab",
                                       "GPU-5D5B1C7E-1F8A-4C4E-9A3B-0123456789AB", "GPU-aaaa"},
                                      {"ip-10-0-1-23", "ip-10-0-1-23", "ip-10-0-1-23"});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_EQ(f->check, "duplicate_gpu");
  EXPECT_EQ(
      f->problem,
      "ranks 0 and 1 both use GPU GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab on host ip-10-0-1-23");
  EXPECT_TRUE(contains(f->fix, "Duplicate GPU detected")) << f->fix;
}

TEST(CheckDuplicateGpus, SeveralSharedGpusAndThreeRanksOnOne) {
  const auto f = check_duplicate_gpus({"GPU-a", "GPU-b", "GPU-a", "GPU-b", "GPU-a"});
  ASSERT_TRUE(f);
  EXPECT_TRUE(contains(f->problem, "ranks 0 and 2 and 4 both use GPU GPU-a")) << f->problem;
  EXPECT_TRUE(contains(f->problem, "ranks 1 and 3 both use GPU GPU-b")) << f->problem;
}

TEST(CheckDuplicateGpus, DistinctOrUnknownIsFine) {
  EXPECT_FALSE(check_duplicate_gpus({"GPU-a", "GPU-b", "GPU-c"}));
  EXPECT_FALSE(check_duplicate_gpus({"", ""}));
  EXPECT_FALSE(check_duplicate_gpus({}));
}

TEST(CheckLocalGpus, MoreRanksThanGpus) {
  const auto f = check_local_gpus(4, 2);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_TRUE(
      contains(f->problem, "4 ranks were started on this host but this process sees 2 GPUs"))
      << f->problem;
  EXPECT_TRUE(contains(f->problem, "local ranks 2..3 would have no GPU")) << f->problem;
  EXPECT_TRUE(contains(f->fix, "mpirun -np 2")) << f->fix;
  const auto one_short = check_local_gpus(3, 2);
  ASSERT_TRUE(one_short);
  EXPECT_TRUE(contains(one_short->problem, "local rank 2 would have no GPU")) << one_short->problem;
  EXPECT_FALSE(check_local_gpus(4, 4));
  EXPECT_FALSE(check_local_gpus(1, 0));
  EXPECT_FALSE(check_local_gpus(4, 1));  // one GPU bound per rank by the launcher
}

TEST(CheckMpiBuilt, LaunchedWithoutMpiGivesTheRebuild) {
  mpi::LaunchInfo launch;
  launch.launcher = mpi::Launcher::OpenMpi;
  launch.world_size = 4;
  launch.evidence = "OMPI_COMM_WORLD_SIZE=4";
  const auto f = check_mpi_built(launch, false);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_TRUE(contains(f->problem, "Open MPI as one of 4 ranks (OMPI_COMM_WORLD_SIZE=4)"))
      << f->problem;
  EXPECT_TRUE(contains(f->fix, "-DCNNBENCH_MPI=ON")) << f->fix;
  EXPECT_FALSE(check_mpi_built(launch, true));
  EXPECT_FALSE(check_mpi_built(mpi::LaunchInfo{}, false));
  launch.world_size = 1;
  EXPECT_FALSE(check_mpi_built(launch, false));  // mpirun -np 1 needs no transport
}

TEST(CheckRunAsRoot, HalfGivenPermissionIsExplained) {
  const mpi::LaunchInfo alone;
  const auto f = check_run_as_root(0, alone, fake_env({{"OMPI_ALLOW_RUN_AS_ROOT", "1"}}));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_TRUE(contains(f->problem, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM unset")) << f->problem;
  EXPECT_TRUE(contains(f->fix, "mpirun has detected an attempt to run as root")) << f->fix;
  EXPECT_TRUE(contains(f->fix, "--allow-run-as-root")) << f->fix;
  const auto wrong = check_run_as_root(
      0, alone,
      fake_env({{"OMPI_ALLOW_RUN_AS_ROOT", "yes"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}}));
  ASSERT_TRUE(wrong);
  EXPECT_TRUE(contains(wrong->problem, "OMPI_ALLOW_RUN_AS_ROOT='yes'")) << wrong->problem;
}

TEST(CheckRunAsRoot, NothingWhenAllowedOrNotRoot) {
  const mpi::LaunchInfo alone;
  const auto both =
      fake_env({{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
  EXPECT_FALSE(check_run_as_root(0, alone, both));
  EXPECT_FALSE(check_run_as_root(0, alone, fake_env()));
  EXPECT_FALSE(check_run_as_root(1000, alone, fake_env({{"OMPI_ALLOW_RUN_AS_ROOT", "1"}})));
  EXPECT_TRUE(contains(explain_mpirun_root_refusal(), "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"));
}

TEST(CheckNcclEnv, SocketInterfaceThatDoesNotExist) {
  const std::vector<std::string> interfaces{"lo", "eth0", "docker0"};
  const auto findings = check_nccl_env(fake_env({{"NCCL_SOCKET_IFNAME", "ens5"}}), interfaces);
  ASSERT_EQ(findings.size(), 1U);
  EXPECT_EQ(findings[0].severity, Severity::Warning);
  EXPECT_TRUE(contains(findings[0].problem, "NCCL_SOCKET_IFNAME='ens5' matches none"))
      << findings[0].problem;
  EXPECT_TRUE(contains(findings[0].problem, "lo, eth0, docker0")) << findings[0].problem;
  EXPECT_TRUE(contains(findings[0].fix, "NCCL_SOCKET_IFNAME=eth0")) << findings[0].fix;
}

TEST(CheckNcclEnv, SocketInterfaceSyntax) {
  const std::vector<std::string> interfaces{"lo", "eth0", "eth1"};
  for (const char* fine : {"eth", "eth0", "=eth1", "^docker,lo", "ens,eth", " eth0 "}) {
    EXPECT_TRUE(check_nccl_env(fake_env({{"NCCL_SOCKET_IFNAME", fine}}), interfaces).empty())
        << fine;
  }
  for (const char* wrong : {"=eth", "^eth,lo", "", "^"}) {
    EXPECT_EQ(check_nccl_env(fake_env({{"NCCL_SOCKET_IFNAME", wrong}}), interfaces).size(), 1U)
        << wrong;
  }
  // Interfaces not known: nothing to compare with.
  EXPECT_TRUE(check_nccl_env(fake_env({{"NCCL_SOCKET_IFNAME", "ens5"}}), {}).empty());
}

TEST(CheckNcclEnv, LevelsSwitchesAndDebug) {
  const std::vector<std::string> none;
  EXPECT_TRUE(
      check_nccl_env(
          fake_env({{"NCCL_P2P_LEVEL", "nvl"}, {"NCCL_DEBUG", "INFO"}, {"NCCL_IB_DISABLE", "1"}}),
          none)
          .empty());
  EXPECT_EQ(check_nccl_env(fake_env({{"NCCL_P2P_LEVEL", "NVLINK"}}), none).size(), 1U);
  EXPECT_EQ(check_nccl_env(fake_env({{"NCCL_DEBUG", "verbose"}}), none).size(), 1U);
  EXPECT_EQ(check_nccl_env(fake_env({{"NCCL_SHM_DISABLE", "yes"}}), none).size(), 1U);
  const auto p2p = check_nccl_env(fake_env({{"NCCL_P2P_DISABLE", "1"}}), none);
  ASSERT_EQ(p2p.size(), 1U);
  EXPECT_TRUE(contains(p2p[0].problem, "through host memory")) << p2p[0].problem;
  const auto both =
      check_nccl_env(fake_env({{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}}), none);
  ASSERT_EQ(both.size(), 1U);
  EXPECT_TRUE(contains(both[0].problem, "network stack")) << both[0].problem;
}

TEST(RunLocalChecks, CollectsWhatApplies) {
  LocalInputs in;
  in.host = docker_host(64 * kMiB);
  in.launch.launcher = mpi::Launcher::OpenMpi;
  in.launch.world_size = 4;
  in.launch.evidence = "OMPI_COMM_WORLD_SIZE=4";
  in.env = fake_env({{"NCCL_SOCKET_IFNAME", "ens5"}});
  in.mpi_built = true;
  in.uses_nccl = true;
  in.local_gpus = 4;
  in.local_ranks = 4;
  in.visible_gpus = 2;
  const auto findings = run_local_checks(in);
  ASSERT_EQ(findings.size(), 3U);
  EXPECT_EQ(findings[0].check, "local_gpus");
  EXPECT_EQ(findings[1].check, "shm");
  EXPECT_EQ(findings[2].check, "nccl_env");
  EXPECT_TRUE(has_error(findings));
  EXPECT_EQ(format(findings[0]).rfind("error: 4 ranks were started", 0), 0U) << format(findings[0]);
  EXPECT_TRUE(contains(format(findings[0]), ". Fix: start at most 2 ranks per host"));

  in.uses_nccl = false;  // CPU ranks: the NCCL checks do not apply
  EXPECT_TRUE(run_local_checks(in).empty());
}

TEST(GatherHostFacts, ReadsThisHost) {
  const HostFacts facts =
      gather_host_facts(fake_env({{"ECS_CONTAINER_METADATA_URI_V4", "http://x"}}));
  EXPECT_TRUE(facts.in_ecs);
  EXPECT_TRUE(facts.in_container);
  // Every Linux host has a loopback interface.
  EXPECT_NE(std::find(facts.interfaces.begin(), facts.interfaces.end(), "lo"),
            facts.interfaces.end());
}

}  // namespace
}  // namespace cnnbench::bench::preflight
