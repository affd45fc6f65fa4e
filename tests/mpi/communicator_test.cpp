// The single worker, the interface's default methods, the hang hint and the
// stand-ins of transports that are not built.
#include "mpi/communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi/launch.h"
#include "mpi/local_group.h"
#include "mpi/nccl_hint.h"

namespace cnnbench::mpi {
namespace {

using kernels::DType;

TEST(SingleWorker, IsAWorldOfOne) {
  const auto comm = make_single_worker();
  EXPECT_EQ(comm->name(), "single");
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->world_size(), 1);
  EXPECT_EQ(comm->local_rank(), 0);
  EXPECT_EQ(comm->local_size(), 1);
  std::vector<float> data{1.5F, -2.0F};
  comm->all_reduce_sum(data.data(), 2, DType::F32, nullptr);
  comm->all_reduce_average(data.data(), 2, DType::F32, nullptr);
  EXPECT_EQ(data, (std::vector<float>{1.5F, -2.0F}));
  EXPECT_EQ(comm->all_gather("GPU-1234"), std::vector<std::string>{"GPU-1234"});
  EXPECT_EQ(comm->broadcast("id", 0), "id");
  EXPECT_THROW((void)comm->broadcast("id", 1), std::invalid_argument);
  comm->barrier();
  EXPECT_NO_THROW(comm->wait(nullptr, std::chrono::seconds(1)));
  int not_a_stream = 0;
  EXPECT_THROW(comm->wait(&not_a_stream, std::chrono::seconds(1)), std::invalid_argument);
}

/// Two ranks whose peer always holds 1.0 in every element.
class PeerOfOnes final : public Communicator {
 public:
  [[nodiscard]] std::string name() const override { return "ones"; }
  [[nodiscard]] int rank() const override { return 1; }
  [[nodiscard]] int world_size() const override { return 2; }
  [[nodiscard]] int local_rank() const override { return 1; }
  [[nodiscard]] int local_size() const override { return 2; }
  void all_reduce_sum(void* data, int64_t count, DType /*dtype*/, void* /*stream*/) override {
    for (int64_t i = 0; i < count; ++i) static_cast<float*>(data)[i] += 1.0F;
  }
  std::vector<std::string> all_gather(const std::string& value) override { return {"zero", value}; }
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

TEST(CommunicatorDefaults, AverageIsSumThenOneDivision) {
  PeerOfOnes comm;
  std::vector<float> data{3.0F, 0.0F, -1.0F};
  comm.all_reduce_average(data.data(), 3, DType::F32, nullptr);
  EXPECT_EQ(data, (std::vector<float>{2.0F, 0.5F, 0.0F}));
  std::vector<uint16_t> half(3);
  EXPECT_THROW(comm.all_reduce_average(half.data(), 3, DType::F16, nullptr), std::invalid_argument);
  int stream = 0;
  EXPECT_THROW(comm.all_reduce_average(data.data(), 3, DType::F32, &stream), std::invalid_argument);
}

TEST(CommunicatorDefaults, BroadcastTakesTheRootsValue) {
  PeerOfOnes comm;
  EXPECT_EQ(comm.broadcast("mine", 0), "zero");
  EXPECT_EQ(comm.broadcast("mine", 1), "mine");
  EXPECT_THROW((void)comm.broadcast("mine", 2), std::invalid_argument);
}

TEST(DivideHostF32, DividesExactly) {
  std::vector<float> data{3.0F, 6.0F, 1.0F};
  divide_host_f32(data.data(), 3, 3);
  EXPECT_EQ(data, (std::vector<float>{1.0F, 2.0F, 1.0F / 3.0F}));
  EXPECT_THROW(divide_host_f32(data.data(), 3, 0), std::invalid_argument);
}

TEST(NcclHangHint, NamesTheUsualCausesAndTheirSwitches) {
  for (const auto stage : {NcclStage::Init, NcclStage::Collective}) {
    const std::string hint = nccl_hang_hint(stage);
    for (const char* needle :
         {"NCCL_P2P_DISABLE=1", "--shm-size=1g", "sharedMemorySize", "NCCL_SHM_DISABLE=1",
          "NCCL_SOCKET_IFNAME", "NCCL_DEBUG=INFO", "(1) ", "(4) "}) {
      EXPECT_NE(hint.find(needle), std::string::npos) << needle << " missing from: " << hint;
    }
  }
  EXPECT_NE(nccl_hang_hint(NcclStage::Init).find("bridge networking"), std::string::npos);
  EXPECT_NE(nccl_hang_hint(NcclStage::Collective).find("another rank died"), std::string::npos);
}

TEST(Transports, BuiltOnesReportVersionsAndMissingOnesSayHowToBuildThem) {
  if (mpi_built()) {
    EXPECT_FALSE(mpi_library_version().empty());
  } else {
    EXPECT_TRUE(mpi_library_version().empty());
    EXPECT_THROW((void)make_mpi_communicator(LaunchInfo{}), CommunicatorUnavailable);
  }
  if (nccl_built()) {
    const std::string version = nccl_library_version();
    EXPECT_EQ(std::count(version.begin(), version.end(), '.'), 2) << version;
    EXPECT_TRUE(std::regex_match(version, std::regex("[0-9]+\\.[0-9]+\\.[0-9]+"))) << version;
  } else {
    EXPECT_TRUE(nccl_library_version().empty());
    try {
      (void)make_local_group({0});
      ADD_FAILURE() << "no exception";
    } catch (const CommunicatorUnavailable& e) {
      EXPECT_NE(std::string(e.what()).find("CNNBENCH_CUDA=OFF"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)make_nccl_communicator(LaunchInfo{}), CommunicatorUnavailable);
  }
}

}  // namespace
}  // namespace cnnbench::mpi
