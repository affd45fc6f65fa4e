#include "bench/discovery/preflight.h"

#include <net/if.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <map>
#include <string_view>

#include "bench/discovery/text.h"

namespace cnnbench::bench::preflight {
namespace {

/// About 9.6 MB per shared-memory connection (NCCL.md section 5).
constexpr uint64_t kShmSegmentBytes = 9'600'000;
/// Channels counted per GPU pair by the estimate.
constexpr uint64_t kShmChannels = 2;

std::string mib_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

/// A value shown in a message: quoted, cut, control bytes replaced.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 120; ++i) {
    const auto byte = static_cast<unsigned char>(s[i]);
    out += byte < 0x20 || byte >= 0x7f ? '?' : static_cast<char>(byte);
  }
  if (s.size() > 120) out += "...";
  return out + "'";
}

std::optional<int> as_int(const std::string& value) {
  const std::string t(trim(value));
  int parsed = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), parsed);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return parsed;
}

/// The variable is set to a number other than 0.
bool switched_on(const mpi::EnvLookup& env, const std::string& name) {
  const auto value = env(name);
  if (!value) return false;
  const auto number = as_int(*value);
  return number && *number != 0;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

Finding warning(const char* check, std::string problem, std::string fix) {
  return {Severity::Warning, check, std::move(problem), std::move(fix)};
}

Finding error(const char* check, std::string problem, std::string fix) {
  return {Severity::Error, check, std::move(problem), std::move(fix)};
}

/// NCCL_SOCKET_IFNAME syntax: an optional '^' (exclude the listed), then an
/// optional '=' (exact names instead of prefixes), then a comma-separated list.
struct IfnameFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  explicit IfnameFilter(std::string_view value) {
    if (!value.empty() && value.front() == '^') {
      exclude = true;
      value.remove_prefix(1);
    }
    if (!value.empty() && value.front() == '=') {
      exact = true;
      value.remove_prefix(1);
    }
    while (!value.empty()) {
      const size_t comma = value.find(',');
      const std::string name(trim(value.substr(0, comma)));
      if (!name.empty()) names.push_back(name);
      if (comma == std::string_view::npos) break;
      value.remove_prefix(comma + 1);
    }
  }

  [[nodiscard]] bool listed(const std::string& interface) const {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return exact ? interface == n : interface.rfind(n, 0) == 0;
    });
  }
  /// Whether NCCL may use `interface` under this filter.
  [[nodiscard]] bool selects(const std::string& interface) const {
    return exclude ? !listed(interface) : listed(interface);
  }
};

void check_socket_ifname(const mpi::EnvLookup& env, const std::vector<std::string>& interfaces,
                         std::vector<Finding>& out) {
  const auto value = env("NCCL_SOCKET_IFNAME");
  if (!value || interfaces.empty()) return;
  const IfnameFilter filter(*value);
  if (filter.names.empty()) {
    out.push_back(
        warning("nccl_env", "NCCL_SOCKET_IFNAME=" + quoted(*value) + " names no interface",
                "unset it, or name an interface of this host (" + join(interfaces, ", ") + ")"));
    return;
  }
  const bool any = std::any_of(interfaces.begin(), interfaces.end(),
                               [&](const std::string& i) { return filter.selects(i); });
  if (any) return;
  out.push_back(warning(
      "nccl_env",
      "NCCL_SOCKET_IFNAME=" + quoted(*value) +
          (filter.exclude ? " excludes every" : " matches none of") +
          " this host's network interfaces (" + join(interfaces, ", ") +
          "): NCCL's bootstrap will find no socket interface and fail or hang",
      "set it to an interface that exists here, e.g. NCCL_SOCKET_IFNAME=" +
          (interfaces.size() > 1 && interfaces[0] == "lo" ? interfaces[1] : interfaces[0]) +
          " (a prefix matches: eth matches eth0; =eth0 matches exactly; ^docker,lo excludes), "
          "or unset it to let NCCL choose"));
}

