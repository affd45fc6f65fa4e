// What the CUDA runtime sees: the GPUs it enumerates, the driver and runtime
// versions, and the versions of the CUDA libraries linked in. Implemented by
// kernels/cuda/gpu_info.cpp, or by kernels/cuda/gpu_info_unavailable.cpp in a
// build without CUDA. Nothing here reads the environment or prints; failures are
// returned as values (a machine without GPUs is a normal state, not an exception).
// Sources: CUDA Runtime API reference (cudaGetDeviceCount, cudaGetDeviceProperties,
// cudaDriverGetVersion, cudaRuntimeGetVersion); nvidia-smi's output for the
// spelling of UUIDs and PCI bus IDs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cnnbench::kernels {

/// One device as CUDA enumerates it (after CUDA_VISIBLE_DEVICES was applied).
struct GpuInfo {
  int ordinal = -1;  ///< CUDA ordinal, 0..N-1 in CUDA's enumeration order
  std::string name;  ///< cudaDeviceProp::name, e.g. "NVIDIA H200"
  /// cudaDeviceProp::uuid written as nvidia-smi prints it:
  /// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex. For a MIG
  /// instance CUDA reports the MIG device's UUID, which nvidia-smi prints with the
  /// prefix "MIG-" instead: compare the part after the prefix.
  std::string uuid;
  /// PCI address as nvidia-smi prints it, "00000000:19:00.0" (domain:bus:device.function,
  /// upper-case hex). CUDA does not report the function; GPUs are function 0.
  std::string pci_bus_id;
  int64_t memory_bytes = 0;  ///< cudaDeviceProp::totalGlobalMem
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessors = 0;  ///< streaming multiprocessors
};

/// The result of asking CUDA for its devices.
struct GpuEnumeration {
  bool built_with_cuda = false;  ///< false in a build with CNNBENCH_CUDA=OFF
  std::vector<GpuInfo> gpus;     ///< empty when error is set
  /// cudaDriverGetVersion: the newest CUDA version the installed driver supports,
  /// 1000 × major + 10 × minor (12040 = 12.4); 0 when no driver library was found.
  int driver_version = 0;
  /// cudaRuntimeGetVersion: the CUDA runtime this binary was linked with, same encoding.
  int runtime_version = 0;
  /// Empty on success; else the failing call, cudaGetErrorName and
  /// cudaGetErrorString, e.g. "cudaGetDeviceCount: cudaErrorNoDevice (no
  /// CUDA-capable device is detected)", or why CUDA is not built in.
  std::string error;
};

/// Lists the devices the CUDA runtime shows this process. Never throws for a
/// machine without GPUs or driver: the reason is in GpuEnumeration::error.
/// Creates no CUDA context. Throws std::bad_alloc only.
GpuEnumeration enumerate_gpus();

/// Versions of the CUDA libraries this binary loaded, as "major.minor.patch";
/// each empty when the library is not built in.
struct LibraryVersions {
  std::string cudnn;   ///< cudnnGetVersion() of the loaded library
  std::string cublas;  ///< cublasGetProperty(MAJOR/MINOR/PATCH_LEVEL)
};

/// Reads LibraryVersions. Needs no GPU. Throws nothing but std::bad_alloc.
LibraryVersions library_versions();

/// "12.4" from 12040 (the encoding of cudaDriverGetVersion / cudaRuntimeGetVersion);
/// "none" for 0 (no driver).
inline std::string format_cuda_version(int version) {
  if (version <= 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace cnnbench::kernels
