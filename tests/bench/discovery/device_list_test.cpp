// GPU discovery: the NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES parsers and the
// matcher, against fake enumerations (no GPU is needed).
#include "bench/discovery/device_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace cnnbench::bench {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kUuidA = "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab";
constexpr const char* kUuidB = "GPU-8e1f0a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4b";
constexpr const char* kUuidC = "GPU-c0ffee00-1111-2222-3333-444455556666";
constexpr const char* kUuidD = "GPU-d00dfeed-aaaa-bbbb-cccc-ddddeeeeffff";
constexpr const char* kMigUuid = "MIG-7a1c2b3d-4e5f-5a6b-8c7d-9e0f1a2b3c4d";

enum class Var { Nvidia, Cuda };

struct ParseCase {
  const char* name;
  Var var;
  std::optional<std::string> value;
  VisibleDevicesKind kind;
  std::vector<std::string> entries;     // expected DeviceId::text, in order (List only)
  std::vector<std::string> error_has;   // substrings of the error; empty = must parse
};

std::vector<ParseCase> parse_cases() {
  using K = VisibleDevicesKind;
  const std::string a = kUuidA, b = kUuidB;
  return {
      {"nvidia_unset", Var::Nvidia, std::nullopt, K::Unset, {}, {}},
      {"nvidia_empty", Var::Nvidia, "", K::Empty, {}, {}},
      {"nvidia_blank", Var::Nvidia, " \t ", K::Empty, {}, {}},
      {"nvidia_void", Var::Nvidia, "void", K::Void, {}, {}},
      {"nvidia_none", Var::Nvidia, "none", K::None, {}, {}},
      {"nvidia_all", Var::Nvidia, "all", K::All, {}, {}},
      {"nvidia_all_padded", Var::Nvidia, "  all\n", K::All, {}, {}},
      {"one_index", Var::Nvidia, "0", K::List, {"0"}, {}},
      {"docker_gpus_indexes", Var::Nvidia, "0,1,2", K::List, {"0", "1", "2"}, {}},
      {"indexes_with_spaces", Var::Nvidia, " 0 , 1 ,2 ", K::List, {"0", "1", "2"}, {}},
      {"indexes_order_kept", Var::Nvidia, "3,1", K::List, {"3", "1"}, {}},
      {"leading_zero_index", Var::Nvidia, "07", K::List, {"7"}, {}},
      {"ecs_uuid", Var::Nvidia, a, K::List, {a}, {}},
      {"ecs_two_uuids", Var::Nvidia, a + "," + b, K::List, {a, b}, {}},
      {"uuid_upper_case_hex", Var::Nvidia, "GPU-5D5B1C7E-1F8A-4C4E-9A3B-0123456789AB", K::List, {a}, {}},
      {"uuid_prefix", Var::Nvidia, "GPU-5d5b", K::List, {"GPU-5d5b"}, {}},
      {"uuid_prefix_to_dash", Var::Nvidia, "GPU-5d5b1c7e-", K::List, {"GPU-5d5b1c7e-"}, {}},
      {"mig_uuid", Var::Nvidia, kMigUuid, K::List, {kMigUuid}, {}},
      {"mig_legacy", Var::Nvidia, "MIG-" + a + "/1/0", K::List, {"MIG-" + a + "/1/0"}, {}},
      {"mig_index", Var::Nvidia, "0:0,0:1,1:0", K::List, {"0:0", "0:1", "1:0"}, {}},
      {"mixed_index_and_uuid", Var::Nvidia, "0, " + b, K::List, {"0", b}, {}},
      {"duplicate_index", Var::Nvidia, "0,1,0", K::List, {}, {"entry 3 '0'", "entry 1 '0'", "duplicate"}},
      {"duplicate_index_leading_zero", Var::Nvidia, "1,01", K::List, {}, {"duplicate"}},
      {"duplicate_uuid", Var::Nvidia, a + "," + a, K::List, {}, {"duplicate"}},
      {"duplicate_uuid_prefix", Var::Nvidia, "GPU-5d5b," + a, K::List, {}, {"entry 2", "'GPU-5d5b'", "duplicate"}},
      {"duplicate_mig_index", Var::Nvidia, "0:1,0:1", K::List, {}, {"duplicate"}},
      {"malformed_word", Var::Nvidia, "gpu0", K::List, {}, {"'gpu0'", "not a GPU index", "valid:", "MIG-<uuid>"}},
      {"empty_entry", Var::Nvidia, "0,,1", K::List, {}, {"entry 2 is empty"}},
      {"trailing_comma", Var::Nvidia, "0,1,", K::List, {}, {"entry 3 is empty"}},
      {"keyword_in_list", Var::Nvidia, "all,0", K::List, {}, {"'all' must be the whole value"}},
      {"keyword_upper_case", Var::Nvidia, "ALL", K::List, {}, {"lower case"}},
      {"uuid_bad_hex", Var::Nvidia, "GPU-5d5bxyz", K::List, {}, {"'GPU-5d5bxyz'", "GPU UUID is"}},
      {"uuid_dash_misplaced", Var::Nvidia, "GPU-5d5b-1c7e", K::List, {}, {"GPU UUID is"}},
      {"uuid_too_long", Var::Nvidia, a + "0", K::List, {}, {"GPU UUID is"}},
      {"uuid_prefix_empty", Var::Nvidia, "GPU-", K::List, {}, {"GPU UUID is"}},
      {"uuid_lower_case_prefix", Var::Nvidia, "gpu-5d5b", K::List, {}, {"upper case"}},
      {"mig_uuid_partial", Var::Nvidia, "MIG-7a1c", K::List, {}, {"MIG device UUID is"}},
      {"mig_legacy_bad_instance", Var::Nvidia, "MIG-" + a + "/x/0", K::List, {}, {"legacy MIG"}},
      {"mig_legacy_missing_part", Var::Nvidia, "MIG-" + a + "/1", K::List, {}, {"legacy MIG"}},
      {"mig_index_bad", Var::Nvidia, "1:a", K::List, {}, {"'1:a'", "<gpu index>:<mig index>"}},
      {"negative_index", Var::Nvidia, "-1", K::List, {}, {"'-1'"}},
      {"index_too_large", Var::Nvidia, "99999", K::List, {}, {"out of range"}},
      {"inner_space", Var::Nvidia, "0 1", K::List, {}, {"'0 1'"}},
      {"control_byte_escaped", Var::Nvidia, std::string("0,\x01"), K::List, {}, {"\\x01"}},
      {"cuda_unset", Var::Cuda, std::nullopt, K::Unset, {}, {}},
      {"cuda_empty_hides_all", Var::Cuda, "", K::Empty, {}, {}},
      {"cuda_minus_one_hides_all", Var::Cuda, "-1", K::None, {}, {}},
      {"cuda_indexes", Var::Cuda, "1,0", K::List, {"1", "0"}, {}},
      {"cuda_uuid_prefix", Var::Cuda, "GPU-8e1f", K::List, {"GPU-8e1f"}, {}},
      {"cuda_mig_legacy", Var::Cuda, "MIG-" + a + "/2/0", K::List, {"MIG-" + a + "/2/0"}, {}},
      {"cuda_all_rejected", Var::Cuda, "all", K::List, {}, {"CUDA_VISIBLE_DEVICES='all'", "CUDA does not know"}},
      {"cuda_none_rejected", Var::Cuda, "none", K::List, {}, {"CUDA does not know"}},
      {"cuda_mig_index_rejected", Var::Cuda, "0:1", K::List, {}, {"<gpu>:<mig>"}},
      {"cuda_negative_in_list", Var::Cuda, "0,-1,1", K::List, {}, {"entry 2", "negative index"}},
      {"cuda_duplicate", Var::Cuda, "0,0", K::List, {}, {"duplicate"}},
  };
}

