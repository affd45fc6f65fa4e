#include "kernels/cuda/plan_cache_file.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <functional>
#include <stdexcept>
#include <thread>

#include "kernels/error.h"

namespace cnnbench::kernels::cuda {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "cnnbench-plan-cache";
constexpr int kVersion = 1;

json tensor_json(const TensorKey& t) {
  return {{"dims", t.dims},
          {"strides", t.strides},
          {"data_type", t.data_type},
          {"alignment", t.alignment}};
}

TensorKey tensor_from(const json& j) {
  TensorKey t;
  t.dims = j.at("dims").get<std::array<int64_t, 4>>();
  t.strides = j.at("strides").get<std::array<int64_t, 4>>();
  t.data_type = j.at("data_type").get<int32_t>();
  t.alignment = j.at("alignment").get<int64_t>();
  return t;
}

json key_json(const PlanKey& k) {
  json tensors = json::array();
  for (const TensorKey& t : k.tensors) tensors.push_back(tensor_json(t));
  return {{"op", static_cast<int32_t>(k.op)},
          {"tensors", tensors},
          {"compute_type", k.compute_type},
          {"pre_padding", k.pre_padding},
          {"post_padding", k.post_padding},
          {"stride", k.stride},
          {"dilation", k.dilation},
          {"alpha", k.alpha},
          {"beta", k.beta},
          {"engine_filter", k.engine_filter}};
}

PlanKey key_from(const json& j, int64_t cudnn_version, int device) {
  PlanKey k;
  const int32_t op = j.at("op").get<int32_t>();
  if (op < 0 || op > static_cast<int32_t>(PlanOp::ConvWgrad)) {
    throw std::out_of_range("op " + std::to_string(op) + " is not a plan operation");
  }
  k.op = static_cast<PlanOp>(op);
  const json& tensors = j.at("tensors");
  if (!tensors.is_array() || tensors.size() != k.tensors.size()) {
    throw std::out_of_range("a key needs 3 tensors");
  }
  for (size_t i = 0; i < k.tensors.size(); ++i) k.tensors[i] = tensor_from(tensors[i]);
  k.compute_type = j.at("compute_type").get<int32_t>();
  k.pre_padding = j.at("pre_padding").get<std::array<int64_t, 2>>();
  k.post_padding = j.at("post_padding").get<std::array<int64_t, 2>>();
  k.stride = j.at("stride").get<std::array<int64_t, 2>>();
  k.dilation = j.at("dilation").get<std::array<int64_t, 2>>();
  k.alpha = j.at("alpha").get<float>();
  k.beta = j.at("beta").get<float>();
  k.engine_filter = j.at("engine_filter").get<uint32_t>();
  k.cudnn_version = cudnn_version;
  k.device = device;
  return k;
}

json choice_json(const EngineChoice& c) {
  json knobs = json::array();
  for (const KnobChoice& k : c.knobs) knobs.push_back({static_cast<int64_t>(k.type), k.value});
  return {{"global_index", c.global_index}, {"knobs", knobs}};
}

EngineChoice choice_from(const json& j) {
  EngineChoice c;
  c.global_index = j.at("global_index").get<int64_t>();
  if (c.global_index < 0) throw std::out_of_range("negative engine index");
  for (const json& k : j.at("knobs")) {
    const auto pair = k.get<std::array<int64_t, 2>>();
    c.knobs.push_back(KnobChoice{static_cast<cudnnBackendKnobType_t>(pair[0]), pair[1]});
  }
  return c;
}

}  // namespace

PlanCacheLoad read_plan_cache(const std::string& path, const PlanCacheIdentity& identity,
                              int device) {
  PlanCacheLoad out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;  // the first run writes it
  out.existed = true;
  std::ifstream in(path);
  if (!in) {
    out.warning = "cannot be read (" + std::string(std::strerror(errno)) + "); ignored";
    return out;
  }
  try {
    const json doc = json::parse(in);
    if (!doc.is_object() || doc.value("format", "") != kFormat) {
      out.warning = "is not a cnnbench plan cache (no \"format\": \"" + std::string(kFormat) +
                    "\"); ignored";
      return out;
    }
    if (doc.at("version").get<int>() != kVersion) {
      out.warning = "has format version " + doc.at("version").dump() + ", this build reads " +
                    std::to_string(kVersion) + "; ignored";
      return out;
    }
    const std::string gpu = doc.at("gpu").get<std::string>();
    const int64_t cudnn = doc.at("cudnn_version").get<int64_t>();
    if (gpu != identity.gpu_name || cudnn != identity.cudnn_version) {
      out.warning = "was written for GPU '" + gpu + "' and cuDNN " + std::to_string(cudnn) +
                    ", this run has '" + identity.gpu_name + "' and cuDNN " +
                    std::to_string(identity.cudnn_version) + "; ignored (it will be rewritten)";
      return out;
    }
    for (const json& e : doc.at("entries")) {
      out.entries.emplace_back(key_from(e.at("key"), cudnn, device), choice_from(e.at("engine")));
    }
  } catch (const std::exception& e) {
    out.entries.clear();
    out.warning = std::string("is corrupt (") + e.what() + "); ignored (it will be rewritten)";
  }
  return out;
}

void write_plan_cache(const std::string& path, const PlanCacheIdentity& identity,
                      const std::vector<std::pair<PlanKey, EngineChoice>>& entries) {
  json list = json::array();
  for (const auto& [key, choice] : entries) {
    list.push_back({{"key", key_json(key)}, {"engine", choice_json(choice)}});
  }
  const json doc = {{"format", kFormat},
                    {"version", kVersion},
                    {"gpu", identity.gpu_name},
                    {"cudnn_version", identity.cudnn_version},
                    {"entries", list}};
  // A temporary file beside the target, renamed over it: readers (another rank,
  // the next run) see the old file or the new one, never half of one.
  // Process and thread in the name: the GPUs of one process (one thread each)
  // write the same file too.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      throw BackendError("cannot write the plan cache file " + tmp + ": " + std::strerror(errno));
    }
    out << doc.dump(1) << '\n';
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      throw BackendError("cannot write the plan cache file " + tmp + ": " + why);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw BackendError("cannot replace the plan cache file " + path + ": " + why);
  }
}

}  // namespace cnnbench::kernels::cuda
