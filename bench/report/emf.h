// CloudWatch Embedded Metric Format (EMF): JSON log lines that CloudWatch Logs
// turns into metrics without an agent. Source: Amazon CloudWatch User Guide,
// "Specification: Embedded metric format", and the CloudWatch API reference
// (PutMetricData, Dimension, MetricDatum) for names, units and limits.
//
// The format alone, a leaf: events, units, limits and a validator; what
// cnnbench writes with it is emf_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace cnnbench::bench {

/// The units CloudWatch accepts (MetricDatum.Unit).
enum class EmfUnit {
  Seconds, Microseconds, Milliseconds,
  Bytes, Kilobytes, Megabytes, Gigabytes, Terabytes,
  Bits, Kilobits, Megabits, Gigabits, Terabits,
  Percent, Count,
  BytesPerSecond, KilobytesPerSecond, MegabytesPerSecond, GigabytesPerSecond, TerabytesPerSecond,
  BitsPerSecond, KilobitsPerSecond, MegabitsPerSecond, GigabitsPerSecond, TerabitsPerSecond,
  CountPerSecond,
  None,
};

/// CloudWatch's spelling: "Count/Second", "Milliseconds", "None", ...
const char* to_string(EmfUnit unit);

/// Limits of the specification and of CloudWatch.
inline constexpr size_t kEmfMaxMetrics = 100;             ///< metric definitions per event
inline constexpr size_t kEmfMaxDimensionsPerSet = 30;     ///< keys in one dimension set
inline constexpr size_t kEmfMaxDimensionNameLength = 250;
inline constexpr size_t kEmfMaxDimensionValueLength = 1024;
inline constexpr size_t kEmfMaxMetricNameLength = 1024;
inline constexpr size_t kEmfMaxNamespaceLength = 255;
inline constexpr size_t kEmfMaxValuesPerMetric = 100;     ///< when a metric's value is an array
inline constexpr size_t kEmfMaxEventBytes = 256 * 1024;   ///< one CloudWatch Logs event
/// CloudWatch rejects metric values beyond ±2^360.
inline constexpr double kEmfMaxMetricMagnitude = 2.3485425827738332e108;

/// Why `ns` is not a valid CloudWatch namespace (1 to 255 characters of
/// A-Z a-z 0-9 . - _ / # : and space, not only spaces, not starting with "AWS/"),
/// or std::nullopt when it is.
std::optional<std::string> check_emf_namespace(std::string_view ns);

/// One EMF event (one log line) with one metric directive. Names are ours and
/// checked (std::invalid_argument on a breach: a programming error); values come
/// from data and are made valid: dimension values are cut to 1024 characters with
/// non-printable and non-ASCII bytes replaced by '?', and a non-finite metric
/// value is dropped with its definition (CloudWatch would reject the whole event).
class EmfEvent {
 public:
  /// Throws std::invalid_argument when check_emf_namespace(ns) fails.
  EmfEvent(const std::string& metrics_namespace, int64_t timestamp_ms);

  /// Sets a dimension member. Throws std::invalid_argument for an invalid or reused key.
  EmfEvent& dimension(const std::string& key, std::string_view value);
  /// Declares a dimension set of keys set with dimension(). Throws std::invalid_argument
  /// for an unknown key or more than kEmfMaxDimensionsPerSet keys.
  EmfEvent& dimension_set(const std::vector<std::string>& keys);
  /// Adds a metric; returns false and adds nothing when `value` is not finite or
  /// beyond kEmfMaxMetricMagnitude. Throws std::invalid_argument for an invalid or
  /// reused name, or a 101st metric.
  bool metric(const std::string& name, EmfUnit unit, double value);
  /// Adds a context member (not a metric, not a dimension). Non-finite numbers
  /// become null. Throws std::invalid_argument when the key is taken.
  EmfEvent& property(const std::string& key, nlohmann::ordered_json value);

  [[nodiscard]] size_t metric_count() const { return metric_definitions_.size(); }
  /// The event as one line of compact JSON, without the newline.
  [[nodiscard]] std::string to_line() const;

 private:
  void claim_key(const std::string& key);

  std::string namespace_;
  int64_t timestamp_ms_;
  nlohmann::ordered_json members_ = nlohmann::ordered_json::object();
  nlohmann::ordered_json dimension_sets_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json metric_definitions_ = nlohmann::ordered_json::array();
  std::vector<std::string> dimension_keys_;
};

/// Checks one line against the specification and CloudWatch's limits, not only
/// that it parses: one JSON object on one line, at most kEmfMaxEventBytes; _aws
/// with an integer Timestamp >= 0 and a non-empty CloudWatchMetrics array; each
/// directive with exactly Namespace (valid), Dimensions (sets of at most 30 keys,
/// each key a root member holding a string of 1 to 1024 printable ASCII
/// characters) and Metrics (at most 100 in all; Name a root member holding a
/// number, or an array of at most 100 numbers, within ±2^360; Unit, when given,
/// one of EmfUnit; StorageResolution, when given, 1 or 60; no other members).
/// Returns every problem found; empty means valid.
std::vector<std::string> validate_emf_line(std::string_view line);

}  // namespace cnnbench::bench