class ParseTable : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseTable, ParsesAsExpected) {
  const ParseCase& c = GetParam();
  const VisibleDevices v =
      c.var == Var::Nvidia ? parse_nvidia_visible_devices(c.value) : parse_cuda_visible_devices(c.value);
  const std::string variable = c.var == Var::Nvidia ? "NVIDIA_VISIBLE_DEVICES" : "CUDA_VISIBLE_DEVICES";
  EXPECT_EQ(v.variable, variable);
  EXPECT_EQ(v.value, c.value);
  if (c.error_has.empty()) {
    ASSERT_TRUE(v.ok()) << v.error;
    EXPECT_EQ(v.kind, c.kind);
    std::vector<std::string> texts;
    for (const auto& e : v.entries) texts.push_back(e.text);
    EXPECT_EQ(texts, c.entries);
  } else {
    ASSERT_FALSE(v.ok());
    EXPECT_TRUE(v.entries.empty());
    EXPECT_THAT(v.error, HasSubstr(variable + "="));
    EXPECT_THAT(v.error, HasSubstr("valid:"));
    for (const auto& part : c.error_has) EXPECT_THAT(v.error, HasSubstr(part));
  }
}

INSTANTIATE_TEST_SUITE_P(DeviceList, ParseTable, ::testing::ValuesIn(parse_cases()),
                         [](const ::testing::TestParamInfo<ParseCase>& param) { return std::string(param.param.name); });

