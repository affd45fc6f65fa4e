#include "bench/run/replica_check.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace cnnbench::bench {
namespace {

using nlohmann::json;

struct Gathered {
  ReplicaIdentity who;
  uint64_t total = 0;
  std::vector<uint64_t> tensors;
};

std::string encode(const ReplicaIdentity& me, const kernels::ParamHashes& h) {
  return json{{"rank", me.rank},     {"host", me.host},   {"ordinal", me.ordinal},
              {"uuid", me.uuid},     {"total", h.total},  {"tensors", h.per_tensor}}
      .dump();
}

Gathered decode(const std::string& text) {
  const json j = json::parse(text);
  Gathered g;
  g.who.rank = j.at("rank").get<int>();
  g.who.host = j.at("host").get<std::string>();
  g.who.ordinal = j.at("ordinal").get<int>();
  g.who.uuid = j.at("uuid").get<std::string>();
  g.total = j.at("total").get<uint64_t>();
  g.tensors = j.at("tensors").get<std::vector<uint64_t>>();
  return g;
}

std::string tensor_bytes(kernels::Executable& exe, const models::ParamSlot& slot) {
  std::string bytes(static_cast<size_t>(slot.count) * sizeof(float), '\0');
  std::vector<float> values(static_cast<size_t>(slot.count));
  exe.read_parameters(slot.offset, slot.count, values.data());
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> floats_of(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

}  // namespace

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string ReplicaIdentity::to_string() const {
  std::string s = "rank " + std::to_string(rank) + " (" + (host.empty() ? "?" : host);
  if (ordinal >= 0) s += ", CUDA " + std::to_string(ordinal);
  if (!uuid.empty()) s += ", " + uuid;
  return s + ")";
}

std::vector<std::string> ReplicaCheck::lines(const std::string& device_word) const {
  std::vector<std::string> out;
  const std::string devices = std::to_string(replicas) + " " + device_word + (replicas == 1 ? "" : "s");
  if (identical()) {
    out.push_back("replicas: identical across " + devices + " (parameter hash " + hex64(hash) +
                  ", after step " + std::to_string(after_step) + ")");
    return out;
  }
  const std::string against =
      tie ? "rank " + std::to_string(reference_rank) + "'s (no majority: each hash is held by as "
            "many replicas as the others, so which side is wrong is not known)"
          : "the majority's";
  out.push_back("replicas: MISMATCH after step " + std::to_string(after_step) + ": " +
                std::to_string(mismatches.size()) + " of " + devices +
                " hold parameters that differ from " + against + " (parameter hash " +
                hex64(hash) + ")");
  for (const ReplicaMismatch& m : mismatches) {
    char diff[64];
    std::snprintf(diff, sizeof diff, "%.6g", m.max_abs_diff);
    out.push_back("replicas: " + m.replica.to_string() + " has parameter hash " + hex64(m.hash) +
                  "; first differing tensor " + m.first_tensor + ": " +
                  std::to_string(m.differing_elements) + " of " +
                  std::to_string(m.tensor_elements) + " elements differ, max |difference| " + diff +
                  " against " + (tie ? "rank " + std::to_string(reference_rank) + "'s" : "the majority's") +
                  " copy");
  }
  out.push_back("replicas: a replica that drifts from the others points at silent data "
                "corruption in that " + device_word + "'s arithmetic or memory, or at the "
                "interconnect; rerun to see whether the same " + device_word +
                " fails again, and take it out of service if it does");
  return out;
}

ReplicaCheck check_replicas(mpi::Communicator& comm, kernels::Executable& executable,
                            const models::Graph& shaped_graph, const ReplicaIdentity& me,
                            int after_step) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<models::ParamSlot> layout = shaped_graph.param_layout();
  const kernels::ParamHashes mine = executable.parameter_hashes(layout);
  std::vector<Gathered> all;
  for (const std::string& text : comm.all_gather(encode(me, mine))) all.push_back(decode(text));

  ReplicaCheck check;
  check.replicas = static_cast<int>(all.size());
  check.after_step = after_step;
  // The majority's hash; a tie goes to the hash the lowest rank holds.
  std::map<uint64_t, int> votes;
  for (const Gathered& g : all) ++votes[g.total];
  size_t reference = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    if (votes[all[r].total] > votes[all[reference].total]) reference = r;
  }
  check.hash = all[reference].total;
  check.reference_rank = all[reference].who.rank;
  for (const auto& [h, n] : votes) check.tie = check.tie || (h != check.hash && n == votes[check.hash]);

