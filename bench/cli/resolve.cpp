#include "bench/cli/resolve.h"

#include <stdexcept>
#include <utility>

#include "bench/cli/flag_table.h"
#include "bench/status.h"
#include "models/zoo.h"

namespace cnnbench::bench {

RunPlan resolve(const Config& config, RunSite site, double program_start_s) {
  const bool gpu = site.devices.kind == "gpu";
  Config r = config;
  apply_defaults(r, gpu, /*per_device=*/true);
  if (!r.image_size) r.image_size = models::model_info(r.model).default_image_size;
  if (!r.log_format) r.log_format = site.environment.in_ecs ? LogFormat::Both : LogFormat::Text;
  if (gpu && r.scaling_sweep.empty()) {
    r.num_gpus = site.launch.needs_transport() ? 1 : static_cast<int>(site.devices.gpus.size());
  }

  RunPlan p;
  p.model = r.model;
  p.batch = *r.batch_size;
  p.num_batches = *r.num_batches;
  p.duration_s = r.duration_s.value_or(0);
  p.num_warmup_batches = *r.num_warmup_batches;
  p.display_every = r.display_every;
  p.forward_only = r.forward_only;
  p.image_size = *r.image_size;
  p.num_classes = r.num_classes;
  p.seed = r.seed;
  p.optimizer = r.optimizer;
  p.precision = *r.precision;
  p.data_format = r.data_format;
  p.num_threads = r.num_threads;
  p.cuda_graph = r.cuda_graph;
  p.cudnn_autotune = r.cudnn_autotune;
  p.cudnn_runtime_compiled_engines = r.cudnn_runtime_compiled_engines;
  p.plan_cache = r.plan_cache;
  p.check_every = r.check_every;
  p.verify = r.verify;
  p.allreduce_bucket_mb = r.allreduce_bucket_mb;
  p.scaling_sweep = r.scaling_sweep;
  p.baseline_images_per_sec = r.baseline_images_per_sec.value_or(0);
  p.log_format = *r.log_format;
  p.metrics_namespace = r.metrics_namespace;
  p.result_json = r.result_json;
  p.telemetry_interval_ms = r.telemetry_interval_ms;
  p.verbose = r.verbose;
  p.site = std::move(site);
  p.program_start_s = program_start_s;
  p.graph = models::build_model(p.model, p.num_classes);
  try {
    p.graph.infer_shapes(p.batch, p.image_size, p.image_size);
  } catch (const std::invalid_argument& e) {
    throw UsageError(spelled("image_size", std::to_string(p.image_size)) + ": " + e.what());
  }
  // The echo shows what the run used: with --duration, no step count.
  if (r.duration_s) r.num_batches.reset();
  p.config_echo = config_echo(r);
  p.config_defaults = defaulted_keys(config);
  return p;
}

}  // namespace cnnbench::bench
