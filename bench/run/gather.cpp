#include "bench/run/gather.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <utility>

#include "bench/report/result_json.h"

namespace cnnbench::bench {
namespace {

nlohmann::json percentiles_to_json(const Percentiles& p) {
  return {p.mean, p.min, p.p50, p.p90, p.p99, p.max};
}

Percentiles percentiles_from_json(const nlohmann::json& j) {
  Percentiles p;
  p.mean = j.at(0).get<double>();
  p.min = j.at(1).get<double>();
  p.p50 = j.at(2).get<double>();
  p.p90 = j.at(3).get<double>();
  p.p99 = j.at(4).get<double>();
  p.max = j.at(5).get<double>();
  return p;
}

DeviceEntry device_from_json(const nlohmann::json& j) {
  DeviceEntry d;
  d.ordinal = j.at("ordinal").get<int>();
  d.name = j.at("name").get<std::string>();
  d.uuid = j.at("uuid").get<std::string>();
  d.pci_bus_id = j.at("pci_bus_id").get<std::string>();
  d.host_id = j.at("host_id").get<std::string>();
  d.memory_bytes = j.at("memory_bytes").get<int64_t>();
  return d;
}

}  // namespace

std::vector<DeviceEntry> gather_devices(mpi::Communicator& comm, const DeviceEntry& mine) {
  std::vector<DeviceEntry> all;
  for (const auto& text : comm.all_gather(device_json(mine).dump())) {
    all.push_back(device_from_json(nlohmann::json::parse(text)));
  }
  return all;
}

std::vector<RankFigures> gather_rank_figures(mpi::Communicator& comm, const RankFigures& mine) {
  const nlohmann::json j = {{"rank", mine.rank},       {"host", mine.host},
                            {"devices", mine.devices}, {"ordinal", mine.ordinal},
                            {"steps", mine.steps},     {"images_per_sec", mine.images_per_sec},
                            {"step_time_ms", percentiles_to_json(mine.step_time_ms)}};
  std::vector<RankFigures> all;
  const std::vector<std::string> texts = comm.all_gather(j.dump());
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      const nlohmann::json r = nlohmann::json::parse(texts[i]);
      RankFigures f;
      f.rank = r.at("rank").get<int>();
      f.host = r.at("host").get<std::string>();
      f.devices = r.at("devices").get<std::vector<std::string>>();
      f.ordinal = r.at("ordinal").get<int>();
      f.steps = r.at("steps").get<int>();
      f.images_per_sec = r.at("images_per_sec").get<double>();
      f.step_time_ms = percentiles_from_json(r.at("step_time_ms"));
      all.push_back(std::move(f));
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error("the figures of rank " + std::to_string(i) + " cannot be read: " + e.what());
    }
  }
  return all;
}

}  // namespace cnnbench::bench
