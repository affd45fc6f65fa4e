#include "tests/bench/telemetry/gpu_busy.h"

namespace cnnbench::bench::telemetry::fake {

std::string keep_gpus_busy(int /*ms*/) { return "built without CUDA (CNNBENCH_CUDA=OFF)"; }

}  // namespace cnnbench::bench::telemetry::fake
