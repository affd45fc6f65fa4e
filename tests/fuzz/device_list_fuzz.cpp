// Fuzz target: the NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES parsers, the
// matcher and the device table. The input's first line is the
// NVIDIA_VISIBLE_DEVICES value, the rest (when there is a newline) the
// CUDA_VISIBLE_DEVICES value. Invariants abort(), so libFuzzer and the replay
// test (tests/fuzz/fuzz_replay_test.cpp) both report a violation with the input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/discovery/device_list.h"

namespace {

using cnnbench::bench::VisibleDevices;
using cnnbench::bench::VisibleDevicesKind;
using cnnbench::kernels::GpuEnumeration;

// Reports a violated invariant with the input that broke it, then aborts.
class Checker {
 public:
  explicit Checker(std::string_view input) : input_(input) {}
  void operator()(bool ok, const char* what) const {
    if (ok) return;
    std::fprintf(stderr, "device_list fuzz invariant failed: %s\ninput (%zu bytes):", what, input_.size());
    for (unsigned char ch : input_) std::fprintf(stderr, " %02x", ch);
    std::fprintf(stderr, "\n");
    std::abort();
  }

 private:
  std::string_view input_;
};

#define FUZZ_CHECK(condition) check((condition), #condition)

GpuEnumeration fake_gpus(const std::vector<std::string>& uuids, int driver) {
  GpuEnumeration e;
  e.built_with_cuda = true;
  e.driver_version = driver;
  e.runtime_version = 13000;
  if (uuids.empty()) e.error = "cudaGetDeviceCount: cudaErrorNoDevice (no CUDA-capable device is detected)";
  for (size_t i = 0; i < uuids.size(); ++i) {
    cnnbench::kernels::GpuInfo g;
    g.ordinal = static_cast<int>(i);
    g.name = "NVIDIA H100 80GB HBM3";
    g.uuid = uuids[i];
    g.pci_bus_id = "00000000:1" + std::to_string(i) + ":00.0";
    g.memory_bytes = int64_t{80} << 30;
    e.gpus.push_back(g);
  }
  return e;
}

void check_parsed(const Checker& check, const VisibleDevices& v, bool nvidia) {
  FUZZ_CHECK(v.ok() == v.error.empty());
  if (!v.ok()) {
    FUZZ_CHECK(v.entries.empty());
    FUZZ_CHECK(v.error.find(v.variable) == 0);
    return;
  }
  FUZZ_CHECK((v.kind == VisibleDevicesKind::List) == !v.entries.empty());
  if (v.kind != VisibleDevicesKind::List) return;
  // The canonical texts parse again to the same list.
  std::string joined;
  for (const auto& e : v.entries) {
    FUZZ_CHECK(!e.text.empty());
    FUZZ_CHECK(e.text.find(',') == std::string::npos);
    FUZZ_CHECK(e.text.front() != ' ' && e.text.back() != ' ');
    joined += (joined.empty() ? "" : ",") + e.text;
  }
  const VisibleDevices again = nvidia ? cnnbench::bench::parse_nvidia_visible_devices(joined)
                                      : cnnbench::bench::parse_cuda_visible_devices(joined);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again.entries.size() == v.entries.size());
  for (size_t i = 0; i < v.entries.size(); ++i) {
    FUZZ_CHECK(again.entries[i].text == v.entries[i].text);
    FUZZ_CHECK(again.entries[i].kind == v.entries[i].kind);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const Checker check(input);
  const size_t newline = input.find('\n');
  const std::optional<std::string> nvidia_value = input.substr(0, newline);
  const std::optional<std::string> cuda_value =
      newline == std::string::npos ? std::nullopt : std::optional<std::string>(input.substr(newline + 1));

  const VisibleDevices nvidia = cnnbench::bench::parse_nvidia_visible_devices(nvidia_value);
  const VisibleDevices cuda = cnnbench::bench::parse_cuda_visible_devices(cuda_value);
  check_parsed(check, nvidia, true);
  check_parsed(check, cuda, false);
  // The raw input as one CUDA_VISIBLE_DEVICES value too, newlines and all.
  check_parsed(check, cnnbench::bench::parse_cuda_visible_devices(input), false);

  static const std::vector<GpuEnumeration> machines = {
      fake_gpus({}, 0),
      fake_gpus({}, 13000),
      fake_gpus({"GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab", "GPU-8e1f0a2b-3c4d-5e6f-7a8b-9c0d1e2f3a4b"}, 13000),
      fake_gpus({"GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab", "GPU-5d5b9999-0000-1111-2222-333344445555",
                 "GPU-7a1c2b3d-4e5f-5a6b-8c7d-9e0f1a2b3c4d", "GPU-c0ffee00-1111-2222-3333-444455556666"},
                12020),
  };
  for (const auto& gpus : machines) {
    const auto d = cnnbench::bench::match_devices(nvidia, cuda, gpus);
    if (!nvidia.ok() || !cuda.ok()) FUZZ_CHECK(!d.ok());
    if (!d.ok()) {
      FUZZ_CHECK(d.devices.empty());
      continue;
    }
    FUZZ_CHECK(d.devices.size() <= gpus.gpus.size());
    for (size_t i = 0; i < d.devices.size(); ++i) {
      FUZZ_CHECK(d.devices[i].ordinal == static_cast<int>(i));
      FUZZ_CHECK(d.devices[i].uuid == gpus.gpus[i].uuid);
    }
    const std::string table = cnnbench::bench::format_device_table(d.devices);
    size_t lines = 0;
    for (char ch : table) lines += ch == '\n' ? 1 : 0;
    FUZZ_CHECK(lines == (d.devices.empty() ? 0 : d.devices.size() + 1));
  }
  return 0;
}