TEST(DeviceListParse, EntryFieldsAreFilled) {
  const auto v = parse_nvidia_visible_devices(std::string("2,1:3,GPU-5D5B,") + kMigUuid + ",MIG-" + kUuidB + "/4/5");
  ASSERT_TRUE(v.ok()) << v.error;
  ASSERT_EQ(v.entries.size(), 5U);
  EXPECT_EQ(v.entries[0].kind, DeviceIdKind::Index);
  EXPECT_EQ(v.entries[0].index, 2);
  EXPECT_EQ(v.entries[1].kind, DeviceIdKind::MigIndex);
  EXPECT_EQ(v.entries[1].index, 1);
  EXPECT_EQ(v.entries[1].mig, 3);
  EXPECT_EQ(v.entries[2].kind, DeviceIdKind::UuidPrefix);
  EXPECT_EQ(v.entries[2].uuid, "5d5b");
  EXPECT_EQ(v.entries[3].kind, DeviceIdKind::MigUuid);
  EXPECT_EQ(v.entries[3].uuid, std::string(kMigUuid).substr(4));
  EXPECT_EQ(v.entries[4].kind, DeviceIdKind::MigLegacy);
  EXPECT_EQ(v.entries[4].uuid, std::string(kUuidB).substr(4));
  EXPECT_EQ(v.entries[4].mig, 4);
  EXPECT_EQ(v.entries[4].compute_instance, 5);
}

TEST(DeviceListParse, DescribeNamesTheState) {
  EXPECT_EQ(parse_nvidia_visible_devices(std::nullopt).describe(), "NVIDIA_VISIBLE_DEVICES unset");
  EXPECT_EQ(parse_nvidia_visible_devices("").describe(), "NVIDIA_VISIBLE_DEVICES='' (empty)");
  EXPECT_EQ(parse_cuda_visible_devices(" 0,1 ").describe(), "CUDA_VISIBLE_DEVICES=0,1");
}

TEST(DeviceListParse, LongValueIsCutInTheMessage) {
  const auto v = parse_nvidia_visible_devices(std::string(5000, 'x'));
  ASSERT_FALSE(v.ok());
  EXPECT_LT(v.error.size(), 1500U);
}

// ---------------------------------------------------------------- matcher

kernels::GpuInfo gpu(int ordinal, const std::string& uuid, const std::string& name = "NVIDIA H100 80GB HBM3") {
  kernels::GpuInfo g;
  g.ordinal = ordinal;
  g.name = name;
  g.uuid = uuid;
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x19 + ordinal);
  g.pci_bus_id = bus;
  g.memory_bytes = int64_t{80} << 30;
  g.compute_capability_major = 9;
  g.multiprocessors = 132;
  return g;
}

