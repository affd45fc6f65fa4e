// GPU discovery: which GPUs this process was given and how CUDA numbers them.
//
// NVIDIA_VISIBLE_DEVICES is set by the NVIDIA container runtime (docker run
// --gpus, the ECS GPU-optimized AMI) to the *host* IDs of the GPUs given to the
// container; inside, CUDA numbers them 0..N-1. CUDA_VISIBLE_DEVICES is applied on
// top by the CUDA runtime itself, in its list order. Sources: NVIDIA Container
// Toolkit, "Specialized configurations with Docker" (NVIDIA_VISIBLE_DEVICES); CUDA
// C++ Programming Guide, "CUDA environment variables" (CUDA_VISIBLE_DEVICES).
//
// Everything here is pure: values in, values out; the caller reads the
// environment and calls kernels::enumerate_gpus().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gpu_info.h"

namespace cnnbench::bench {

/// One GPU (or the CPU) a run trains on, as the header lists it.
struct DeviceEntry {
  int ordinal = -1;             ///< CUDA ordinal; -1 for the CPU
  std::string name;             ///< "NVIDIA H200", or the CPU model
  std::string uuid;             ///< "GPU-5d5b..." (empty for the CPU)
  std::string pci_bus_id;       ///< "0000:19:00.0" (empty for the CPU)
  std::string host_id;          ///< the entry of NVIDIA_VISIBLE_DEVICES it matched, if any
  int64_t memory_bytes = 0;     ///< total device memory
};

/// The form of one entry of a visible-devices list.
enum class DeviceIdKind {
  Index,       ///< "2": a host GPU index as nvidia-smi numbers it (docker run --gpus)
  Uuid,        ///< "GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab" (ECS)
  UuidPrefix,  ///< "GPU-5d5b": the first characters of a GPU UUID
  MigUuid,     ///< "MIG-5d5b1c7e-...": a MIG device's own UUID (driver R470 and later)
  MigLegacy,   ///< "MIG-GPU-<gpu uuid>/<gpu instance>/<compute instance>" (before R470)
  MigIndex,    ///< "0:1": GPU index : MIG device index (container runtime only)
};

/// One parsed entry.
struct DeviceId {
  DeviceIdKind kind = DeviceIdKind::Index;
  std::string text;  ///< the entry as given, without surrounding whitespace; UUIDs lower-cased
  int index = -1;    ///< Index, MigIndex: the GPU index
  int mig = -1;      ///< MigIndex: the MIG device index; MigLegacy: the GPU instance
  int compute_instance = -1;  ///< MigLegacy only
  /// Uuid, UuidPrefix, MigUuid: the UUID (or its prefix) without "GPU-"/"MIG-",
  /// lower-case, dashes kept; MigLegacy: the parent GPU's UUID likewise.
  std::string uuid;
};

/// What the whole value says.
enum class VisibleDevicesKind {
  Unset,  ///< the variable is not set
  Empty,  ///< set to "" (or only whitespace)
  Void,   ///< NVIDIA_VISIBLE_DEVICES=void: the NVIDIA runtime is inactive
  None,   ///< NVIDIA_VISIBLE_DEVICES=none, or CUDA_VISIBLE_DEVICES=-1: no GPU
  All,    ///< NVIDIA_VISIBLE_DEVICES=all
  List,   ///< a list of DeviceId
};

/// A parsed NVIDIA_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES value.
struct VisibleDevices {
  std::string variable;              ///< "NVIDIA_VISIBLE_DEVICES" or "CUDA_VISIBLE_DEVICES"
  std::optional<std::string> value;  ///< as read, untouched
  VisibleDevicesKind kind = VisibleDevicesKind::Unset;
  std::vector<DeviceId> entries;     ///< List only: in the order given
  /// Empty when the value is valid; else one message naming the variable, the
  /// value, the offending entry and the valid forms (a usage error: exit 2).
  std::string error;

