#include "mpi/launch.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace cnnbench::mpi {
namespace {

/// One variable read from the environment, kept for the evidence string.
struct Reader {
  const EnvLookup& env;
  std::string evidence;

  /// The variable as a non-negative integer; nullopt when unset. Surrounding
  /// spaces are tolerated; anything else that is not a decimal number throws.
  std::optional<int> integer(const std::string& name) {
    const std::optional<std::string> value = env(name);
    if (!value) return std::nullopt;
    std::string_view s = *value;
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
      s.remove_suffix(1);
    int parsed = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), parsed);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || parsed < 0) {
      throw std::invalid_argument("environment variable " + name + "='" + value->substr(0, 64) +
                                  "' set by the launcher is not a non-negative integer");
    }
    if (!evidence.empty()) evidence += ", ";
    evidence += name + "=" + std::to_string(parsed);
    return parsed;
  }
};

/// The tasks on node `node_id` of Slurm's SLURM_STEP_TASKS_PER_NODE: a comma list of
/// counts, each optionally repeated as "N(xR)" ("2(x3),1" = nodes 0-2 run 2 tasks,
/// node 3 runs 1; srun(1), "OUTPUT ENVIRONMENT VARIABLES"). Throws
/// std::invalid_argument naming the variables when the text is malformed or lists
/// fewer nodes than `node_id`.
int slurm_tasks_on_node(const std::string& text, int node_id) {
  const auto bad = [&text](const std::string& why) {
    return std::invalid_argument("environment variable SLURM_STEP_TASKS_PER_NODE='" + text.substr(0, 64) +
                                 "' set by srun " + why + " (expected counts such as '8(x2),4')");
  };
  std::string_view rest = text;
  int first_node = 0;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int tasks = 0;
    int repeat = 1;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), tasks);
    if (ec != std::errc() || tasks < 1) throw bad("is not a list of task counts");
    std::string_view tail(end, static_cast<size_t>(item.data() + item.size() - end));
    if (!tail.empty()) {
      if (tail.size() < 4 || tail.substr(0, 2) != "(x" || tail.back() != ')') throw bad("has a malformed repeat");
      const std::string_view count = tail.substr(2, tail.size() - 3);
      auto [count_end, count_ec] = std::from_chars(count.data(), count.data() + count.size(), repeat);
      if (count_ec != std::errc() || count_end != count.data() + count.size() || repeat < 1) {
        throw bad("has a malformed repeat");
      }
    }
    if (node_id < first_node + repeat) return tasks;
    first_node += repeat;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  throw bad("lists " + std::to_string(first_node) + " nodes, but SLURM_NODEID is " + std::to_string(node_id));
}

void check_index(int index, int size, const char* index_name, const char* size_name,
                 const std::string& evidence) {
  if (size > 0 && index >= size) {
    throw std::invalid_argument(std::string("the launcher's ") + index_name + " " +
                                std::to_string(index) + " is not below its " + size_name + " " +
                                std::to_string(size) + " (" + evidence + ")");
  }
}

LaunchInfo finish(Launcher launcher, std::optional<int> size, std::optional<int> rank,
                  std::optional<int> local_rank, std::optional<int> local_size,
                  std::string evidence) {
  LaunchInfo info;
  info.launcher = launcher;
  info.world_size = size.value_or(0);
  info.rank = rank.value_or(-1);
  info.local_rank = local_rank.value_or(-1);
  info.local_size = local_size.value_or(0);
  info.evidence = std::move(evidence);
  if (size && *size == 0) {
    throw std::invalid_argument("the launcher reports a job of 0 ranks (" + info.evidence + ")");
  }
  if (local_size && *local_size == 0) {
    throw std::invalid_argument("the launcher reports 0 ranks on this host (" + info.evidence +
                                ")");
  }
  check_index(info.rank, info.world_size, "rank", "world size", info.evidence);
  check_index(info.local_rank, info.local_size, "local rank", "local size", info.evidence);
  if (info.world_size > 0 && info.local_size > info.world_size) {
    throw std::invalid_argument("the launcher reports more ranks on this host than in the job (" +
                                info.evidence + ")");
  }
  // A job of one rank on one host: the local values follow.
  if (info.world_size == 1) {
    info.rank = 0;
    info.local_rank = 0;
    info.local_size = 1;
  }
  return info;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());  // main thread only, see the header
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

const char* to_string(Launcher launcher) {
  switch (launcher) {
    case Launcher::None:
      return "none";
    case Launcher::OpenMpi:
      return "Open MPI";
    case Launcher::Pmi:
      return "PMI (MPICH/Intel MPI)";
    case Launcher::Pmix:
      return "PMIx";
    case Launcher::Slurm:
      return "Slurm srun";
  }
  return "unknown";
}