  // Each mismatching replica's first differing tensor, in layout order.
  std::vector<std::pair<size_t, size_t>> firsts;  // (replica, tensor)
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].total == check.hash) continue;
    size_t t = 0;
    while (t < layout.size() && t < all[r].tensors.size() &&
           all[r].tensors[t] == all[reference].tensors[t]) {
      ++t;
    }
    firsts.emplace_back(r, std::min(t, layout.size() - 1));
  }
  // One all-gather of each such tensor's values (the same sequence on every
  // worker: it follows from the gathered hashes alone).
  std::vector<size_t> tensors;
  for (const auto& f : firsts) tensors.push_back(f.second);
  std::sort(tensors.begin(), tensors.end());
  tensors.erase(std::unique(tensors.begin(), tensors.end()), tensors.end());
  std::map<size_t, std::vector<std::string>> values;
  for (const size_t t : tensors) values[t] = comm.all_gather(tensor_bytes(executable, layout[t]));

  for (const auto& [r, t] : firsts) {
    ReplicaMismatch m;
    m.replica = all[r].who;
    m.hash = all[r].total;
    m.first_tensor = models::param_name(shaped_graph, layout[t]);
    m.tensor_elements = layout[t].count;
    const std::vector<float> got = floats_of(values[t][r]);
    const std::vector<float> want = floats_of(values[t][reference]);
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      if (std::bit_cast<uint32_t>(got[i]) == std::bit_cast<uint32_t>(want[i])) continue;
      ++m.differing_elements;
      const double d = std::abs(double(got[i]) - double(want[i]));
      m.max_abs_diff = std::isnan(d) ? INFINITY : std::max(m.max_abs_diff, d);
    }
    check.mismatches.push_back(std::move(m));
  }
  check.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return check;
}

std::optional<FlipBit> parse_fault_flip_bit(const std::string& value) {
  if (value.empty()) return std::nullopt;
  const auto bad = [&] {
    return std::invalid_argument(std::string(kFaultFlipBitVariable) + "=" + value +
                                 " is not valid: expected RANK:ELEMENT:BIT, e.g. 1:1000:30 "
                                 "(BIT 0 to 31)");
  };
  FlipBit f;
  const size_t a = value.find(':');
  const size_t b = a == std::string::npos ? a : value.find(':', a + 1);
  if (b == std::string::npos) throw bad();
  const auto num = [&](size_t from, size_t to, auto& out) {
    const char* first = value.data() + from;
    const char* last = value.data() + to;
    auto [ptr, ec] = std::from_chars(first, last, out);
    if (ec != std::errc() || ptr != last || first == last) throw bad();
  };
  num(0, a, f.rank);
  num(a + 1, b, f.element);
  num(b + 1, value.size(), f.bit);
  if (f.rank < 0 || f.element < 0 || f.bit < 0 || f.bit > 31) throw bad();
  return f;
}

void apply_fault_flip_bit(const FlipBit& flip, int rank, kernels::Executable& executable) {
  if (flip.rank != rank) return;
  float v = 0;
  executable.read_parameters(flip.element, 1, &v);
  v = std::bit_cast<float>(std::bit_cast<uint32_t>(v) ^ (uint32_t{1} << flip.bit));
  executable.write_parameters(flip.element, &v, 1);
}

}  // namespace cnnbench::bench
