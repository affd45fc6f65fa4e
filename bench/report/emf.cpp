#include "bench/report/emf.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace cnnbench::bench {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::array<std::pair<EmfUnit, const char*>, 27> kUnits = {{
    {EmfUnit::Seconds, "Seconds"},
    {EmfUnit::Microseconds, "Microseconds"},
    {EmfUnit::Milliseconds, "Milliseconds"},
    {EmfUnit::Bytes, "Bytes"},
    {EmfUnit::Kilobytes, "Kilobytes"},
    {EmfUnit::Megabytes, "Megabytes"},
    {EmfUnit::Gigabytes, "Gigabytes"},
    {EmfUnit::Terabytes, "Terabytes"},
    {EmfUnit::Bits, "Bits"},
    {EmfUnit::Kilobits, "Kilobits"},
    {EmfUnit::Megabits, "Megabits"},
    {EmfUnit::Gigabits, "Gigabits"},
    {EmfUnit::Terabits, "Terabits"},
    {EmfUnit::Percent, "Percent"},
    {EmfUnit::Count, "Count"},
    {EmfUnit::BytesPerSecond, "Bytes/Second"},
    {EmfUnit::KilobytesPerSecond, "Kilobytes/Second"},
    {EmfUnit::MegabytesPerSecond, "Megabytes/Second"},
    {EmfUnit::GigabytesPerSecond, "Gigabytes/Second"},
    {EmfUnit::TerabytesPerSecond, "Terabytes/Second"},
    {EmfUnit::BitsPerSecond, "Bits/Second"},
    {EmfUnit::KilobitsPerSecond, "Kilobits/Second"},
    {EmfUnit::MegabitsPerSecond, "Megabits/Second"},
    {EmfUnit::GigabitsPerSecond, "Gigabits/Second"},
    {EmfUnit::TerabitsPerSecond, "Terabits/Second"},
    {EmfUnit::CountPerSecond, "Count/Second"},
    {EmfUnit::None, "None"},
}};

bool is_known_unit(std::string_view name) {
  return std::any_of(kUnits.begin(), kUnits.end(), [name](const auto& u) { return name == u.second; });
}

bool printable_ascii(char ch) { return ch >= 0x20 && ch < 0x7f; }

// CloudWatch's rule for dimension names and values: ASCII, no control characters,
// at least one non-whitespace character.
std::optional<std::string> check_ascii_name(std::string_view s, size_t max_length, std::string_view what) {
  if (s.empty() || s.size() > max_length) {
    return std::string(what) + " must have 1 to " + std::to_string(max_length) + " characters";
  }
  if (!std::all_of(s.begin(), s.end(), printable_ascii)) {
    return std::string(what) + " must be printable ASCII";
  }
  if (s.find_first_not_of(' ') == std::string_view::npos) {
    return std::string(what) + " must contain a non-space character";
  }
  return std::nullopt;
}

std::optional<std::string> check_dimension_name(std::string_view s) {
  if (auto why = check_ascii_name(s, kEmfMaxDimensionNameLength, "a dimension name")) return why;
  if (s.front() == ':') return std::string("a dimension name must not start with ':'");
  return std::nullopt;
}

std::string sanitize_dimension_value(std::string_view value) {
  std::string out(value.substr(0, kEmfMaxDimensionValueLength));
  for (char& ch : out) {
    if (!printable_ascii(ch)) ch = '?';
  }
  if (out.find_first_not_of(' ') == std::string::npos) out = "unknown";
  return out;
}

ordered_json finite_or_null(ordered_json value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) return nullptr;
  return value;
}

bool valid_metric_value(const nlohmann::json& v) {
  if (!v.is_number()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::fabs(d) <= kEmfMaxMetricMagnitude;
}

}  // namespace

const char* to_string(EmfUnit unit) {
  for (const auto& [u, name] : kUnits) {
    if (u == unit) return name;
  }
  throw std::invalid_argument("unknown EmfUnit");
}

std::optional<std::string> check_emf_namespace(std::string_view ns) {
  const auto allowed = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           std::string_view(".-_/#: ").find(ch) != std::string_view::npos;
  };
  if (ns.empty() || ns.size() > kEmfMaxNamespaceLength || !std::all_of(ns.begin(), ns.end(), allowed) ||
      ns.find_first_not_of(' ') == std::string_view::npos) {
    return "a CloudWatch namespace has 1 to 255 characters of A-Z a-z 0-9 . - _ / # : and space";
  }
  if (ns.starts_with("AWS/")) return "namespaces starting with AWS/ are reserved for AWS services";
  return std::nullopt;
}

// ---------------------------------------------------------------- EmfEvent