void check_p2p_level(const mpi::EnvLookup& env, std::vector<Finding>& out) {
  const auto value = env("NCCL_P2P_LEVEL");
  if (!value) return;
  static const char* const kLevels[] = {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"};
  std::string upper(trim(*value));
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const bool named = std::any_of(std::begin(kLevels), std::end(kLevels),
                                 [&](const char* level) { return upper == level; });
  const auto number = as_int(*value);
  if (named || (number && *number >= 0)) return;
  out.push_back(warning("nccl_env",
                        "NCCL_P2P_LEVEL=" + quoted(*value) + " is not a level NCCL knows",
                        "use one of LOC, NVL, PIX, PXB, PHB, SYS (the farthest path over which "
                        "GPUs use peer-to-peer), or unset it"));
}

void check_debug(const mpi::EnvLookup& env, std::vector<Finding>& out) {
  const auto value = env("NCCL_DEBUG");
  if (!value) return;
  const std::string level = lower(trim(*value));
  if (level == "version" || level == "warn" || level == "info" || level == "trace") return;
  out.push_back(warning("nccl_env", "NCCL_DEBUG=" + quoted(*value) + " is not a level NCCL knows",
                        "use VERSION, WARN, INFO or TRACE (INFO with NCCL_DEBUG_SUBSYS=INIT,NET "
                        "shows how NCCL connects)"));
}

void check_switches(const mpi::EnvLookup& env, std::vector<Finding>& out) {
  for (const char* name : {"NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE"}) {
    const auto value = env(name);
    if (value && !as_int(*value)) {
      out.push_back(
          warning("nccl_env", std::string(name) + "=" + quoted(*value) + " is not a number",
                  std::string("set ") + name + "=1 to switch the transport off, or unset it"));
    }
  }
  const bool p2p_off = switched_on(env, "NCCL_P2P_DISABLE");
  const bool shm_off = switched_on(env, "NCCL_SHM_DISABLE");
  if (p2p_off && shm_off) {
    out.push_back(warning(
        "nccl_env",
        "NCCL_P2P_DISABLE and NCCL_SHM_DISABLE are both set: GPUs of this host exchange "
        "gradients through the network stack, and images/sec will be far below what the "
        "hardware allows",
        "unset both unless they work around a hang; to avoid /dev/shm limits, enlarge /dev/shm "
        "instead (docker --shm-size=1g)"));
  } else if (p2p_off) {
    out.push_back(warning(
        "nccl_env",
        "NCCL_P2P_DISABLE is set: GPUs of this host exchange gradients through host memory "
        "instead of NVLink/PCIe peer-to-peer, and images/sec will be lower than the hardware "
        "allows",
        "unset it unless it works around a hang (NCCL_P2P_LEVEL=NVL is a milder choice)"));
  }
}

}  // namespace

const char* to_string(Severity severity) {
  return severity == Severity::Error ? "error" : "warning";
}

std::string format(const Finding& finding) {
  return std::string(to_string(finding.severity)) + ": " + finding.problem +
         ". Fix: " + finding.fix;
}

bool has_error(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.severity == Severity::Error; });
}

HostFacts gather_host_facts(const mpi::EnvLookup& env) {
  HostFacts facts;
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) == 0) {
    facts.shm_bytes = static_cast<uint64_t>(fs.f_blocks) * static_cast<uint64_t>(fs.f_frsize);
  }
  facts.in_ecs = env("ECS_CONTAINER_METADATA_URI_V4").has_value() ||
                 env("ECS_CONTAINER_METADATA_URI").has_value();
  facts.in_container = facts.in_ecs || access("/.dockerenv", F_OK) == 0 ||
                       access("/run/.containerenv", F_OK) == 0 ||
                       env("KUBERNETES_SERVICE_HOST").has_value();
  if (struct if_nameindex* list = if_nameindex(); list != nullptr) {
    for (const struct if_nameindex* i = list; i->if_index != 0 && i->if_name != nullptr; ++i) {
      facts.interfaces.emplace_back(i->if_name);
    }
    if_freenameindex(list);
  }
  facts.effective_uid = static_cast<uint32_t>(geteuid());
  return facts;
}

