// The network NCCL chose, read from NCCL's own log: parsing real log lines, where the
// log goes for each NCCL_DEBUG setting, and the header line.
#include "bench/run/nccl_network.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <sys/stat.h>

namespace cnnbench::bench {
namespace {

EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// Lines as NCCL 2.2x and aws-ofi-nccl print them (host:pid:tid [device] NCCL INFO ...).
constexpr const char* kSocketLog =
    "ip-10-0-1-23:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.1.23<0>\n"
    "ip-10-0-1-23:4242:4242 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.\n"
    "ip-10-0-1-23:4242:4242 [0] NCCL INFO NET/IB : No device found.\n"
    "ip-10-0-1-23:4242:4242 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.1.23<0>\n"
    "ip-10-0-1-23:4242:4242 [0] NCCL INFO Using network Socket\n"
    "ip-10-0-1-23:4242:4242 [0] NCCL INFO ncclCommInitRank comm 0x55d5 rank 0 nranks 16 - Init COMPLETE\n";

constexpr const char* kEfaLog =
    "ip-10-0-1-23:77:77 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v9)\n"
    "ip-10-0-1-23:77:77 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.13.2\n"
    "ip-10-0-1-23:77:77 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)\n"
    "ip-10-0-1-23:77:77 [0] NCCL INFO Using network Libfabric\r\n";

TEST(NcclNetwork, ParsesTheNetworkAndTheProvider) {
  const auto socket = parse_nccl_log(kSocketLog);
  ASSERT_TRUE(socket);
  EXPECT_EQ(socket->net, "Socket");
  EXPECT_EQ(socket->provider, "");

  const auto efa = parse_nccl_log(kEfaLog);
  ASSERT_TRUE(efa);
  EXPECT_EQ(efa->net, "Libfabric");
  EXPECT_EQ(efa->provider, "efa");

  // Older aws-ofi-nccl: "Selected Provider is efa (found 4 nics)", net "AWS Libfabric".
  const auto old = parse_nccl_log(
      "h:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n"
      "h:1:1 [0] NCCL INFO Using network AWS Libfabric\n");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->net, "AWS Libfabric");
  EXPECT_EQ(old->provider, "efa");

  const auto ib = parse_nccl_log("h:1:1 [3] NCCL INFO Using network IB");
  ASSERT_TRUE(ib);
  EXPECT_EQ(ib->net, "IB");

  EXPECT_FALSE(parse_nccl_log(""));
  EXPECT_FALSE(parse_nccl_log("h:1:1 [0] NCCL INFO Bootstrap : Using eth0\n"));
  EXPECT_FALSE(parse_nccl_log("h:1:1 [0] NCCL INFO Using network \n"));
}

TEST(NcclNetwork, ExpandsNcclDebugFileAsNcclDoes) {
  EXPECT_EQ(expand_nccl_debug_file("/logs/nccl.%h.%p", "ip-10-0-1-23.ec2.internal", 4242),
            "/logs/nccl.ip-10-0-1-23.4242");
  EXPECT_EQ(expand_nccl_debug_file("/x/%q%%", "h", 1), "/x/%q%%");
  EXPECT_EQ(expand_nccl_debug_file("/x/end%", "h", 1), "/x/end%");
}

class NcclLogPrepare : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/cnnbench-nccl-test.XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    root_ = folder;
  }
  void TearDown() override { ::rmdir(root_.c_str()); }

  NcclLog prepare(std::map<std::string, std::string> vars) {
    set_.clear();
    return NcclLog::prepare(
        fake_env(std::move(vars)),
        [this](const std::string& name, const std::string& value) { set_[name] = value; }, root_,
        "ip-10-0-1-23.ec2.internal", 4242);
  }

  std::string root_;
  std::map<std::string, std::string> set_;
};

TEST_F(NcclLogPrepare, WithoutNcclDebugTheRunLogsInitToAFileOfItsOwn) {
  std::string folder;
  {
    NcclLog log = prepare({});
    ASSERT_FALSE(log.path().empty());
    EXPECT_EQ(log.unreadable_reason(), "");
    EXPECT_EQ(set_.at("NCCL_DEBUG"), "INFO");
    EXPECT_EQ(set_.at("NCCL_DEBUG_SUBSYS"), "INIT");
    EXPECT_EQ(set_.at("NCCL_DEBUG_FILE"), log.path());
    EXPECT_EQ(log.path().rfind(root_ + "/cnnbench-nccl.", 0), 0U) << log.path();
    EXPECT_FALSE(log.network());  // NCCL has not started
    std::ofstream(log.path()) << kEfaLog;
    const auto network = log.network();
    ASSERT_TRUE(network);
    EXPECT_EQ(network->net, "Libfabric");
    folder = log.path().substr(0, log.path().rfind('/'));
    NcclLog moved = std::move(log);
    EXPECT_TRUE(moved.network());
  }
  struct stat st {};
  EXPECT_NE(::stat(folder.c_str(), &st), 0) << "the folder is removed with the log";
}

