#include "bench/cli/model_list.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "models/zoo.h"

namespace cnnbench::bench {
namespace {

struct ModelRow {
  const models::ModelInfo* info;
  int64_t params;
  double gflops;  // forward, per image, at the default size
};

std::vector<ModelRow> model_rows() {
  std::vector<ModelRow> rows;
  for (const auto& info : models::zoo()) {
    models::Graph g = models::build_model(info.name);
    g.infer_shapes(1, info.default_image_size, info.default_image_size);
    rows.push_back({&info, g.param_count(), g.flops_per_image() / 1e9});
  }
  return rows;
}

}  // namespace

void print_model_list(ListFormat format, std::ostream& out) {
  const auto rows = model_rows();
  if (format == ListFormat::Json) {
    nlohmann::json models = nlohmann::json::array();
    for (const auto& r : rows) {
      models.push_back({{"name", r.info->name},
                        {"parameters", r.params},
                        {"gflops_per_image", r.gflops},
                        {"default_image_size", r.info->default_image_size},
                        {"num_classes", 1000},
                        {"source", r.info->source}});
    }
    out << nlohmann::json{{"models", models}}.dump(2) << '\n';
    return;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-14s %12s %14s %12s  %s\n", "model", "parameters",
                "GFLOPs/image", "image size", "definition");
  out << buf;
  for (const auto& r : rows) {
    std::snprintf(buf, sizeof buf, "%-14s %12lld %14.2f %9d px  %s\n", r.info->name.c_str(),
                  static_cast<long long>(r.params), r.gflops, r.info->default_image_size,
                  r.info->source.c_str());
    out << buf;
  }
  out << "(parameters and GFLOPs at 1000 classes and the default image size; forward "
         "GFLOPs, multiply-add = 2 FLOPs)\n";
}

}  // namespace cnnbench::bench