uint64_t shm_bytes_needed(int local_gpus) {
  if (local_gpus <= 1) return 0;
  // Per GPU: a receive and a send connection per channel.
  return static_cast<uint64_t>(local_gpus) * 2 * kShmChannels * kShmSegmentBytes;
}

std::optional<Finding> check_shm(const HostFacts& host, int local_gpus, const mpi::EnvLookup& env) {
  if (local_gpus <= 1 || switched_on(env, "NCCL_SHM_DISABLE")) return std::nullopt;
  const std::string fix =
      host.in_ecs
          ? "in the ECS task definition set linuxParameters.sharedMemorySize to 1024 (MiB), or "
            "ipcMode to host (neither exists on Fargate); with docker run: --shm-size=1g "
            "--ulimit memlock=-1"
      : host.in_container
          ? "start the container with docker run --shm-size=1g --ulimit memlock=-1 (or "
            "--ipc=host); in an ECS task definition: linuxParameters.sharedMemorySize 1024 (MiB) "
            "or ipcMode host"
          : "enlarge it, e.g. mount -o remount,size=1G /dev/shm";
  if (!host.shm_bytes) {
    return warning("shm",
                   "/dev/shm does not exist: NCCL cannot use shared memory between the " +
                       std::to_string(local_gpus) + " GPUs of this host",
                   fix + "; or set NCCL_SHM_DISABLE=1 (slower)");
  }
  const uint64_t needed = shm_bytes_needed(local_gpus);
  if (*host.shm_bytes >= needed) return std::nullopt;
  const bool must_use_shm = switched_on(env, "NCCL_P2P_DISABLE");
  std::string problem = "/dev/shm is " + mib_text(*host.shm_bytes) + " but NCCL may need about " +
                        mib_text(needed) + " of shared memory between the " +
                        std::to_string(local_gpus) + " GPUs of this host";
  problem += must_use_shm
                 ? " (NCCL_P2P_DISABLE=1, so all traffic between them goes through /dev/shm): "
                   "NCCL will fail with 'No space left on device' or crash in ncclShmOpen"
                 : " when they cannot use peer-to-peer (no NVLink, or P2P blocked): NCCL would "
                   "then fail with 'No space left on device'";
  if (must_use_shm) return error("shm", problem, fix);
  return warning("shm", problem, fix);
}

std::optional<Finding> check_duplicate_gpus(const std::vector<std::string>& uuid_by_rank,
                                            const std::vector<std::string>& host_by_rank) {
  std::map<std::string, std::vector<size_t>> ranks_by_uuid;
  for (size_t r = 0; r < uuid_by_rank.size(); ++r) {
    const std::string uuid = lower(trim(uuid_by_rank[r]));
    if (!uuid.empty()) ranks_by_uuid[uuid].push_back(r);
  }
  std::vector<std::string> shared;
  for (const auto& [uuid, ranks] : ranks_by_uuid) {
    if (ranks.size() < 2) continue;
    std::vector<std::string> names;
    for (const size_t r : ranks) names.push_back(std::to_string(r));
    std::string text =
        "ranks " + join(names, " and ") + " both use GPU " + std::string(trim(uuid_by_rank[ranks[0]]));
    if (ranks[0] < host_by_rank.size() && !host_by_rank[ranks[0]].empty()) {
      text += " on host " + host_by_rank[ranks[0]];
    }
    shared.push_back(text);
  }
  if (shared.empty()) return std::nullopt;
  return error("duplicate_gpu", join(shared, "; "),
               "give every rank its own GPU: start at most as many ranks per host as it has GPUs "
               "(mpirun -np N), and if a wrapper sets CUDA_VISIBLE_DEVICES per rank, make the "
               "lists disjoint. NCCL refuses such a run at init ('Duplicate GPU detected')");
}