TEST_F(NcclLogPrepare, AUsersSettingIsLeftAlone) {
  NcclLog with_file = prepare({{"NCCL_DEBUG", "info"}, {"NCCL_DEBUG_FILE", root_ + "/nccl.%h.%p.log"}});
  EXPECT_TRUE(set_.empty());
  EXPECT_EQ(with_file.path(), root_ + "/nccl.ip-10-0-1-23.4242.log");

  NcclLog to_stdout = prepare({{"NCCL_DEBUG", "INFO"}});
  EXPECT_TRUE(set_.empty());
  EXPECT_EQ(to_stdout.path(), "");
  EXPECT_NE(to_stdout.unreadable_reason().find("NCCL_DEBUG=INFO without NCCL_DEBUG_FILE"), std::string::npos);

  NcclLog warn = prepare({{"NCCL_DEBUG", "WARN"}, {"NCCL_DEBUG_FILE", "/x"}});
  EXPECT_TRUE(set_.empty());
  EXPECT_EQ(warn.unreadable_reason(), "NCCL_DEBUG=WARN: NCCL logs it only at INFO");

  NcclLog no_init = prepare({{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "COLL,P2P"}, {"NCCL_DEBUG_FILE", "/x"}});
  EXPECT_EQ(no_init.unreadable_reason(), "NCCL_DEBUG_SUBSYS=COLL,P2P leaves out INIT");
  NcclLog excluded = prepare({{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "^INIT"}, {"NCCL_DEBUG_FILE", "/x"}});
  EXPECT_EQ(excluded.unreadable_reason(), "NCCL_DEBUG_SUBSYS=^INIT leaves out INIT");
  for (const char* subsys : {"ALL", "INIT,NET", "^COLL"}) {
    NcclLog ok = prepare({{"NCCL_DEBUG", "TRACE"}, {"NCCL_DEBUG_SUBSYS", subsys}, {"NCCL_DEBUG_FILE", "/x"}});
    EXPECT_EQ(ok.unreadable_reason(), "") << subsys;
    EXPECT_EQ(ok.path(), "/x");
  }
}

TEST_F(NcclLogPrepare, NoFolderIsAReasonNotAFailure) {
  NcclLog log = NcclLog::prepare(
      fake_env({}), [this](const std::string& n, const std::string& v) { set_[n] = v; },
      root_ + "/missing", "h", 1);
  EXPECT_EQ(log.path(), "");
  EXPECT_NE(log.unreadable_reason().find("no folder for NCCL's log under " + root_ + "/missing"),
            std::string::npos);
  EXPECT_TRUE(set_.empty()) << "NCCL's settings stay untouched";
}

TEST(NcclNetwork, HeaderLine) {
  const EnvLookup none = fake_env({});
  EXPECT_EQ(network_header_line("nccl", NcclNetwork{"Socket", ""}, "", none),
            "Network:     NCCL net Socket, as NCCL reported it (NCCL_NET unset)");
  EXPECT_EQ(network_header_line("nccl", NcclNetwork{"Libfabric", "efa"}, "",
                                fake_env({{"NCCL_SOCKET_IFNAME", "^lo,docker,ecs"}, {"FI_PROVIDER", "efa"}})),
            "Network:     NCCL net Libfabric, provider efa, as NCCL reported it "
            "(NCCL_SOCKET_IFNAME=^lo,docker,ecs, FI_PROVIDER=efa)");
  EXPECT_EQ(network_header_line("nccl", std::nullopt, "NCCL_DEBUG=WARN: NCCL logs it only at INFO",
                                fake_env({{"NCCL_NET", "Socket"}})),
            "Network:     NCCL (its net is not known: NCCL_DEBUG=WARN: NCCL logs it only at INFO); NCCL_NET=Socket");
  EXPECT_EQ(network_header_line("nccl", std::nullopt, "", none),
            "Network:     NCCL (its net is not known: NCCL's log has no \"Using network\" line)");
  EXPECT_EQ(network_header_line("mpi", std::nullopt, "", none),
            "Network:     MPI (the MPI library's own transports)");
}

}  // namespace
}  // namespace cnnbench::bench