EmfEvent::EmfEvent(const std::string& metrics_namespace, int64_t timestamp_ms)
    : namespace_(metrics_namespace), timestamp_ms_(timestamp_ms) {
  if (auto why = check_emf_namespace(metrics_namespace)) {
    throw std::invalid_argument("EMF namespace '" + metrics_namespace + "': " + *why);
  }
}

void EmfEvent::claim_key(const std::string& key) {
  if (key == "_aws" || members_.contains(key)) {
    throw std::invalid_argument("EMF member '" + key + "' is set twice");
  }
}

EmfEvent& EmfEvent::dimension(const std::string& key, std::string_view value) {
  if (auto why = check_dimension_name(key)) throw std::invalid_argument("EMF dimension '" + key + "': " + *why);
  claim_key(key);
  members_[key] = sanitize_dimension_value(value);
  dimension_keys_.push_back(key);
  return *this;
}

EmfEvent& EmfEvent::dimension_set(const std::vector<std::string>& keys) {
  if (keys.size() > kEmfMaxDimensionsPerSet) {
    throw std::invalid_argument("EMF dimension set of " + std::to_string(keys.size()) + " keys (at most " +
                                std::to_string(kEmfMaxDimensionsPerSet) + ")");
  }
  for (const auto& key : keys) {
    if (std::find(dimension_keys_.begin(), dimension_keys_.end(), key) == dimension_keys_.end()) {
      throw std::invalid_argument("EMF dimension set names '" + key + "', which is not a dimension");
    }
  }
  dimension_sets_.push_back(keys);
  return *this;
}

bool EmfEvent::metric(const std::string& name, EmfUnit unit, double value) {
  if (auto why = check_ascii_name(name, kEmfMaxMetricNameLength, "a metric name")) {
    throw std::invalid_argument("EMF metric '" + name + "': " + *why);
  }
  claim_key(name);
  if (metric_definitions_.size() >= kEmfMaxMetrics) {
    throw std::invalid_argument("EMF event would hold more than " + std::to_string(kEmfMaxMetrics) + " metrics");
  }
  if (!std::isfinite(value) || std::fabs(value) > kEmfMaxMetricMagnitude) return false;
  members_[name] = value;
  metric_definitions_.push_back(ordered_json{{"Name", name}, {"Unit", to_string(unit)}});
  return true;
}

EmfEvent& EmfEvent::property(const std::string& key, ordered_json value) {
  if (key.empty()) throw std::invalid_argument("EMF member with an empty name");
  claim_key(key);
  members_[key] = finite_or_null(std::move(value));
  return *this;
}

