// Checks before NCCL starts: problems that otherwise show up as a hang, a
// segfault inside NCCL or a cryptic launcher message, each turned into one
// finding that says what is wrong (with the values found) and how to fix it.
//
// Every check is a pure function over injected facts (the /dev/shm size, GPU
// UUIDs gathered from all ranks, an environment lookup, interface names), so
// the tests can fake any host; gather_host_facts() reads the real ones.
// Sources: NCCL.md (sections 1, 5, 6), NCCL's "Environment Variables" and
// "Troubleshooting" guides, Open MPI 4.1 mpirun(1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mpi/launch.h"

namespace cnnbench::bench::preflight {

enum class Severity {
  Warning,  ///< the run goes on; results or stability may suffer
  Error,    ///< the run would fail or hang: stop before NCCL starts
};
const char* to_string(Severity severity);  ///< "warning", "error"

/// One problem found.
struct Finding {
  Severity severity = Severity::Warning;
  std::string check;    ///< which check: "shm", "duplicate_gpu", "local_gpus", "mpi_build",
                        ///< "run_as_root", "nccl_env"
  std::string problem;  ///< what is wrong, with the values found
  std::string fix;      ///< what to do
};

/// "error: <problem>. Fix: <fix>" on one line.
std::string format(const Finding& finding);
/// Whether any finding is an Error.
bool has_error(const std::vector<Finding>& findings);

/// What the checks need to know about this host.
struct HostFacts {
  /// Size of the /dev/shm filesystem in bytes (statvfs: f_blocks × f_frsize);
  /// std::nullopt when /dev/shm does not exist.
  std::optional<uint64_t> shm_bytes;
  bool in_container = false;            ///< /.dockerenv, /run/.containerenv, ECS or Kubernetes
  bool in_ecs = false;                  ///< ECS_CONTAINER_METADATA_URI(_V4) set
  std::vector<std::string> interfaces;  ///< network interface names; empty = not known
  uint32_t effective_uid = 0;
};

/// Reads the facts of this host: statvfs("/dev/shm"), marker files, `env`,
/// if_nameindex(), geteuid().
HostFacts gather_host_facts(const mpi::EnvLookup& env);

/// Bytes of /dev/shm that NCCL's shared-memory transport may need between
/// `local_gpus` GPUs of one host: one segment of about 9.6 MB (LL 512 KiB +
/// LL128 about 4.7 MiB + SIMPLE 4 MiB buffers) per connection, counted as one
/// receive and one send connection per GPU for each of 2 channels (NCCL.md
/// section 5). An estimate of the order of magnitude: 2 GPUs already exceed
/// Docker's 64 MiB default; NCCL itself recommends --shm-size=1g. 0 for <= 1 GPU.
uint64_t shm_bytes_needed(int local_gpus);

/// /dev/shm smaller than shm_bytes_needed(local_gpus): an Error when NCCL must
/// use it (NCCL_P2P_DISABLE=1), else a Warning (GPUs with peer-to-peer access,
/// e.g. NVLink, do not need it). Nothing when NCCL_SHM_DISABLE=1 or <= 1 GPU.
std::optional<Finding> check_shm(const HostFacts& host, int local_gpus, const mpi::EnvLookup& env);

/// Two or more workers on one GPU: `uuid_by_rank[r]` is rank r's GPU UUID
/// (gathered with Communicator::all_gather; empty = no GPU, ignored),
/// `host_by_rank[r]` its host name (may be empty). Names every shared GPU and
/// its ranks. NCCL refuses such a run at init ("Duplicate GPU detected").
std::optional<Finding> check_duplicate_gpus(const std::vector<std::string>& uuid_by_rank,
                                            const std::vector<std::string>& host_by_rank = {});

/// More ranks on this host than GPUs this process sees. A process that sees
/// exactly one GPU is accepted (a launcher that binds one GPU per rank);
/// check_duplicate_gpus catches those that share it.
std::optional<Finding> check_local_gpus(int local_ranks, int visible_gpus);

/// Started by a launcher with several ranks in a binary built without MPI.
std::optional<Finding> check_mpi_built(const mpi::LaunchInfo& launch, bool mpi_built);

/// Root with Open MPI's root permission only half given (one of
/// OMPI_ALLOW_RUN_AS_ROOT / _CONFIRM, or a value other than 1): explains what
/// mpirun's refusal to run as root means and how to allow it.
std::optional<Finding> check_run_as_root(uint32_t effective_uid, const mpi::LaunchInfo& launch,
                                         const mpi::EnvLookup& env);

/// What Open MPI's "mpirun has detected an attempt to run as root" means and
/// the three ways past it; used by check_run_as_root.
std::string explain_mpirun_root_refusal();

/// NCCL variables that look wrong: NCCL_SOCKET_IFNAME matching none of
/// `interfaces` (or excluding all of them), NCCL_P2P_LEVEL / NCCL_DEBUG values
/// NCCL does not know, non-numeric NCCL_*_DISABLE, and P2P/SHM switched off
/// (slower than the hardware allows). Warnings only.
std::vector<Finding> check_nccl_env(const mpi::EnvLookup& env,
                                    const std::vector<std::string>& interfaces);

/// Everything the checks of one process need.
struct LocalInputs {
  HostFacts host;
  mpi::LaunchInfo launch;
  mpi::EnvLookup env;
  bool mpi_built = false;
  bool uses_nccl = false;  ///< gradients reduced over NCCL (several GPUs or GPU ranks)
  int local_gpus = 1;      ///< NCCL ranks on this host: GPUs of this process, or local ranks
  int local_ranks = 1;     ///< processes of the job on this host (1 without a launcher)
  int visible_gpus = 0;    ///< GPUs this process sees
};

/// The checks that need no other rank, in this order: mpi_build, run_as_root,
/// and when NCCL is used local_gpus, shm, nccl_env.
std::vector<Finding> run_local_checks(const LocalInputs& inputs);

}  // namespace cnnbench::bench::preflight
