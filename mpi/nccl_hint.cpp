#include "mpi/nccl_hint.h"

#include <string>
#include <vector>

namespace cnnbench::mpi {

std::string nccl_hang_hint(NcclStage stage) {
  std::vector<std::string> causes;
  if (stage == NcclStage::Init) {
    causes.emplace_back(
        "the ranks cannot reach rank 0's bootstrap address: across hosts, containers on bridge "
        "networking do not work (use host or awsvpc networking)");
    causes.emplace_back("a rank did not start or failed before NCCL (look at every rank's output)");
  } else {
    causes.emplace_back(
        "another rank died or is stuck outside the collective (look at every rank's output; a "
        "peer that dies on the same host is not reported by NCCL, only this timeout catches it)");
  }
  causes.emplace_back(
      "GPU peer-to-peer transfers that the platform blocks (virtual machines, some PCIe "
      "switches): try NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL=NVL");
  causes.emplace_back(
      "/dev/shm too small inside a container: docker run --shm-size=1g --ulimit memlock=-1, ECS "
      "linuxParameters.sharedMemorySize=1024 (MiB) or ipcMode host; or NCCL_SHM_DISABLE=1 "
      "(slower)");
  causes.emplace_back(
      "the network interface NCCL chose: set NCCL_SOCKET_IFNAME (e.g. =eth0, or ^docker,lo to "
      "exclude)");
  std::string hint = "Likely causes: ";
  for (size_t i = 0; i < causes.size(); ++i) {
    hint.append("(").append(std::to_string(i + 1)).append(") ").append(causes[i]).append("; ");
  }
  hint += "to see what NCCL did, rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,SHM,P2P.";
  return hint;
}

}  // namespace cnnbench::mpi