std::string EmfEvent::to_line() const {
  ordered_json doc = ordered_json::object();
  doc["_aws"] = ordered_json{
      {"Timestamp", timestamp_ms_},
      {"CloudWatchMetrics",
       ordered_json::array({ordered_json{
           {"Namespace", namespace_}, {"Dimensions", dimension_sets_}, {"Metrics", metric_definitions_}}})}};
  for (const auto& [key, value] : members_.items()) doc[key] = value;
  // Dimension values were made ASCII; `replace` keeps a stray byte in a context
  // member from making dump() throw.
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ---------------------------------------------------------------- validator

std::vector<std::string> validate_emf_line(std::string_view line) {
  std::vector<std::string> problems;
  const auto problem = [&problems](std::string text) { problems.push_back(std::move(text)); };

  if (line.find_first_of("\r\n") != std::string_view::npos) problem("the event spans more than one line");
  if (line.size() > kEmfMaxEventBytes) {
    problem("the event has " + std::to_string(line.size()) + " bytes (at most " + std::to_string(kEmfMaxEventBytes) + ")");
  }
  const nlohmann::json doc = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
  if (doc.is_discarded()) {
    problem("not valid JSON");
    return problems;
  }
  if (!doc.is_object()) {
    problem("the root is not a JSON object");
    return problems;
  }
  const auto aws = doc.find("_aws");
  if (aws == doc.end() || !aws->is_object()) {
    problem("no _aws object");
    return problems;
  }
  const auto timestamp = aws->find("Timestamp");
  if (timestamp == aws->end()) {
    problem("_aws.Timestamp is missing");
  } else if (!timestamp->is_number_integer() || (timestamp->is_number_integer() && timestamp->get<int64_t>() < 0)) {
    problem("_aws.Timestamp must be a non-negative integer (milliseconds since the Unix epoch)");
  }
  const auto directives = aws->find("CloudWatchMetrics");
  if (directives == aws->end() || !directives->is_array() || directives->empty()) {
    problem("_aws.CloudWatchMetrics must be a non-empty array");
    return problems;
  }

  size_t total_metrics = 0;
  for (size_t d = 0; d < directives->size(); ++d) {
    const auto& directive = (*directives)[d];
    const std::string where = "CloudWatchMetrics[" + std::to_string(d) + "]";
    if (!directive.is_object()) {
      problem(where + " is not an object");
      continue;
    }
    for (const auto& [key, value] : directive.items()) {
      if (key != "Namespace" && key != "Dimensions" && key != "Metrics") problem(where + " has the unknown member " + key);
    }
    const auto ns = directive.find("Namespace");
    if (ns == directive.end() || !ns->is_string()) {
      problem(where + ".Namespace is missing or not a string");
    } else if (auto why = check_emf_namespace(ns->get<std::string>())) {
      problem(where + ".Namespace: " + *why);
    }

    std::vector<std::string> dimension_keys;
    const auto dims = directive.find("Dimensions");
    if (dims == directive.end() || !dims->is_array()) {
      problem(where + ".Dimensions is missing or not an array");
    } else {
      for (const auto& set : *dims) {
        if (!set.is_array()) {
          problem(where + ".Dimensions holds a set that is not an array");
          continue;
        }
        if (set.size() > kEmfMaxDimensionsPerSet) {
          problem(where + ".Dimensions holds a set of " + std::to_string(set.size()) + " keys (at most " +
                  std::to_string(kEmfMaxDimensionsPerSet) + ")");
        }
        for (const auto& key : set) {
          if (!key.is_string()) {
            problem(where + ".Dimensions holds a key that is not a string");
            continue;
          }
          const auto name = key.get<std::string>();
          dimension_keys.push_back(name);
          if (auto why = check_dimension_name(name)) problem("dimension " + name + ": " + *why);
          const auto target = doc.find(name);
          if (target == doc.end()) {
            problem("dimension " + name + " is not a member of the root object");
          } else if (!target->is_string()) {
            problem("dimension " + name + " must hold a string");
          } else if (auto why = check_ascii_name(target->get<std::string>(), kEmfMaxDimensionValueLength,
                                                 "the value of a dimension")) {
            problem("dimension " + name + ": " + *why);
          }
        }
      }
    }

    const auto metrics = directive.find("Metrics");
    if (metrics == directive.end() || !metrics->is_array()) {
      problem(where + ".Metrics is missing or not an array");
      continue;
    }
    total_metrics += metrics->size();
    std::vector<std::string> names;
    for (const auto& definition : *metrics) {
      if (!definition.is_object()) {
        problem(where + ".Metrics holds a definition that is not an object");
        continue;
      }
      for (const auto& [key, value] : definition.items()) {
        if (key != "Name" && key != "Unit" && key != "StorageResolution") {
          problem(where + ".Metrics holds a definition with the unknown member " + key);
        }
      }
      const auto name_it = definition.find("Name");
      if (name_it == definition.end() || !name_it->is_string()) {
        problem(where + ".Metrics holds a definition without a string Name");
        continue;
      }
      const auto name = name_it->get<std::string>();
      if (auto why = check_ascii_name(name, kEmfMaxMetricNameLength, "a metric name")) problem("metric " + name + ": " + *why);
      if (std::find(names.begin(), names.end(), name) != names.end()) problem("metric " + name + " is defined twice");
      names.push_back(name);
      if (std::find(dimension_keys.begin(), dimension_keys.end(), name) != dimension_keys.end()) {
        problem("metric " + name + " is also a dimension");
      }
      if (const auto unit = definition.find("Unit"); unit != definition.end()) {
        if (!unit->is_string() || !is_known_unit(unit->get<std::string>())) {
          problem("metric " + name + " has the unit " + unit->dump() + ", which CloudWatch does not know");
        }
      }
      if (const auto res = definition.find("StorageResolution"); res != definition.end()) {
        if (!res->is_number_integer() || (res->get<int64_t>() != 1 && res->get<int64_t>() != 60)) {
          problem("metric " + name + " has StorageResolution " + res->dump() + " (1 or 60)");
        }
      }
      const auto target = doc.find(name);
      if (target == doc.end()) {
        problem("metric " + name + " is not a member of the root object");
      } else if (target->is_array()) {
        if (target->empty() || target->size() > kEmfMaxValuesPerMetric ||
            !std::all_of(target->begin(), target->end(), valid_metric_value)) {
          problem("metric " + name + " must hold 1 to " + std::to_string(kEmfMaxValuesPerMetric) +
                  " numbers within ±2^360");
        }
      } else if (!valid_metric_value(*target)) {
        problem("metric " + name + " must hold a number within ±2^360, not " + target->dump());
      }
    }
  }
  if (total_metrics > kEmfMaxMetrics) {
    problem("the event defines " + std::to_string(total_metrics) + " metrics (at most " +
            std::to_string(kEmfMaxMetrics) + ")");
  }
  return problems;
}

}  // namespace cnnbench::bench
