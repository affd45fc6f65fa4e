#include <cstdlib>

#include "mpi/communicator.h"

namespace cnnbench::mpi {
namespace {

/// The world of one: every collective is the identity.
class SingleWorker final : public Communicator {
 public:
  [[nodiscard]] std::string name() const override { return "single"; }
  [[nodiscard]] int rank() const override { return 0; }
  [[nodiscard]] int world_size() const override { return 1; }
  [[nodiscard]] int local_rank() const override { return 0; }
  [[nodiscard]] int local_size() const override { return 1; }
  void all_reduce_sum(void* /*data*/, int64_t /*count*/, kernels::DType /*dtype*/,
                      void* /*stream*/) override {}
  std::vector<std::string> all_gather(const std::string& value) override { return {value}; }
  void barrier() override {}
  [[noreturn]] void abort(int exit_code) override { std::_Exit(exit_code); }
};

}  // namespace

std::unique_ptr<Communicator> make_single_worker() { return std::make_unique<SingleWorker>(); }

}  // namespace cnnbench::mpi
