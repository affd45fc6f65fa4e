// From the command line to a plan: resolve(Config, where) -> RunPlan, with every
// default that waits for the device filled in, and the model built with its
// shapes inferred once for the whole run.
#pragma once

#include "bench/cli/config.h"
#include "bench/run/plan.h"

namespace cnnbench::bench {

/// Resolves `config` (from parse_flags) for the run site discovery found:
///   - the flag table's per-device defaults (--batch_size, --num_batches,
///     --num_warmup_batches, --precision) for the site's device kind;
///   - --image_size: the model's own; --log_format: both inside ECS, else text;
///   - --num_gpus: the GPUs this process trains on (1 per rank under a launcher);
/// builds the model and infers its shapes for `batch` images, and records the
/// resolved flags and which took their defaults for the result JSON.
/// `program_start_s` is the SteadyClock time the program started.
///
/// Throws UsageError when the model's shapes do not work out at the resolved
/// sizes (parse_flags checked the image size already, so only a programming
/// error gets here).
RunPlan resolve(const Config& config, RunSite site, double program_start_s);

}  // namespace cnnbench::bench
