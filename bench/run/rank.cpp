#include "bench/run/rank.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/discovery/preflight.h"
#include "bench/status.h"
#include "bench/telemetry/session.h"
#include "mpi/host.h"
#include "mpi/launch.h"

namespace cnnbench::bench {
namespace {

/// One rank's GPU as every rank learns it before NCCL starts.
struct RankGpu {
  std::string host;
  int ordinal = -1;  ///< -1: the rank has no GPU
  std::string uuid;
};

std::vector<RankGpu> gather_rank_gpus(mpi::Communicator& host_comm, const RankGpu& mine) {
  const nlohmann::json j = {{"host", mine.host}, {"ordinal", mine.ordinal}, {"uuid", mine.uuid}};
  std::vector<RankGpu> all;
  for (const auto& text : host_comm.all_gather(j.dump())) {
    const nlohmann::json r = nlohmann::json::parse(text);
    all.push_back({r.at("host").get<std::string>(), r.at("ordinal").get<int>(), r.at("uuid").get<std::string>()});
  }
  return all;
}

/// The checks that need every rank's GPU, made identically on every rank;
/// throws CollectiveError on a problem.
void check_rank_gpus(const std::vector<RankGpu>& ranks, int visible_gpus, const mpi::Communicator& host_comm) {
  std::string missing;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].ordinal < 0) {
      if (!missing.empty()) missing += ", ";
      missing += "rank " + std::to_string(r) + " on " + ranks[r].host;
    }
  }
  if (!missing.empty()) {
    throw CollectiveError(
        "more ranks than GPUs: " + missing + " has no GPU (" + std::to_string(host_comm.local_size()) +
            " ranks on this host, " + std::to_string(visible_gpus) +
            " GPUs visible to each). Fix: start at most as many ranks per host as it has GPUs "
            "(mpirun -np N, or --map-by ppr:N:node), and give the container every GPU",
        kExitFailure);
  }
  std::vector<std::string> uuids, hosts;
  for (const auto& r : ranks) {
    uuids.push_back(r.uuid);
    hosts.push_back(r.host);
  }
  if (const auto finding = preflight::check_duplicate_gpus(uuids, hosts)) {
    throw CollectiveError(preflight::format(*finding), kExitFailure);
  }
}

/// Rank 0's telemetry: the GPUs of the ranks on its own host (NVML cannot read
/// another host's), with a note on the others.
std::unique_ptr<telemetry::TelemetrySession> rank0_telemetry(const RunPlan& plan,
                                                  const std::vector<RankGpu>& ranks) {
  std::vector<DeviceEntry> local;
  std::set<std::string> seen;
  int elsewhere = 0;
  for (const auto& r : ranks) {
    if (r.host != ranks.front().host) {
      ++elsewhere;
      continue;
    }
    if (r.ordinal < 0 || !seen.insert(r.uuid).second) continue;
    local.push_back(plan.site.devices.gpus.at(static_cast<size_t>(r.ordinal)));
  }
  std::vector<std::string> notes;
  if (elsewhere > 0) {
    notes.push_back("  GPU telemetry covers the GPUs of " + ranks.front().host + " (rank 0's host); the " +
                    std::to_string(elsewhere) + " GPUs of other hosts are not sampled");
  }
  return telemetry::make_telemetry_session(plan.gpu(), plan.telemetry_interval_ms,
                                           telemetry_ids(local), std::move(notes));
}

/// "rank 1 of 2 on host h"
std::string location(const mpi::Communicator& comm) { return mpi::rank_location(comm.rank(), comm.world_size()); }

/// Ends the job after an error on this rank: the others may be waiting for it
/// in a collective.
[[noreturn]] void abort_job(mpi::Communicator& comm, const std::exception& e, std::ostream& out,
                            std::ostream& err) {
  const int status = print_error(e, out, err, location(comm));
  comm.abort(status);
  std::_Exit(status);  // not reached: abort() does not return (a virtual call GCC cannot see through)
}

/// Checks over every rank's GPU, then NCCL over the host communicator. Returns
/// null after a CollectiveError (printed by rank 0; `status` holds the exit status).
std::unique_ptr<mpi::Communicator> start_nccl(std::unique_ptr<mpi::Communicator> host_comm,
                                              const RunPlan& plan,
                                              std::vector<RankGpu>& ranks, std::ostream& out,
                                              std::ostream& err, int& status) {
  try {
    const int visible = static_cast<int>(plan.site.devices.gpus.size());
    RankGpu mine;
    mine.host = plan.site.environment.host_name;
    mine.ordinal = mpi::gpu_for_local_rank(host_comm->local_rank(), host_comm->local_size(), visible);
    if (mine.ordinal >= 0) mine.uuid = plan.site.devices.gpus[static_cast<size_t>(mine.ordinal)].uuid;
    ranks = gather_rank_gpus(*host_comm, mine);
    check_rank_gpus(ranks, visible, *host_comm);
  } catch (const CollectiveError& e) {
    if (host_comm->rank() == 0) print_error(e, out, err);
    // Every rank is here: ending normally (MPI_Finalize) spares the job an abort.
    host_comm->barrier();
    status = e.exit_code();
    return nullptr;
  } catch (const std::exception& e) {
    abort_job(*host_comm, e, out, err);
  }
  return mpi::make_nccl_communicator(std::move(host_comm));
}

}  // namespace

int run_rank(const RunPlan& plan, const std::atomic<bool>* stop,
             std::ostream& out, std::ostream& err) {
  const bool gpu = plan.gpu();
  // Before NCCL: making the CUDA backend probes the GPUs (and selects device 0),
  // while NCCL's start makes this rank's own GPU current for the buckets' streams.
  const std::unique_ptr<kernels::Backend> backend = make_backend(plan.site.devices);
  std::unique_ptr<mpi::Communicator> comm;
  std::vector<RankGpu> ranks;
  if (gpu) {
    int status = kExitOk;
    comm = start_nccl(mpi::make_mpi_communicator(plan.site.launch), plan, ranks, out, err, status);
    if (!comm) return status;
  } else {
    comm = mpi::make_communicator(plan.site.launch, mpi::CommunicatorKind::Mpi);
  }
  try {
    const DeviceEntry device =
        gpu ? plan.site.devices.gpus.at(static_cast<size_t>(ranks.at(static_cast<size_t>(comm->rank())).ordinal))
            : cpu_device_entry(plan.site.environment);
    std::unique_ptr<telemetry::TelemetrySession> telemetry;
    if (comm->rank() == 0) {
      telemetry = gpu ? rank0_telemetry(plan, ranks)
                      : telemetry::make_telemetry_session(false, plan.telemetry_interval_ms, {});
    }
    WorkerOutput output;
    output.out = &out;
    output.telemetry = telemetry.get();
    const WorkerResult result = run_worker(plan, *backend, *comm, device, stop, output);
    return exit_status(result, out, err);
  } catch (const std::exception& e) {
    abort_job(*comm, e, out, err);
  }
}

}  // namespace cnnbench::bench
