// The all-reduce harness: registration, the timed loop, the bandwidths and the
// correctness check, shared by the NCCL and MPI transports.
#include "bench/micro/allreduce.h"

#include <memory>
#include <stdexcept>
#include <string>

#include "bench/micro/flops.h"
#include "bench/micro/registry.h"
#include "bench/micro/world.h"
#include "mpi/launch.h"

namespace cnnbench::bench::micro {

namespace {

enum class TransportKind { Nccl, Mpi };

/// The transports, each started by the first benchmark that needs it (so a run
/// filtered to other benchmarks never starts NCCL), and the reason when one
/// could not start, reported by every later benchmark of that transport.
class AllReduceResources final : public Resources {
 public:
  explicit AllReduceResources(World& world) : world_(world) {}

  AllReduceTransport& transport(TransportKind kind) {
    Slot& slot = kind == TransportKind::Nccl ? nccl_ : mpi_;
    if (!slot.tried) {
      slot.tried = true;
      try {
        slot.transport =
            kind == TransportKind::Nccl ? make_nccl_transport(world_) : make_mpi_transport(world_);
      } catch (const std::exception& e) {
        slot.error = e.what();
      }
    }
    if (!slot.transport) throw std::runtime_error(slot.error);
    return *slot.transport;
  }
  [[nodiscard]] World& world() { return world_; }

 private:
  struct Slot {
    bool tried = false;
    std::unique_ptr<AllReduceTransport> transport;
    std::string error;
  };
  World& world_;
  Slot nccl_;
  Slot mpi_;
};

void allreduce_benchmark(benchmark::State& state, AllReduceResources* resources,
                         TransportKind kind, int64_t bytes, bool in_place, const Options& options) {
  run_guarded(state, [&](benchmark::State& st) {
    AllReduceTransport& t = resources->transport(kind);
    World& world = resources->world();
    t.prepare(bytes);
    t.fill(in_place);
    for (int i = 0; i < options.allreduce_warmup; ++i) t.run(in_place);
    world.host().barrier();

    double total = 0;
    for (auto _ : st) {
      // Every rank runs the same fixed number of iterations (Iterations()), so
      // gathering each time over ranks is itself collective-safe.
      const double seconds = world.mean_over_ranks(t.run_timed(in_place));
      st.SetIterationTime(seconds);
      total += seconds;
    }

    // Correctness outside the timed loop: fresh inputs, one collective, compare.
    t.fill(in_place);
    t.run(in_place);
    const int64_t wrong = world.sum_over_ranks(t.count_wrong());

    const double mean = st.iterations() > 0 ? total / static_cast<double>(st.iterations()) : 0;
    const double algbw = allreduce_algbw(bytes, mean);
    st.counters["algbw_GB/s"] = algbw;
    st.counters["busbw_GB/s"] = allreduce_busbw(algbw, t.ranks());
    st.counters["#wrong"] = static_cast<double>(wrong);
    st.counters["ranks"] = t.ranks();
    st.counters["bytes"] = static_cast<double>(bytes);
    std::string label = t.describe();
    if (t.ranks() == 1) {
      label += " | one rank: busbw is 0 by definition; the collective reduces nothing";
    }
    st.SetLabel(label);
    if (wrong != 0) {
      st.SkipWithError((std::to_string(wrong) + " wrong elements (#wrong) in the " + t.name() +
                        " all-reduce of " + format_bytes(bytes) +
                        (in_place ? " in place" : " out of place") + " over " +
                        std::to_string(t.ranks()) + " ranks")
                           .c_str());
    }
  });
}

}  // namespace

Registration register_allreduce_benchmarks(const Options& options, World& world) {
  Registration reg;
  auto resources = std::make_unique<AllReduceResources>(world);
  const std::vector<int64_t> sizes =
      allreduce_sizes(options.allreduce_min_bytes, options.allreduce_max_bytes);

  std::vector<TransportKind> kinds;
  if (mpi::nccl_built()) {
    kinds.push_back(TransportKind::Nccl);
  } else {
    reg.notes.emplace_back("NCCL all-reduce benchmarks: not built (this binary has no CUDA)");
  }
  if (!mpi::mpi_built()) {
    reg.notes.emplace_back(
        "MPI all-reduce benchmarks: not built (this binary has no MPI; configure with "
        "-DCNNBENCH_MPI=ON where Open MPI is installed)");
  } else if (!world.mpi_started()) {
    reg.notes.emplace_back(
        "MPI all-reduce benchmarks: not registered (this process was not started by mpirun; run "
        "e.g. mpirun -np 2 cnnbench_micro --benchmark_filter=allreduce/mpi/)");
  } else {
    kinds.push_back(TransportKind::Mpi);
  }

  AllReduceResources* res = resources.get();
  for (const TransportKind kind : kinds) {
    const std::string transport = kind == TransportKind::Nccl ? "nccl" : "mpi";
    for (const bool in_place : {false, true}) {
      for (const int64_t bytes : sizes) {
        const std::string name = "allreduce/" + transport + "/" +
                                 (in_place ? "in_place/" : "out_of_place/") + format_bytes(bytes);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [res, kind, bytes, in_place,
                                      &options](benchmark::State& state) {
                                       allreduce_benchmark(state, res, kind, bytes, in_place,
                                                           options);
                                     })
            ->Iterations(options.allreduce_iters)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
        ++reg.registered;
      }
    }
  }
  reg.resources = std::move(resources);
  return reg;
}

}  // namespace cnnbench::bench::micro