kernels::GpuEnumeration cuda_shows(std::vector<std::string> uuids) {
  kernels::GpuEnumeration e;
  e.built_with_cuda = true;
  e.driver_version = 13000;
  e.runtime_version = 13000;
  for (size_t i = 0; i < uuids.size(); ++i) e.gpus.push_back(gpu(static_cast<int>(i), uuids[i]));
  return e;
}

kernels::GpuEnumeration cuda_fails(std::string error, int driver, int runtime = 13000) {
  kernels::GpuEnumeration e;
  e.built_with_cuda = true;
  e.driver_version = driver;
  e.runtime_version = runtime;
  e.error = std::move(error);
  return e;
}

DeviceDiscovery match(const std::optional<std::string>& nvidia, const std::optional<std::string>& cuda,
                      const kernels::GpuEnumeration& gpus) {
  return match_devices(parse_nvidia_visible_devices(nvidia), parse_cuda_visible_devices(cuda), gpus);
}

std::vector<std::string> host_ids(const DeviceDiscovery& d) {
  std::vector<std::string> ids;
  for (const auto& e : d.devices) ids.push_back(e.host_id);
  return ids;
}

TEST(DeviceListMatch, EcsUuidsMatchByUuidWhateverTheOrder) {
  const auto d = match(std::string(kUuidB) + "," + kUuidA, std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_TRUE(d.gpus_allocated);
  ASSERT_EQ(d.devices.size(), 2U);
  EXPECT_EQ(d.devices[0].ordinal, 0);
  EXPECT_EQ(d.devices[0].uuid, kUuidA);
  EXPECT_EQ(d.devices[0].host_id, kUuidA);
  EXPECT_EQ(d.devices[1].host_id, kUuidB);
  EXPECT_EQ(d.devices[1].pci_bus_id, "00000000:1A:00.0");
  EXPECT_EQ(d.devices[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.devices[1].memory_bytes, int64_t{80} << 30);
  EXPECT_THAT(d.source, AllOf(HasSubstr("NVIDIA_VISIBLE_DEVICES="), HasSubstr("2 GPUs matched by UUID")));
}

TEST(DeviceListMatch, UuidPrefixMatches) {
  const auto d = match("GPU-8e1f,GPU-5d5b", std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{"GPU-5d5b", "GPU-8e1f"}));
}

TEST(DeviceListMatch, AmbiguousUuidPrefixIsAnError) {
  const auto d = match("GPU-5d5b,3", std::nullopt,
                       cuda_shows({kUuidA, "GPU-5d5b9999-1f8a-4c4e-9a3b-0123456789ab"}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("GPU-5d5b"), HasSubstr("more than one GPU")));
}

TEST(DeviceListMatch, MigUuidMatchesTheDeviceCudaReports) {
  const std::string payload = std::string(kMigUuid).substr(4);
  const auto d = match(kMigUuid, std::nullopt, cuda_shows({"GPU-" + payload}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{kMigUuid}));
}

TEST(DeviceListMatch, DockerIndexesMatchInHostIndexOrder) {
  const auto d = match("3,1", std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{"1", "3"}));
  EXPECT_THAT(d.source, HasSubstr("by position"));
}

TEST(DeviceListMatch, MixedListMatchesUuidsThenPositions) {
  const auto d = match(std::string("5,") + kUuidA, std::nullopt, cuda_shows({kUuidB, kUuidA}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{"5", kUuidA}));
}

TEST(DeviceListMatch, CudaVisibleDevicesSelectsAmongTheContainersGpus) {
  // The container has host GPUs 4..7 (CUDA 0..3 inside); CUDA_VISIBLE_DEVICES=2,0
  // leaves two, in that order.
  const auto d = match("4,5,6,7", "2,0", cuda_shows({kUuidC, kUuidA}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{"6", "4"}));
  EXPECT_THAT(d.source, HasSubstr("selected by CUDA_VISIBLE_DEVICES=2,0"));
}