  [[nodiscard]] bool ok() const { return error.empty(); }
  /// "NVIDIA_VISIBLE_DEVICES=0,1" or "NVIDIA_VISIBLE_DEVICES unset", for messages.
  [[nodiscard]] std::string describe() const;
};

/// Parses NVIDIA_VISIBLE_DEVICES: unset, "", "void", "none", "all" (lower-case,
/// alone), or a comma-separated list of indexes, GPU UUIDs or UUID prefixes, and
/// MIG identifiers (MIG-<uuid>, MIG-GPU-<uuid>/<gi>/<ci>, <gpu>:<mig>). Whitespace
/// around entries is ignored. Duplicates (same index, same UUID, one UUID a prefix
/// of another) and malformed entries are errors. Never throws but std::bad_alloc.
VisibleDevices parse_nvidia_visible_devices(const std::optional<std::string>& value);

/// Parses CUDA_VISIBLE_DEVICES with CUDA's forms: indexes, GPU UUIDs or prefixes,
/// MIG-<uuid> and MIG-GPU-<uuid>/<gi>/<ci>. "" and "-1" hide every GPU (None /
/// Empty). "all", "none", "void" and <gpu>:<mig> are errors: CUDA does not know
/// them and would silently hide every GPU. Never throws but std::bad_alloc.
VisibleDevices parse_cuda_visible_devices(const std::optional<std::string>& value);

/// The GPUs a run may use and how they were found.
struct DeviceDiscovery {
  /// In CUDA ordinal order. host_id is the NVIDIA_VISIBLE_DEVICES entry the device
  /// matched; without such a list, the CUDA_VISIBLE_DEVICES entry; else empty.
  std::vector<DeviceEntry> devices;
  /// GPUs were explicitly given to this process (an NVIDIA_VISIBLE_DEVICES list,
  /// "all" with a CUDA driver present, or a CUDA_VISIBLE_DEVICES list with a
  /// driver present): the run must use GPUs and never fall back to the CPU.
  bool gpus_allocated = false;
  /// One line for the header on where the list came from, e.g.
  /// "NVIDIA_VISIBLE_DEVICES=GPU-5d5b...,GPU-8e1f...: 2 GPUs, matched by UUID".
  std::string source;
  /// Empty when usable. Else a multi-line explanation (both lists, the likely
  /// cause, the driver and runtime versions): the caller prints it and exits 1.
  std::string error;

  [[nodiscard]] bool ok() const { return error.empty(); }
};

/// Matches CUDA's devices to the allocation. `nvidia` and `cuda` come from the
/// parsers above; `gpus` is what CUDA enumerated with that CUDA_VISIBLE_DEVICES.
///
/// Rules (DESIGN.md, "GPU discovery"): an NVIDIA_VISIBLE_DEVICES entry that is a
/// UUID matches the CUDA device with that UUID; index and MIG-index entries match
/// CUDA devices in ascending host-index order (the runtime mounts the devices and
/// CUDA orders identical GPUs by PCI bus, which is also nvidia-smi's order);
/// CUDA_VISIBLE_DEVICES then selects among the container's GPUs by position.
/// Errors: a parse error of either input; GPUs allocated but CUDA shows none
/// (no NVIDIA runtime in the container, driver older than the runtime, built
/// without CUDA); a count mismatch; a listed UUID that CUDA does not show.
/// Never throws but std::bad_alloc.
DeviceDiscovery match_devices(const VisibleDevices& nvidia, const VisibleDevices& cuda,
                              const kernels::GpuEnumeration& gpus);

/// The device table for the header, fixed-width columns, one line per device
/// after a title line, each line ending in '\n':
///   CUDA  Name         UUID                                      PCI bus ID        Host ID  Memory
///   0     NVIDIA H200  GPU-5d5b1c7e-1f8a-4c4e-9a3b-0123456789ab  00000000:19:00.0  0        139.8 GiB
/// An empty list gives "".
std::string format_device_table(const std::vector<DeviceEntry>& devices);

}  // namespace cnnbench::bench
