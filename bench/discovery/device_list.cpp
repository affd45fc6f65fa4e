#include "bench/discovery/device_list.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <string_view>

#include "bench/discovery/text.h"

namespace cnnbench::bench {
namespace {

constexpr std::string_view kNvidia = "NVIDIA_VISIBLE_DEVICES";
constexpr std::string_view kCuda = "CUDA_VISIBLE_DEVICES";

constexpr std::string_view kNvidiaForms =
    "valid: unset, empty, 'void', 'none', 'all', or a comma-separated list of GPU indexes "
    "(0,1,2), GPU UUIDs or their first characters (GPU-5d5b1c7e-...), and MIG devices "
    "(MIG-<uuid>, MIG-GPU-<uuid>/<gpu instance>/<compute instance>, <gpu index>:<mig index>)";
constexpr std::string_view kCudaForms =
    "valid: unset, empty or -1 (hide every GPU), or a comma-separated list of device indexes "
    "(0,1), GPU UUIDs or their first characters (GPU-5d5b1c7e-...), and MIG devices "
    "(MIG-<uuid>, MIG-GPU-<uuid>/<gpu instance>/<compute instance>)";

// Larger than any host's GPU count; catches typos such as 10000 without
// constraining real indexes.
constexpr int kMaxIndex = 4095;
// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx": where the dashes sit.
constexpr size_t kUuidLength = 36;

bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }
bool is_hex(char ch) { return std::isxdigit(static_cast<unsigned char>(ch)) != 0; }
bool is_dash_position(size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

// Shows a value in a message: quoted, control and non-ASCII bytes escaped, long
// values cut, so a corrupt environment cannot garble the terminal or the log.
std::string quote(std::string_view s) {
  constexpr size_t kMaxShown = 200;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto byte = static_cast<unsigned char>(s[i]);
    if (byte < 0x20 || byte >= 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += static_cast<char>(byte);
    }
  }
  if (s.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

// A whole UUID (36 characters) or the first characters of one.
bool is_uuid_prefix(std::string_view s) {
  if (s.empty() || s.size() > kUuidLength) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (is_dash_position(i) ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

bool is_full_uuid(std::string_view s) { return s.size() == kUuidLength && is_uuid_prefix(s); }

// A non-negative decimal integer up to kMaxIndex. Sets `why` when not.
std::optional<int> parse_index(std::string_view s, std::string& why) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), is_digit)) {
    why = "expected a non-negative integer";
    return std::nullopt;
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value > kMaxIndex) {
    why = "index out of range (0 to " + std::to_string(kMaxIndex) + ")";
    return std::nullopt;
  }
  return value;
}

// Parses one trimmed, non-empty entry; returns the reason when it is malformed.
std::optional<DeviceId> parse_entry(std::string_view entry, bool nvidia, std::string& why) {
  DeviceId id;
  id.text = std::string(entry);

  if (entry.starts_with("MIG-GPU-")) {
    // Legacy MIG form: MIG-GPU-<uuid>/<gpu instance>/<compute instance>.
    const std::string_view rest = entry.substr(8);
    const size_t slash1 = rest.find('/');
    const size_t slash2 = slash1 == std::string_view::npos ? slash1 : rest.find('/', slash1 + 1);
    if (slash2 == std::string_view::npos || !is_full_uuid(rest.substr(0, slash1))) {
      why = "a legacy MIG device is MIG-GPU-<full GPU UUID>/<gpu instance>/<compute instance>";
      return std::nullopt;
    }
    const auto gi = parse_index(rest.substr(slash1 + 1, slash2 - slash1 - 1), why);
    const auto ci = gi ? parse_index(rest.substr(slash2 + 1), why) : std::nullopt;
    if (!gi || !ci) {
      why = "the GPU instance and compute instance of a legacy MIG device must be non-negative "
            "integers (" + why + ")";
      return std::nullopt;
    }
    id.kind = DeviceIdKind::MigLegacy;
    id.uuid = lower(rest.substr(0, slash1));
    id.mig = *gi;
    id.compute_instance = *ci;
    id.text = "MIG-GPU-" + id.uuid + "/" + std::to_string(*gi) + "/" + std::to_string(*ci);
    return id;
  }
  if (entry.starts_with("MIG-")) {
    const std::string_view rest = entry.substr(4);
    if (!is_full_uuid(rest)) {
      why = "a MIG device UUID is MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (36 characters after "
            "MIG-, hex digits and dashes)";
      return std::nullopt;
    }
    id.kind = DeviceIdKind::MigUuid;
    id.uuid = lower(rest);
    id.text = "MIG-" + id.uuid;
    return id;
  }
  if (entry.starts_with("GPU-")) {
    const std::string_view rest = entry.substr(4);
    if (!is_uuid_prefix(rest)) {
      why = "a GPU UUID is GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex digits and dashes, as "
            "nvidia-smi -L prints it), or its first characters";
      return std::nullopt;
    }
    id.kind = rest.size() == kUuidLength ? DeviceIdKind::Uuid : DeviceIdKind::UuidPrefix;
    id.uuid = lower(rest);
    id.text = "GPU-" + id.uuid;
    return id;
  }
  if (const size_t colon = entry.find(':'); colon != std::string_view::npos) {
    if (!nvidia) {
      why = "CUDA does not know the <gpu>:<mig> form (only the container runtime does); use the "
            "MIG device's UUID (nvidia-smi -L)";
      return std::nullopt;
    }
    const auto gpu = parse_index(entry.substr(0, colon), why);
    const auto mig = gpu ? parse_index(entry.substr(colon + 1), why) : std::nullopt;
    if (!gpu || !mig) {
      why = "a MIG device by index is <gpu index>:<mig index>, both non-negative integers (" + why + ")";
      return std::nullopt;
    }
    id.kind = DeviceIdKind::MigIndex;
    id.index = *gpu;
    id.mig = *mig;
    id.text = std::to_string(*gpu) + ":" + std::to_string(*mig);
    return id;
  }
  if (entry.starts_with("-") && !nvidia) {
    why = "CUDA stops reading the list at a negative index and hides it and every entry after "
          "it; remove it (-1 alone hides every GPU)";
    return std::nullopt;
  }
  if (is_digit(entry.front())) {
    const auto index = parse_index(entry, why);
    if (!index) return std::nullopt;
    id.kind = DeviceIdKind::Index;
    id.index = *index;
    id.text = std::to_string(*index);
    return id;
  }
  const std::string low = lower(entry);
  if (low == "all" || low == "none" || low == "void") {
    why = nvidia ? "'" + low + "' must be the whole value, in lower case"
                 : "CUDA does not know '" + std::string(entry) +
                       "' and would hide every GPU; unset the variable to use every GPU";
    return std::nullopt;
  }
  if (low.starts_with("gpu-") || low.starts_with("mig-")) {
    why = "the GPU- and MIG- prefixes are upper case";
    return std::nullopt;
  }
  why = "not a GPU index, UUID or MIG device";
  return std::nullopt;
}

// Two entries naming the same device: equal indexes, equal UUIDs, or a UUID prefix
// of another UUID (CUDA would resolve both to one GPU).
bool same_device(const DeviceId& a, const DeviceId& b) {
  const auto gpu_uuid = [](DeviceIdKind k) { return k == DeviceIdKind::Uuid || k == DeviceIdKind::UuidPrefix; };
  if (gpu_uuid(a.kind) && gpu_uuid(b.kind)) return a.uuid.starts_with(b.uuid) || b.uuid.starts_with(a.uuid);
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case DeviceIdKind::Index: return a.index == b.index;
    case DeviceIdKind::MigIndex: return a.index == b.index && a.mig == b.mig;
    case DeviceIdKind::MigUuid: return a.uuid == b.uuid;
    case DeviceIdKind::MigLegacy:
      return a.uuid == b.uuid && a.mig == b.mig && a.compute_instance == b.compute_instance;
    case DeviceIdKind::Uuid:
    case DeviceIdKind::UuidPrefix: break;
  }
  return false;
}