std::optional<Finding> check_local_gpus(int local_ranks, int visible_gpus) {
  if (local_ranks <= 1 || visible_gpus == 1 || local_ranks <= visible_gpus) return std::nullopt;
  const std::string first_without = std::to_string(visible_gpus);
  const std::string last = std::to_string(local_ranks - 1);
  return error(
      "local_gpus",
      std::to_string(local_ranks) + " ranks were started on this host but this process sees " +
          std::to_string(visible_gpus) + " GPU" + (visible_gpus == 1 ? "" : "s") + ": local rank" +
          (first_without == last ? " " + last : "s " + first_without + ".." + last) +
          " would have no GPU",
      "start at most " + std::to_string(visible_gpus) + " ranks per host (mpirun -np " +
          std::to_string(std::max(visible_gpus, 1)) +
          ", or --map-by ppr:" + std::to_string(std::max(visible_gpus, 1)) +
          ":node across hosts), or give the container more GPUs (docker run --gpus all; ECS "
          "resourceRequirements type GPU)");
}

std::optional<Finding> check_mpi_built(const mpi::LaunchInfo& launch, bool mpi_built) {
  if (mpi_built || !launch.needs_transport()) return std::nullopt;
  const std::string ranks = launch.world_size > 0 ? std::to_string(launch.world_size) : "several";
  return error("mpi_build",
               "started by " + std::string(mpi::to_string(launch.launcher)) + " as one of " +
                   ranks + " ranks (" + launch.evidence +
                   ") but this cnnbench was built without MPI (CNNBENCH_MPI=OFF): the ranks "
                   "cannot reduce gradients together",
               "rebuild with -DCNNBENCH_MPI=ON and Open MPI's development files (Debian/Ubuntu: "
               "libopenmpi-dev), or run one process without mpirun: it trains on all its GPUs "
               "(--num_gpus)");
}

std::string explain_mpirun_root_refusal() {
  return "Open MPI's mpirun refuses to start as root unless root is allowed explicitly, and "
         "prints 'mpirun has detected an attempt to run as root'; that message is Open MPI's "
         "safety rule, not a failure of cnnbench. Allow it with mpirun --allow-run-as-root, or "
         "with both OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, or run as a "
         "non-root user";
}

std::optional<Finding> check_run_as_root(uint32_t effective_uid, const mpi::LaunchInfo& launch,
                                         const mpi::EnvLookup& env) {
  if (effective_uid != 0) return std::nullopt;
  const auto allow = env("OMPI_ALLOW_RUN_AS_ROOT");
  const auto confirm = env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
  // Neither set: plain root (fine without mpirun; under Open MPI it was
  // allowed with --allow-run-as-root).
  if (!allow && !confirm) return std::nullopt;
  const bool allow_ok = allow && trim(*allow) == "1";
  const bool confirm_ok = confirm && trim(*confirm) == "1";
  if (allow_ok && confirm_ok) return std::nullopt;
  std::string problem = "running as root with ";
  problem += allow ? "OMPI_ALLOW_RUN_AS_ROOT=" + quoted(*allow) : "OMPI_ALLOW_RUN_AS_ROOT unset";
  problem += " and ";
  problem += confirm ? "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=" + quoted(*confirm)
                     : "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM unset";
  problem += launch.launcher == mpi::Launcher::OpenMpi
                 ? " (mpirun was allowed by --allow-run-as-root this time)"
                 : ": Open MPI needs both set to 1";
  return warning("run_as_root", problem, explain_mpirun_root_refusal());
}

std::vector<Finding> check_nccl_env(const mpi::EnvLookup& env,
                                    const std::vector<std::string>& interfaces) {
  std::vector<Finding> out;
  check_socket_ifname(env, interfaces, out);
  check_p2p_level(env, out);
  check_debug(env, out);
  check_switches(env, out);
  return out;
}

std::vector<Finding> run_local_checks(const LocalInputs& in) {
  std::vector<Finding> out;
  auto add = [&out](std::optional<Finding> f) {
    if (f) out.push_back(std::move(*f));
  };
  add(check_mpi_built(in.launch, in.mpi_built));
  add(check_run_as_root(in.host.effective_uid, in.launch, in.env));
  if (in.uses_nccl) {
    add(check_local_gpus(in.local_ranks, in.visible_gpus));
    add(check_shm(in.host, in.local_gpus, in.env));
    for (Finding& f : check_nccl_env(in.env, in.host.interfaces)) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace cnnbench::bench::preflight