TEST(DeviceListMatch, CudaVisibleDevicesOnTopOfUuids) {
  const auto d = match(std::string(kUuidA) + "," + kUuidB, "1", cuda_shows({kUuidB}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{kUuidB}));
}

TEST(DeviceListMatch, CudaVisibleDevicesIndexBeyondTheAllocation) {
  const auto d = match("0,1", "3", cuda_shows({}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("CUDA_VISIBLE_DEVICES entry 3"), HasSubstr("gives 2 GPUs"),
                             HasSubstr("numbered 0..1")));
}

TEST(DeviceListMatch, CudaVisibleDevicesCountMismatch) {
  const auto d = match(std::nullopt, "0,1,2", cuda_shows({kUuidA, kUuidB}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("lists 3 devices but CUDA shows 2"), HasSubstr(kUuidA), HasSubstr(kUuidB),
                             HasSubstr("0, 1, 2"), HasSubstr("every entry after it")));
}

TEST(DeviceListMatch, BareMetalCudaVisibleDevicesGivesHostIds) {
  const auto d = match(std::nullopt, "2,3", cuda_shows({kUuidC, kUuidD}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_TRUE(d.gpus_allocated);
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{"2", "3"}));
}

TEST(DeviceListMatch, CountMismatchShowsBothLists) {
  const auto d = match(std::string(kUuidA) + "," + kUuidB + "," + kUuidC + "," + kUuidD, std::nullopt,
                       cuda_shows({kUuidA, kUuidB}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("NVIDIA_VISIBLE_DEVICES lists 4 GPUs but CUDA shows 2"),
                             HasSubstr(kUuidC), HasSubstr(kUuidD), HasSubstr("CUDA 0: NVIDIA H100 80GB HBM3"),
                             HasSubstr("CUDA 1:"), HasSubstr("Likely cause")));
}

TEST(DeviceListMatch, MoreGpusThanAllocatedPointsAtHandMountedDevices) {
  const auto d = match("0", std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("lists 1 GPU but CUDA shows 2"), HasSubstr("mounted by hand")));
}

TEST(DeviceListMatch, UuidThatCudaDoesNotShow) {
  const auto d = match(std::string(kUuidA) + "," + kUuidC, std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("names " + std::string(kUuidC) + ", which CUDA does not show"),
                             HasSubstr(kUuidB), HasSubstr("MIG mode")));
}

TEST(DeviceListMatch, AllocatedButCudaSeesNoneWithoutDriver) {
  const auto d = match(kUuidA, std::nullopt,
                       cuda_fails("cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver version is "
                                  "insufficient for CUDA runtime version)",
                                  0));
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(d.gpus_allocated);
  EXPECT_TRUE(d.devices.empty());
  EXPECT_THAT(d.error, AllOf(HasSubstr("GPUs were allocated (NVIDIA_VISIBLE_DEVICES=" + std::string(kUuidA)),
                             HasSubstr("CUDA sees none"), HasSubstr("cudaErrorInsufficientDriver"),
                             HasSubstr("supports CUDA none"), HasSubstr("runtime of this binary: 13.0"),
                             HasSubstr("NVIDIA container runtime"), HasSubstr("docker run --gpus")));
}

TEST(DeviceListMatch, AllocatedButDriverTooOld) {
  const auto d = match("0,1", std::nullopt,
                       cuda_fails("cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver version is "
                                  "insufficient for CUDA runtime version)",
                                  12020));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("supports CUDA 12.2"), HasSubstr("runtime of this binary: 13.0"),
                             HasSubstr("driver is too old"), HasSubstr("image built for CUDA 12.2")));
}