VisibleDevices parse(std::string_view variable, const std::optional<std::string>& value, bool nvidia) {
  VisibleDevices result;
  result.variable = std::string(variable);
  result.value = value;
  if (!value) return result;  // Unset

  const std::string_view forms = nvidia ? kNvidiaForms : kCudaForms;
  const auto fail = [&](const std::string& what) {
    result.kind = VisibleDevicesKind::List;
    result.entries.clear();
    result.error = std::string(variable) + "=" + quote(*value) + ": " + what + "; " + std::string(forms);
  };

  const std::string_view whole = trim(*value);
  if (whole.empty()) {
    result.kind = VisibleDevicesKind::Empty;
    return result;
  }
  if (nvidia && whole == "void") {
    result.kind = VisibleDevicesKind::Void;
    return result;
  }
  if (nvidia && whole == "none") {
    result.kind = VisibleDevicesKind::None;
    return result;
  }
  if (nvidia && whole == "all") {
    result.kind = VisibleDevicesKind::All;
    return result;
  }
  if (!nvidia && whole == "-1") {
    result.kind = VisibleDevicesKind::None;
    return result;
  }

  result.kind = VisibleDevicesKind::List;
  size_t position = 0;
  std::string_view rest = whole;
  while (true) {
    ++position;
    const size_t comma = rest.find(',');
    const std::string_view raw = rest.substr(0, comma);
    const std::string_view entry = trim(raw);
    if (entry.empty()) {
      fail("entry " + std::to_string(position) + " is empty (two commas in a row, or a comma at an end)");
      return result;
    }
    std::string why;
    auto id = parse_entry(entry, nvidia, why);
    if (!id) {
      fail("entry " + std::to_string(position) + " " + quote(entry) + ": " + why);
      return result;
    }
    for (size_t earlier = 0; earlier < result.entries.size(); ++earlier) {
      if (same_device(result.entries[earlier], *id)) {
        fail("entry " + std::to_string(position) + " " + quote(entry) + " names the same device as entry " +
             std::to_string(earlier + 1) + " " + quote(result.entries[earlier].text) +
             " (duplicate); list each device once");
        return result;
      }
    }
    result.entries.push_back(std::move(*id));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return result;
}

bool is_uuid_entry(const DeviceId& id) {
  return id.kind == DeviceIdKind::Uuid || id.kind == DeviceIdKind::UuidPrefix || id.kind == DeviceIdKind::MigUuid;
}

// The UUID CUDA reports, without its "GPU-" prefix (MIG devices report their own
// UUID, which nvidia-smi writes as MIG-<same hex>).
std::string_view uuid_payload(const kernels::GpuInfo& gpu) {
  std::string_view u = gpu.uuid;
  if (u.starts_with("GPU-") || u.starts_with("MIG-")) u.remove_prefix(4);
  return u;
}

bool uuid_matches(const DeviceId& id, const kernels::GpuInfo& gpu) {
  const std::string payload = lower(uuid_payload(gpu));
  switch (id.kind) {
    case DeviceIdKind::Uuid:
    case DeviceIdKind::MigUuid: return payload == id.uuid;
    case DeviceIdKind::UuidPrefix: return payload.starts_with(id.uuid);
    default: return false;
  }
}

std::string join_entries(const VisibleDevices& v) {
  std::string out;
  for (const auto& e : v.entries) out += (out.empty() ? "" : ", ") + e.text;
  return out;
}

std::string list_gpus(const kernels::GpuEnumeration& gpus) {
  std::string out;
  for (const auto& g : gpus.gpus) {
    out += "    CUDA " + std::to_string(g.ordinal) + ": " + g.name + ", " + g.uuid + ", PCI " + g.pci_bus_id + "\n";
  }
  return out;
}

std::string versions_line(const kernels::GpuEnumeration& gpus) {
  return "  CUDA driver: supports CUDA " + kernels::format_cuda_version(gpus.driver_version) +
         " (cudaDriverGetVersion " + std::to_string(gpus.driver_version) + "); CUDA runtime of this binary: " +
         kernels::format_cuda_version(gpus.runtime_version) + "\n";
}

std::string both_lists(const VisibleDevices& listed, const kernels::GpuEnumeration& gpus) {
  return "  " + listed.variable + " (" + std::to_string(listed.entries.size()) + "): " + join_entries(listed) +
         "\n  CUDA shows (" + std::to_string(gpus.gpus.size()) + "):\n" + list_gpus(gpus);
}

std::string allocated_but_none(const VisibleDevices& nvidia, const VisibleDevices& cuda,
                               const kernels::GpuEnumeration& gpus) {
  std::string cause;
  const bool insufficient = gpus.error.find("InsufficientDriver") != std::string::npos ||
                            (gpus.driver_version > 0 && gpus.driver_version / 1000 < gpus.runtime_version / 1000);
  if (!gpus.built_with_cuda) {
    cause = "this binary was built without CUDA; use the CUDA build (the container image) for GPU runs";
  } else if (gpus.driver_version == 0) {
    cause = "no NVIDIA driver library (libcuda.so.1) in the container: it was started without the "
            "NVIDIA container runtime. Use `docker run --gpus ...` with the NVIDIA Container Toolkit "
            "on the host, or on ECS a GPU instance (ECS GPU-optimized AMI) and a GPU "
            "resourceRequirement; when devices are mounted by hand, mount the driver libraries too";
  } else if (insufficient) {
    cause = "the host's driver is too old for this binary's CUDA runtime: update the NVIDIA driver "
            "on the host, or use an image built for CUDA " + kernels::format_cuda_version(gpus.driver_version);
  } else if (gpus.error.find("NoDevice") != std::string::npos) {
    cause = "the driver is present but no GPU device (/dev/nvidia*) is visible in the container: check "
            "that GPUs were requested (docker run --gpus, ECS resourceRequirements) and that the listed "
            "IDs exist on the host (nvidia-smi -L)";
  } else {
    cause = "CUDA could not initialise the GPUs; run nvidia-smi in the container for the driver's view";
  }
  return "GPUs were allocated (" + nvidia.describe() + ", " + cuda.describe() + ") but CUDA sees none: " +
         (gpus.error.empty() ? std::string("CUDA enumerates 0 devices") : gpus.error) + "\n" +
         versions_line(gpus) + "  Likely cause: " + cause;
}

DeviceEntry entry_for(const kernels::GpuInfo& g, std::string host_id) {
  DeviceEntry e;
  e.ordinal = g.ordinal;
  e.name = g.name;
  e.uuid = g.uuid;
  e.pci_bus_id = g.pci_bus_id;
  e.host_id = std::move(host_id);
  e.memory_bytes = g.memory_bytes;
  return e;
}

std::string plural(size_t n, std::string_view what) {
  return std::to_string(n) + " " + std::string(what) + (n == 1 ? "" : "s");
}

// Host IDs for an NVIDIA_VISIBLE_DEVICES list. Returns an error message, or "".
std::string match_allocation(const VisibleDevices& nvidia, const VisibleDevices& cuda,
                             const kernels::GpuEnumeration& gpus, std::vector<std::string>& host_ids) {
  const auto& entries = nvidia.entries;
  const bool cuda_list = cuda.kind == VisibleDevicesKind::List;
  host_ids.assign(gpus.gpus.size(), "");
  std::vector<bool> entry_used(entries.size(), false);

  // By UUID first.
  for (size_t g = 0; g < gpus.gpus.size(); ++g) {
    for (size_t e = 0; e < entries.size(); ++e) {
      if (!is_uuid_entry(entries[e]) || !uuid_matches(entries[e], gpus.gpus[g])) continue;
      if (entry_used[e]) {
        return nvidia.variable + " entry " + entries[e].text + " matches more than one GPU CUDA shows; give "
               "more characters of the UUID\n" + both_lists(nvidia, gpus);
      }
      entry_used[e] = true;
      host_ids[g] = entries[e].text;
    }
  }
  const bool all_uuid = std::all_of(entries.begin(), entries.end(), is_uuid_entry);
  if (!cuda_list) {
    for (size_t e = 0; e < entries.size(); ++e) {
      if (is_uuid_entry(entries[e]) && !entry_used[e]) {
        return nvidia.variable + " names " + entries[e].text + ", which CUDA does not show\n" +
               both_lists(nvidia, gpus) +
               "  Likely cause: the GPU is in MIG mode (list its MIG devices instead), was given to "
               "another container, or is not on this host (nvidia-smi -L on the host lists the UUIDs)";
      }
    }
    if (all_uuid) {
      for (size_t g = 0; g < gpus.gpus.size(); ++g) {
        if (host_ids[g].empty()) {
          return "CUDA shows " + gpus.gpus[g].uuid + " (CUDA " + std::to_string(g) + "), which " +
                 nvidia.variable + " does not list\n" + both_lists(nvidia, gpus) +
                 "  Likely cause: GPU devices mounted by hand (--device /dev/nvidiaN, privileged mode) "
                 "besides the runtime's";
        }
      }
    }
  }

  // Then by position: the remaining entries in host-index order (legacy MIG
  // entries, which carry no index, keep their list order after them).
  std::vector<const DeviceId*> positional;
  for (size_t e = 0; e < entries.size(); ++e) {
    if (!is_uuid_entry(entries[e])) positional.push_back(&entries[e]);
  }
  std::stable_sort(positional.begin(), positional.end(), [](const DeviceId* a, const DeviceId* b) {
    const bool a_indexed = a->index >= 0, b_indexed = b->index >= 0;
    if (a_indexed != b_indexed) return a_indexed;
    return a_indexed && (a->index != b->index ? a->index < b->index : a->mig < b->mig);
  });
  if (positional.empty()) return "";
  if (!cuda_list) {
    size_t next = 0;
    for (size_t g = 0; g < gpus.gpus.size() && next < positional.size(); ++g) {
      if (host_ids[g].empty()) host_ids[g] = positional[next++]->text;
    }
  } else if (positional.size() == entries.size()) {
    // Inside the container CUDA numbers the allocated GPUs 0..n-1; the
    // CUDA_VISIBLE_DEVICES index picks one of those.
    for (size_t g = 0; g < gpus.gpus.size() && g < cuda.entries.size(); ++g) {
      const DeviceId& pick = cuda.entries[g];
      if (pick.kind == DeviceIdKind::Index && static_cast<size_t>(pick.index) < positional.size()) {
        host_ids[g] = positional[static_cast<size_t>(pick.index)]->text;
      }
    }
  }
  return "";
}

}  // namespace

