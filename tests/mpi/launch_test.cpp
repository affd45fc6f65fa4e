// Launch detection from the launchers' environment variables, and the choice
// of communicator that follows.
#include "mpi/launch.h"

#include <gtest/gtest.h>

#include <map>
#include <ostream>
#include <stdexcept>
#include <string>

namespace cnnbench::mpi {
namespace {

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

struct LaunchCase {
  const char* name;
  std::map<std::string, std::string> env;
  Launcher launcher;
  int world_size;
  int rank;
  int local_rank;
  int local_size;
  bool needs_transport;
};

// Names the case in test listings instead of dumping its bytes.
void PrintTo(const LaunchCase& c, std::ostream* os) { *os << c.name; }

class LaunchTable : public ::testing::TestWithParam<LaunchCase> {};

TEST_P(LaunchTable, DetectsLauncherAndRanks) {
  const LaunchCase& c = GetParam();
  const LaunchInfo info = detect_launch(fake_env(c.env));
  EXPECT_EQ(info.launcher, c.launcher);
  EXPECT_EQ(info.world_size, c.world_size);
  EXPECT_EQ(info.rank, c.rank);
  EXPECT_EQ(info.local_rank, c.local_rank);
  EXPECT_EQ(info.local_size, c.local_size);
  EXPECT_EQ(info.needs_transport(), c.needs_transport);
  EXPECT_EQ(info.launched(), c.launcher != Launcher::None);
}

const LaunchCase kCases[] = {
    {.name = "none",
     .env = {},
     .launcher = Launcher::None,
     .world_size = 1,
     .rank = 0,
     .local_rank = 0,
     .local_size = 1,
     .needs_transport = false},
    {.name = "unrelated_variables",
     .env = {{"HOME", "/root"}, {"CUDA_VISIBLE_DEVICES", "0,1"}},
     .launcher = Launcher::None,
     .world_size = 1,
     .rank = 0,
     .local_rank = 0,
     .local_size = 1,
     .needs_transport = false},
    {.name = "open_mpi_4_ranks",
     .env = {{"OMPI_COMM_WORLD_SIZE", "4"},
             {"OMPI_COMM_WORLD_RANK", "2"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
             {"PMIX_RANK", "2"}},
     .launcher = Launcher::OpenMpi,
     .world_size = 4,
     .rank = 2,
     .local_rank = 0,
     .local_size = 2,
     .needs_transport = true},
    {.name = "open_mpi_one_rank",
     .env = {{"OMPI_COMM_WORLD_SIZE", "1"},
             {"OMPI_COMM_WORLD_RANK", "0"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}},
     .launcher = Launcher::OpenMpi,
     .world_size = 1,
     .rank = 0,
     .local_rank = 0,
     .local_size = 1,
     .needs_transport = false},
    {.name = "open_mpi_without_local_variables",
     .env = {{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "7"}},
     .launcher = Launcher::OpenMpi,
     .world_size = 8,
     .rank = 7,
     .local_rank = -1,
     .local_size = 0,
     .needs_transport = true},
    {.name = "open_mpi_wins_over_slurm",
     .env = {{"OMPI_COMM_WORLD_SIZE", "2"},
             {"OMPI_COMM_WORLD_RANK", "1"},
             {"SLURM_STEP_NUM_TASKS", "16"},
             {"SLURM_PROCID", "9"}},
     .launcher = Launcher::OpenMpi,
     .world_size = 2,
     .rank = 1,
     .local_rank = -1,
     .local_size = 0,
     .needs_transport = true},
    {.name = "pmi_hydra",
     .env =
         {{"PMI_SIZE", "3"}, {"PMI_RANK", "1"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "3"}},
     .launcher = Launcher::Pmi,
     .world_size = 3,
     .rank = 1,
     .local_rank = 1,
     .local_size = 3,
     .needs_transport = true},
    {.name = "slurm_srun",
     .env = {{"SLURM_STEP_NUM_TASKS", "8"},
             {"SLURM_PROCID", "5"},
             {"SLURM_LOCALID", "1"},
             {"SLURM_NTASKS", "8"}},
     .launcher = Launcher::Slurm,
     .world_size = 8,
     .rank = 5,
     .local_rank = 1,
     .local_size = 0,
     .needs_transport = true},
    {.name = "slurm_srun_with_pmix",
     .env = {{"SLURM_STEP_NUM_TASKS", "2"},
             {"SLURM_PROCID", "0"},
             {"SLURM_LOCALID", "0"},
             {"PMIX_RANK", "0"}},
     .launcher = Launcher::Slurm,
     .world_size = 2,
     .rank = 0,
     .local_rank = 0,
     .local_size = 0,
     .needs_transport = true},
    // srun -N 2 --ntasks-per-node=8 --mpi=pmix, the second task on the second node.
    {.name = "slurm_srun_two_nodes",
     .env = {{"SLURM_STEP_NUM_TASKS", "16"},
             {"SLURM_NTASKS", "16"},
             {"SLURM_PROCID", "9"},
             {"SLURM_LOCALID", "1"},
             {"SLURM_NODEID", "1"},
             {"SLURM_STEP_NUM_NODES", "2"},
             {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"},
             {"PMIX_RANK", "9"}},
     .launcher = Launcher::Slurm,
     .world_size = 16,
     .rank = 9,
     .local_rank = 1,
     .local_size = 8,
     .needs_transport = true},
    // srun -n 7 over 4 nodes: 2, 2, 2 and 1 tasks; the task of the last node.
    {.name = "slurm_srun_uneven_nodes",
     .env = {{"SLURM_STEP_NUM_TASKS", "7"},
             {"SLURM_PROCID", "6"},
             {"SLURM_LOCALID", "0"},
             {"SLURM_NODEID", "3"},
             {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}},
     .launcher = Launcher::Slurm,
     .world_size = 7,
     .rank = 6,
     .local_rank = 0,
     .local_size = 1,
     .needs_transport = true},
    {.name = "slurm_srun_first_node_of_uneven",
     .env = {{"SLURM_STEP_NUM_TASKS", "7"},
             {"SLURM_PROCID", "1"},
             {"SLURM_LOCALID", "1"},
             {"SLURM_NODEID", "0"},
             {"SLURM_STEP_TASKS_PER_NODE", "2(x3),1"}},
     .launcher = Launcher::Slurm,
     .world_size = 7,
     .rank = 1,
     .local_rank = 1,
     .local_size = 2,
     .needs_transport = true},
    {.name = "slurm_batch_script_is_no_launch",
     .env = {{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "123"}},
     .launcher = Launcher::None,
     .world_size = 1,
     .rank = 0,
     .local_rank = 0,
     .local_size = 1,
     .needs_transport = false},
    {.name = "pmix_only",
     .env = {{"PMIX_RANK", "3"}},
     .launcher = Launcher::Pmix,
     .world_size = 0,
     .rank = 3,
     .local_rank = -1,
     .local_size = 0,
     .needs_transport = true},
    {.name = "spaces_around_numbers",
     .env = {{"OMPI_COMM_WORLD_SIZE", " 2\n"}, {"OMPI_COMM_WORLD_RANK", "1 "}},
     .launcher = Launcher::OpenMpi,
     .world_size = 2,
     .rank = 1,
     .local_rank = -1,
     .local_size = 0,
     .needs_transport = true},
};

INSTANTIATE_TEST_SUITE_P(Launchers, LaunchTable, ::testing::ValuesIn(kCases),
                         [](const auto& test_case) { return std::string(test_case.param.name); });

TEST(Launch, EvidenceNamesTheVariables) {
  const LaunchInfo info =
      detect_launch(fake_env({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "3"}}));
  EXPECT_EQ(info.evidence, "OMPI_COMM_WORLD_SIZE=4, OMPI_COMM_WORLD_RANK=3");
  const LaunchInfo slurm = detect_launch(fake_env({{"SLURM_STEP_NUM_TASKS", "16"},
                                                   {"SLURM_PROCID", "9"},
                                                   {"SLURM_LOCALID", "1"},
                                                   {"SLURM_NODEID", "1"},
                                                   {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"}}));
  EXPECT_EQ(slurm.evidence,
            "SLURM_STEP_NUM_TASKS=16, SLURM_PROCID=9, SLURM_LOCALID=1, SLURM_NODEID=1, "
            "SLURM_STEP_TASKS_PER_NODE=8(x2)");
}

void expect_invalid(std::map<std::string, std::string> env, const std::string& needle) {
  try {
    (void)detect_launch(fake_env(std::move(env)));
    ADD_FAILURE() << "no exception; expected one mentioning " << needle;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Launch, RejectsMalformedOrContradictoryValues) {
  expect_invalid({{"OMPI_COMM_WORLD_SIZE", "four"}, {"OMPI_COMM_WORLD_RANK", "0"}},
                 "OMPI_COMM_WORLD_SIZE='four'");
  expect_invalid({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "-1"}},
                 "OMPI_COMM_WORLD_RANK='-1'");
  expect_invalid({{"PMI_SIZE", ""}, {"PMI_RANK", "0"}}, "PMI_SIZE=''");
  expect_invalid({{"PMI_SIZE", "2x"}, {"PMI_RANK", "0"}}, "PMI_SIZE='2x'");
  expect_invalid({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "2"}},
                 "rank 2 is not below its world size 2");
  expect_invalid({{"SLURM_STEP_NUM_TASKS", "0"}, {"SLURM_PROCID", "0"}}, "0 ranks");
  expect_invalid({{"OMPI_COMM_WORLD_SIZE", "4"},
                  {"OMPI_COMM_WORLD_RANK", "0"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}},
                 "local rank 3 is not below its local size 2");
  expect_invalid({{"OMPI_COMM_WORLD_SIZE", "2"},
                  {"OMPI_COMM_WORLD_RANK", "0"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}},
                 "more ranks on this host than in the job");
  const std::map<std::string, std::string> slurm = {
      {"SLURM_STEP_NUM_TASKS", "16"}, {"SLURM_PROCID", "9"}, {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"}};
  const auto with = [&slurm](const char* per_node, const char* node_id = "1") {
    auto env = slurm;
    env["SLURM_STEP_TASKS_PER_NODE"] = per_node;
    env["SLURM_NODEID"] = node_id;
    return env;
  };
  expect_invalid(with("eight"), "SLURM_STEP_TASKS_PER_NODE='eight' set by srun is not a list of task counts");
  expect_invalid(with("8(x2"), "SLURM_STEP_TASKS_PER_NODE='8(x2' set by srun has a malformed repeat");
  expect_invalid(with("8(y2)"), "has a malformed repeat");
  expect_invalid(with("8(x0)"), "has a malformed repeat");
  expect_invalid(with("0(x2)"), "is not a list of task counts");
  expect_invalid(with("8,"), "is not a list of task counts");
  expect_invalid(with("8(x2)", "2"), "lists 2 nodes, but SLURM_NODEID is 2");
  expect_invalid(with("1(x2)"), "local rank 1 is not below its local size 1");
  expect_invalid(with("8(x2)", "one"), "SLURM_NODEID='one'");
}

TEST(Launch, ProcessEnvironmentReadsGetenv) {
  ::setenv("CNNBENCH_LAUNCH_TEST_VARIABLE", "value 1", 1);
  const EnvLookup env = process_environment();
  EXPECT_EQ(env("CNNBENCH_LAUNCH_TEST_VARIABLE"), "value 1");
  ::unsetenv("CNNBENCH_LAUNCH_TEST_VARIABLE");
  EXPECT_EQ(env("CNNBENCH_LAUNCH_TEST_VARIABLE"), std::nullopt);
}

TEST(MakeCommunicator, SingleWorkerWithoutLauncherWhateverWanted) {
  for (const auto kind :
       {CommunicatorKind::Single, CommunicatorKind::Mpi, CommunicatorKind::Nccl}) {
    const auto comm = make_communicator(LaunchInfo{}, kind);
    EXPECT_EQ(comm->name(), "single");
    EXPECT_EQ(comm->world_size(), 1);
  }
}

TEST(MakeCommunicator, SingleWorkerForOneLaunchedRank) {
  const LaunchInfo one =
      detect_launch(fake_env({{"OMPI_COMM_WORLD_SIZE", "1"}, {"OMPI_COMM_WORLD_RANK", "0"}}));
  const auto comm = make_communicator(one, CommunicatorKind::Nccl);
  EXPECT_EQ(comm->name(), "single");
}

TEST(MakeCommunicator, SingleUnderSeveralRanksIsAnError) {
  const LaunchInfo four =
      detect_launch(fake_env({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "0"}}));
  try {
    (void)make_communicator(four, CommunicatorKind::Single);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("OMPI_COMM_WORLD_SIZE=4"), std::string::npos) << e.what();
  }
}

TEST(MakeCommunicator, NotBuiltWithMpiMessageGivesTheFix) {
  const LaunchInfo four =
      detect_launch(fake_env({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "1"}}));
  const std::string message = not_built_with_mpi_message(four);
  EXPECT_NE(message.find("Open MPI as one of 4 ranks"), std::string::npos) << message;
  EXPECT_NE(message.find("-DCNNBENCH_MPI=ON"), std::string::npos) << message;
  EXPECT_NE(message.find("libopenmpi-dev"), std::string::npos) << message;
  EXPECT_NE(message.find("without mpirun"), std::string::npos) << message;
  if (!mpi_built()) {
    // The stand-in answers with exactly this message.
    try {
      (void)make_communicator(four, CommunicatorKind::Mpi);
      ADD_FAILURE() << "no exception";
    } catch (const CommunicatorUnavailable& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST(GpuForLocalRank, LocalRankOrTheOnlyGpu) {
  EXPECT_EQ(gpu_for_local_rank(0, 4, 4), 0);
  EXPECT_EQ(gpu_for_local_rank(3, 4, 8), 3);
  EXPECT_EQ(gpu_for_local_rank(2, 4, 1), 0);  // one GPU bound to each rank by the launcher
  EXPECT_EQ(gpu_for_local_rank(0, 1, 1), 0);
  EXPECT_EQ(gpu_for_local_rank(2, 4, 2), -1);  // more ranks than GPUs
  EXPECT_EQ(gpu_for_local_rank(0, 2, 0), -1);
}

TEST(Launch, Names) {
  EXPECT_STREQ(to_string(Launcher::OpenMpi), "Open MPI");
  EXPECT_STREQ(to_string(Launcher::Slurm), "Slurm srun");
  EXPECT_STREQ(to_string(CommunicatorKind::Nccl), "nccl");
  EXPECT_STREQ(to_string(CommunicatorKind::Mpi), "mpi");
}

}  // namespace
}  // namespace cnnbench::mpi
