// How this process was started (alone, or as one rank of mpirun / srun) and the
// choice of Communicator that follows from it.
//
// Launchers describe the job in environment variables before MPI starts:
//   Open MPI (mpirun, 4.x and 5.x): OMPI_COMM_WORLD_SIZE, _RANK, _LOCAL_RANK, _LOCAL_SIZE
//   MPICH / Intel MPI (Hydra): PMI_SIZE, PMI_RANK, MPI_LOCALRANKID, MPI_LOCALNRANKS
//   PMIx servers (prterun, srun --mpi=pmix): PMIX_RANK (no size variable)
//   Slurm (srun): SLURM_STEP_NUM_TASKS, SLURM_PROCID, SLURM_LOCALID, and for the
//     local size SLURM_NODEID with SLURM_STEP_TASKS_PER_NODE ("8(x2),4")
// Sources: Open MPI 4.1 mpirun(1) "Environment variables"; MPICH Hydra's
// process manager documentation; Slurm srun(1) "OUTPUT ENVIRONMENT VARIABLES".
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "mpi/communicator.h"

namespace cnnbench::mpi {

/// Reads one environment variable; std::nullopt when unset. Same signature as
/// bench::EnvLookup, so one lookup serves both.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// getenv() of this process. Call from the main thread before threads start.
EnvLookup process_environment();

/// The program that started this process.
enum class Launcher { None, OpenMpi, Pmi, Pmix, Slurm };
/// "none", "Open MPI", "PMI (MPICH/Intel MPI)", "PMIx", "Slurm srun"
const char* to_string(Launcher launcher);

/// What the launcher told this process about the job. Values not given by the
/// launcher are 0 (size unknown) or -1 (rank unknown): MPI fills them in.
struct LaunchInfo {
  Launcher launcher = Launcher::None;
  int world_size = 1;  ///< ranks in the job; 0 = unknown until MPI starts
  int rank = 0;
  int local_rank = 0;  ///< rank among the job's ranks on this host; -1 = unknown
  int local_size = 1;  ///< ranks of the job on this host; 0 = unknown
  /// The variables that decided, for messages: "OMPI_COMM_WORLD_SIZE=4, OMPI_COMM_WORLD_RANK=1".
  std::string evidence;

  /// Started by a parallel launcher (even with one rank).
  [[nodiscard]] bool launched() const { return launcher != Launcher::None; }
  /// More than one rank, or a count that only MPI can tell: needs a transport.
  [[nodiscard]] bool needs_transport() const { return launched() && world_size != 1; }
};

/// Detects the launcher from `env`. Precedence: Open MPI, PMI, Slurm, PMIx: an
/// MPI launcher's own variables describe the MPI job best; srun --mpi=pmix sets
/// PMIX_RANK and the Slurm variables, and only the latter give the size. Slurm
/// counts only inside a job step (srun sets SLURM_STEP_NUM_TASKS; a batch
/// script alone, which has SLURM_NTASKS and SLURM_PROCID, is not a launch).
/// Throws std::invalid_argument naming the variable and its value when a
/// variable is not a number or the values contradict each other (rank >= size).
LaunchInfo detect_launch(const EnvLookup& env);

/// The transport a run wants.
enum class CommunicatorKind {
  Single,  ///< one worker, nothing to reduce
  Mpi,     ///< MPI for CPU ranks (host buffers, F32)
  Nccl,    ///< NCCL across MPI ranks, one GPU per rank (chosen by local rank)
};
const char* to_string(CommunicatorKind kind);  ///< "single", "mpi", "nccl"

/// Settings of the transports.
struct CommunicatorOptions {
  /// NCCL: how long ncclCommInitRank may take before it is aborted with a hint
  /// (a hang there usually means rank 0's bootstrap address is unreachable).
  std::chrono::milliseconds nccl_init_timeout{std::chrono::minutes(5)};
};

/// Picks and creates the communicator for this process:
///   not launched, or launched with one rank -> single worker, whatever `wanted`;
///   launched with several ranks -> `wanted` (Mpi or Nccl); Single is then an
///   error (the ranks would train independently and all report).
/// Throws CommunicatorUnavailable when the transport was not built (launched by
/// mpirun but built without MPI: the message gives the fix), CommunicatorError
/// when it fails to start, std::invalid_argument for Single under a launcher.
std::unique_ptr<Communicator> make_communicator(const LaunchInfo& launch, CommunicatorKind wanted,
                                                const CommunicatorOptions& options = {});

/// MPI for CPU ranks (mpi_communicator.cpp; stand-in when CNNBENCH_MPI is off).
std::unique_ptr<Communicator> make_mpi_communicator(const LaunchInfo& launch);
/// NCCL across MPI ranks (nccl_communicator.cpp; stand-in when CNNBENCH_CUDA is off).
std::unique_ptr<Communicator> make_nccl_communicator(const LaunchInfo& launch,
                                                     const CommunicatorOptions& options = {});
/// NCCL over an existing host communicator (normally make_mpi_communicator's),
/// which then carries the unique id, all_gather, broadcast, barrier and abort.
/// Lets the caller run checks over `host` (e.g. bench/preflight: two ranks on
/// one GPU) before NCCL starts. Every rank selects the GPU of its local rank
/// (device 0 where the process sees exactly one GPU) and calls cudaSetDevice.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> host,
                                                     const CommunicatorOptions& options = {});

/// The CUDA ordinal a rank uses, as make_nccl_communicator selects it: its
/// local rank where the process sees at least `local_size` GPUs; 0 where it
/// sees exactly one (a launcher that binds one GPU per rank, e.g. srun
/// --gpus-per-task=1); -1 where it has none (fewer GPUs than local ranks).
int gpu_for_local_rank(int local_rank, int local_size, int visible_gpus);

/// Whether this binary was built with MPI (CNNBENCH_MPI) / with NCCL (CNNBENCH_CUDA).
bool mpi_built();
bool nccl_built();
/// "Open MPI v4.1.4, ..." (MPI_Get_library_version, first line); empty when not built.
std::string mpi_library_version();
/// "2.28.9" (ncclGetVersion, the library loaded at run time); empty when not built.
std::string nccl_library_version();

/// The message for a process started by a launcher in a binary built without
/// MPI: what was detected and the fix (rebuild with MPI, or run one process).
std::string not_built_with_mpi_message(const LaunchInfo& launch);

}  // namespace cnnbench::mpi