TEST(DeviceListMatch, AllocatedButNoDeviceNodes) {
  const auto d = match("all", std::nullopt,
                       cuda_fails("cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)", 13000));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, AllOf(HasSubstr("NVIDIA_VISIBLE_DEVICES=all"), HasSubstr("no GPU device")));
}

TEST(DeviceListMatch, AllocatedButBuiltWithoutCuda) {
  kernels::GpuEnumeration none;
  none.error = "this binary was built without CUDA";
  const auto d = match(kUuidA, std::nullopt, none);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, HasSubstr("built without CUDA"));
}

TEST(DeviceListMatch, NothingAllocatedAndNoGpuIsNotAnError) {
  const auto no_driver = cuda_fails("cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)", 0);
  for (const std::optional<std::string>& nvidia :
       std::vector<std::optional<std::string>>{std::nullopt, "", "void", "all"}) {
    const auto d = match(nvidia, std::nullopt, no_driver);
    EXPECT_TRUE(d.ok()) << d.error;
    EXPECT_FALSE(d.gpus_allocated) << "for " << nvidia.value_or("(unset)");
    EXPECT_TRUE(d.devices.empty());
    EXPECT_THAT(d.source, AllOf(HasSubstr("no GPU visible to CUDA"), HasSubstr("cudaErrorNoDevice")));
  }
}

TEST(DeviceListMatch, UnsetUsesEveryGpuCudaShows) {
  const auto d = match(std::nullopt, std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(d.devices.size(), 2U);
  EXPECT_EQ(host_ids(d), (std::vector<std::string>{"", ""}));
  EXPECT_THAT(d.source, HasSubstr("every GPU CUDA shows (2)"));
}

TEST(DeviceListMatch, NoneAndHiddenGiveNoGpu) {
  const auto none = match("none", std::nullopt, cuda_shows({}));
  EXPECT_TRUE(none.ok());
  EXPECT_FALSE(none.gpus_allocated);
  EXPECT_THAT(none.source, HasSubstr("no GPU given"));
  const auto hidden = match(kUuidA, "", cuda_shows({}));
  EXPECT_TRUE(hidden.ok());
  EXPECT_FALSE(hidden.gpus_allocated);
  EXPECT_THAT(hidden.source, HasSubstr("every GPU hidden"));
}

TEST(DeviceListMatch, ParseErrorsPassThrough) {
  const auto d = match("0,0", std::nullopt, cuda_shows({kUuidA}));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.error, HasSubstr("duplicate"));
  const auto c = match(std::nullopt, "all", cuda_shows({kUuidA}));
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error, HasSubstr("CUDA_VISIBLE_DEVICES"));
}

TEST(DeviceListTable, ColumnsLineUp) {
  const auto d = match(std::string(kUuidA) + ",GPU-8e1f", std::nullopt, cuda_shows({kUuidA, kUuidB}));
  ASSERT_TRUE(d.ok()) << d.error;
  const std::string table = format_device_table(d.devices);
  std::vector<std::string> lines;
  for (size_t start = 0; start < table.size();) {
    const size_t end = table.find('\n', start);
    lines.push_back(table.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 3U);
  EXPECT_THAT(lines[0], AllOf(HasSubstr("CUDA"), HasSubstr("Name"), HasSubstr("UUID"), HasSubstr("PCI bus ID"),
                              HasSubstr("Host ID"), HasSubstr("Memory")));
  const size_t uuid_column = lines[0].find("UUID");
  const size_t host_column = lines[0].find("Host ID");
  EXPECT_EQ(lines[1].find(kUuidA), uuid_column);
  EXPECT_EQ(lines[2].find(kUuidB), uuid_column);
  EXPECT_EQ(lines[2].find("GPU-8e1f "), host_column);
  EXPECT_THAT(lines[1], AllOf(HasSubstr("00000000:19:00.0"), HasSubstr("80.0 GiB")));
  EXPECT_THAT(table, Not(HasSubstr("\n\n")));
  EXPECT_EQ(format_device_table({}), "");
}

}  // namespace
}  // namespace cnnbench::bench