const char* to_string(CommunicatorKind kind) {
  switch (kind) {
    case CommunicatorKind::Single:
      return "single";
    case CommunicatorKind::Mpi:
      return "mpi";
    case CommunicatorKind::Nccl:
      return "nccl";
  }
  return "unknown";
}

LaunchInfo detect_launch(const EnvLookup& env) {
  if (env("OMPI_COMM_WORLD_SIZE") || env("OMPI_COMM_WORLD_RANK")) {
    Reader r{env, {}};
    const auto size = r.integer("OMPI_COMM_WORLD_SIZE");
    const auto rank = r.integer("OMPI_COMM_WORLD_RANK");
    const auto local_rank = r.integer("OMPI_COMM_WORLD_LOCAL_RANK");
    const auto local_size = r.integer("OMPI_COMM_WORLD_LOCAL_SIZE");
    return finish(Launcher::OpenMpi, size, rank, local_rank, local_size, r.evidence);
  }
  if (env("PMI_SIZE") || env("PMI_RANK")) {
    Reader r{env, {}};
    const auto size = r.integer("PMI_SIZE");
    const auto rank = r.integer("PMI_RANK");
    const auto local_rank = r.integer("MPI_LOCALRANKID");
    const auto local_size = r.integer("MPI_LOCALNRANKS");
    return finish(Launcher::Pmi, size, rank, local_rank, local_size, r.evidence);
  }
  if (env("SLURM_STEP_NUM_TASKS")) {
    Reader r{env, {}};
    const auto size = r.integer("SLURM_STEP_NUM_TASKS");
    const auto rank = r.integer("SLURM_PROCID");
    const auto local_rank = r.integer("SLURM_LOCALID");
    // The tasks on this node: SLURM_STEP_TASKS_PER_NODE ("2(x3),1") at this node's
    // index; without both, MPI tells the local size.
    std::optional<int> local_size;
    const auto node_id = r.integer("SLURM_NODEID");
    const std::optional<std::string> per_node = env("SLURM_STEP_TASKS_PER_NODE");
    if (node_id && per_node) {
      local_size = slurm_tasks_on_node(*per_node, *node_id);
      r.evidence += ", SLURM_STEP_TASKS_PER_NODE=" + *per_node;
    }
    return finish(Launcher::Slurm, size, rank, local_rank, local_size, r.evidence);
  }
  if (env("PMIX_RANK")) {
    Reader r{env, {}};
    const auto rank = r.integer("PMIX_RANK");
    return finish(Launcher::Pmix, std::nullopt, rank, std::nullopt, std::nullopt, r.evidence);
  }
  return LaunchInfo{};
}

int gpu_for_local_rank(int local_rank, int local_size, int visible_gpus) {
  if (visible_gpus == 1 && local_size > 1) return 0;
  if (local_rank < 0 || local_rank >= visible_gpus) return -1;
  return local_rank;
}

std::string not_built_with_mpi_message(const LaunchInfo& launch) {
  std::string ranks =
      launch.world_size > 0 ? std::to_string(launch.world_size) + " ranks" : "several ranks";
  return "this process was started by " + std::string(to_string(launch.launcher)) + " as one of " +
         ranks + " (" + launch.evidence +
         "), but cnnbench was built without MPI (CNNBENCH_MPI=OFF), so the ranks cannot "
         "reduce gradients together. Fix: rebuild with -DCNNBENCH_MPI=ON and Open MPI's "
         "development files installed (Debian/Ubuntu: libopenmpi-dev), or run one process "
         "without mpirun: a single cnnbench process trains on all its GPUs (--num_gpus)";
}

std::unique_ptr<Communicator> make_communicator(const LaunchInfo& launch, CommunicatorKind wanted,
                                                const CommunicatorOptions& options) {
  if (!launch.needs_transport()) return make_single_worker();
  switch (wanted) {
    case CommunicatorKind::Single:
      throw std::invalid_argument(
          "started by " + std::string(to_string(launch.launcher)) + " (" + launch.evidence +
          ") but a single-worker run was asked for: every rank would train alone and report");
    case CommunicatorKind::Mpi:
      return make_mpi_communicator(launch);
    case CommunicatorKind::Nccl:
      return make_nccl_communicator(launch, options);
  }
  throw std::invalid_argument("make_communicator: unknown communicator kind");
}

}  // namespace cnnbench::mpi