std::string VisibleDevices::describe() const {
  if (!value) return variable + " unset";
  if (trim(*value).empty()) return variable + "='' (empty)";
  return variable + "=" + std::string(trim(*value));
}

VisibleDevices parse_nvidia_visible_devices(const std::optional<std::string>& value) {
  return parse(kNvidia, value, true);
}

VisibleDevices parse_cuda_visible_devices(const std::optional<std::string>& value) {
  return parse(kCuda, value, false);
}

DeviceDiscovery match_devices(const VisibleDevices& nvidia, const VisibleDevices& cuda,
                              const kernels::GpuEnumeration& gpus) {
  DeviceDiscovery d;
  if (!nvidia.ok()) {
    d.error = nvidia.error;
    return d;
  }
  if (!cuda.ok()) {
    d.error = cuda.error;
    return d;
  }
  const bool driver = gpus.driver_version > 0;
  const bool nvidia_list = nvidia.kind == VisibleDevicesKind::List;
  const bool cuda_list = cuda.kind == VisibleDevicesKind::List;

  if (nvidia.kind == VisibleDevicesKind::None) {
    d.source = nvidia.describe() + ": no GPU given to this container";
    return d;
  }
  if (cuda.kind == VisibleDevicesKind::Empty || cuda.kind == VisibleDevicesKind::None) {
    d.source = cuda.describe() + ": every GPU hidden from CUDA";
    return d;
  }
  d.gpus_allocated = nvidia_list || (driver && (nvidia.kind == VisibleDevicesKind::All || cuda_list));

  // Checked before anything else: CUDA hides such an entry and every one after
  // it, which would otherwise look like a driver problem.
  if (nvidia_list && cuda_list) {
    const size_t n = nvidia.entries.size();
    for (const auto& pick : cuda.entries) {
      if (pick.kind == DeviceIdKind::Index && static_cast<size_t>(pick.index) >= n) {
        d.error = cuda.variable + " entry " + pick.text + " names a GPU this container does not have: " +
                  nvidia.describe() + " gives " + plural(n, "GPU") + ", numbered 0.." + std::to_string(n - 1) +
                  " inside the container";
        return d;
      }
    }
  }

  if (gpus.gpus.empty()) {
    if (d.gpus_allocated) {
      d.error = allocated_but_none(nvidia, cuda, gpus);
    } else {
      d.source = "no GPU visible to CUDA (" + (gpus.error.empty() ? std::string("CUDA enumerates 0 devices") : gpus.error) +
                 "; " + nvidia.describe() + ")";
    }
    return d;
  }

  if (cuda_list) {
    if (gpus.gpus.size() != cuda.entries.size()) {
      d.error = cuda.variable + " lists " + plural(cuda.entries.size(), "device") + " but CUDA shows " +
                std::to_string(gpus.gpus.size()) + "\n" + both_lists(cuda, gpus) +
                "  Likely cause: an entry names a device that does not exist here; CUDA hides it and "
                "every entry after it" + (nvidia_list ? " (inside the container the GPUs of " + nvidia.describe() +
                                                            " are numbered 0.." + std::to_string(nvidia.entries.size() - 1) + ")"
                                                      : std::string());
      return d;
    }
    for (size_t i = 0; i < cuda.entries.size(); ++i) {
      if (is_uuid_entry(cuda.entries[i]) && !uuid_matches(cuda.entries[i], gpus.gpus[i])) {
        d.error = cuda.variable + " entry " + std::to_string(i + 1) + " is " + cuda.entries[i].text +
                  " but CUDA device " + std::to_string(i) + " is " + gpus.gpus[i].uuid + "\n" + both_lists(cuda, gpus);
        return d;
      }
    }
  }

  std::vector<std::string> host_ids(gpus.gpus.size());
  std::string how;
  if (nvidia_list) {
    const size_t n = nvidia.entries.size();
    if (!cuda_list && gpus.gpus.size() != n) {
      const bool more = gpus.gpus.size() > n;
      d.error = nvidia.variable + " lists " + plural(n, "GPU") + " but CUDA shows " +
                std::to_string(gpus.gpus.size()) + "\n" + both_lists(nvidia, gpus) + "  Likely cause: " +
                (more ? "GPU devices mounted by hand (--device /dev/nvidiaN, privileged mode) besides the "
                        "runtime's; set CUDA_VISIBLE_DEVICES or remove the extra mounts"
                      : "an allocated GPU is not visible: an ID that does not exist on this host, a GPU in "
                        "MIG mode listed by its GPU UUID, or a failed GPU (nvidia-smi -L on the host)");
      return d;
    }
    if (std::string error = match_allocation(nvidia, cuda, gpus, host_ids); !error.empty()) {
      d.error = std::move(error);
      return d;
    }
    const bool any_uuid = std::any_of(nvidia.entries.begin(), nvidia.entries.end(), is_uuid_entry);
    const bool any_position = !std::all_of(nvidia.entries.begin(), nvidia.entries.end(), is_uuid_entry);
    how = any_uuid && any_position ? "matched by UUID and by position"
          : any_uuid              ? "matched by UUID"
                                  : "matched by position in host-index order";
    d.source = nvidia.describe() + ": " + plural(gpus.gpus.size(), "GPU") + " " + how;
  } else {
    if (cuda_list) {
      for (size_t i = 0; i < cuda.entries.size(); ++i) host_ids[i] = cuda.entries[i].text;
    }
    d.source = nvidia.describe() + ": every GPU CUDA shows (" + std::to_string(gpus.gpus.size()) + ")";
  }
  if (cuda_list) d.source += ", selected by " + cuda.describe();

  for (size_t g = 0; g < gpus.gpus.size(); ++g) d.devices.push_back(entry_for(gpus.gpus[g], host_ids[g]));
  return d;
}

std::string format_device_table(const std::vector<DeviceEntry>& devices) {
  if (devices.empty()) return "";
  const auto memory = [](int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return std::string(text);
  };
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"CUDA", "Name", "UUID", "PCI bus ID", "Host ID", "Memory"});
  for (const auto& d : devices) {
    rows.push_back({d.ordinal < 0 ? std::string("cpu") : std::to_string(d.ordinal), d.name,
                    d.uuid.empty() ? "-" : d.uuid, d.pci_bus_id.empty() ? "-" : d.pci_bus_id,
                    d.host_id.empty() ? "-" : d.host_id, d.memory_bytes > 0 ? memory(d.memory_bytes) : "-"});
  }
  std::array<size_t, 6> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace cnnbench::bench
