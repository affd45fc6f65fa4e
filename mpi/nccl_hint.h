// What to tell an operator when NCCL stops making progress. Pure text, compiled
// whether or not CUDA is, so that it is tested everywhere. Sources: NCCL user
// guide "Troubleshooting" and "Environment Variables"; NCCL.md sections 2 and 5.
#pragma once

#include <string>

namespace cnnbench::mpi {

/// Where NCCL stopped.
enum class NcclStage {
  Init,        ///< ncclCommInitRank / ncclCommInitAll did not finish
  Collective,  ///< an all-reduce enqueued earlier did not complete
};

/// One paragraph of likely causes and fixes: a dead or stalled peer, GPU
/// peer-to-peer (NCCL_P2P_DISABLE / NCCL_P2P_LEVEL), /dev/shm in containers
/// (--shm-size, ECS sharedMemorySize, NCCL_SHM_DISABLE), the network interface
/// (NCCL_SOCKET_IFNAME; for Init also bridge networking across hosts), and how
/// to see what NCCL did (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS).
std::string nccl_hang_hint(NcclStage stage);

}  // namespace cnnbench::mpi
