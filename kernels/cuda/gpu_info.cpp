// GPU enumeration and library versions through the CUDA runtime, cuBLAS, cuDNN
// and NCCL. Errors become GpuEnumeration::error: a host without GPUs or without a
// driver is an expected state that the caller reports.
#include "kernels/gpu_info.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <library_types.h>

#include <array>
#include <cstdio>
#include <string>

namespace cnnbench::kernels {
namespace {

std::string describe(const char* call, cudaError_t status) {
  return std::string(call) + ": " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")";
}

// nvidia-smi's spelling: 8-4-4-4-12 lower-case hex digits after "GPU-".
std::string format_uuid(const cudaUUID_t& uuid) {
  std::string out = "GPU-";
  for (int i = 0; i < 16; ++i) {
    std::array<char, 3> hex{};
    std::snprintf(hex.data(), hex.size(), "%02x", static_cast<unsigned>(static_cast<unsigned char>(uuid.bytes[i])));
    out += hex.data();
    if (i == 3 || i == 5 || i == 7 || i == 9) out += '-';
  }
  return out;
}

// nvidia-smi prints the domain with 8 hex digits; cudaDeviceGetPCIBusId uses 4.
std::string format_pci_bus_id(const cudaDeviceProp& prop) {
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "%08X:%02X:%02X.0", static_cast<unsigned>(prop.pciDomainID),
                static_cast<unsigned>(prop.pciBusID), static_cast<unsigned>(prop.pciDeviceID));
  return text.data();
}

std::string dotted(int major, int minor, int patch) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

GpuEnumeration enumerate_gpus() {
  GpuEnumeration result;
  result.built_with_cuda = true;
  // Both calls succeed without a GPU; the driver version is 0 without libcuda.
  if (cudaDriverGetVersion(&result.driver_version) != cudaSuccess) result.driver_version = 0;
  if (cudaRuntimeGetVersion(&result.runtime_version) != cudaSuccess) result.runtime_version = 0;

  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    result.error = describe("cudaGetDeviceCount", status);
    (void)cudaGetLastError();  // clear the error so later CUDA calls do not see it
    return result;
  }
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp prop{};
    status = cudaGetDeviceProperties(&prop, ordinal);
    if (status != cudaSuccess) {
      result.gpus.clear();
      result.error = describe("cudaGetDeviceProperties", status) + " for CUDA device " + std::to_string(ordinal);
      (void)cudaGetLastError();
      return result;
    }
    GpuInfo info;
    info.ordinal = ordinal;
    info.name = prop.name;
    info.uuid = format_uuid(prop.uuid);
    info.pci_bus_id = format_pci_bus_id(prop);
    info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.compute_capability_major = prop.major;
    info.compute_capability_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    result.gpus.push_back(std::move(info));
  }
  return result;
}

LibraryVersions library_versions() {
  LibraryVersions versions;
  // cuDNN 9 encodes major*10000 + minor*100 + patch; cuDNN 8 used major*1000 + minor*100 + patch.
  const auto cudnn = static_cast<int>(cudnnGetVersion());
  if (cudnn >= 90000) {
    versions.cudnn = dotted(cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100);
  } else if (cudnn > 0) {
    versions.cudnn = dotted(cudnn / 1000, (cudnn % 1000) / 100, cudnn % 100);
  }

  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    versions.cublas = dotted(major, minor, patch);
  }
  return versions;
}

}  // namespace cnnbench::kernels
