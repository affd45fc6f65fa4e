// The result document of --result_json: everything a run measured and the
// context needed to compare it with another run, written once at the summary,
// atomically, so a reader never sees half a file. bench/report/schema/result.schema.json
// (JSON Schema draft 2020-12) describes it exactly; schema_version changes when
// a field is renamed or removed.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/discovery/environment.h"
#include "bench/report/reporter.h"

namespace cnnbench::bench {

/// The document's format version (a string, so "1.1" can follow).
inline constexpr const char* kResultSchemaVersion = "1.1";

/// What the result document holds besides the run's figures.
struct ResultJsonOptions {
  std::string path;  ///< --result_json
  /// The resolved flags, keyed by the flag table's keys (cli/flag_table.h: config_echo).
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  /// The keys of `config` that took their defaults (not given on the command line).
  std::vector<std::string> config_defaults;
  Environment environment;
  std::string device_source;  ///< DeviceDiscovery::source
  /// Milliseconds since the Unix epoch, for started_at / finished_at; empty = system clock.
  std::function<int64_t()> clock_ms;
};

/// Everything the document holds of a run: its result and what the reporter
/// saw as it happened.
struct ResultRecord {
  RunResult result;
  std::vector<StepStats> displayed_steps;
  int64_t started_at_ms = 0;   ///< header() time
  int64_t finished_at_ms = 0;  ///< summary() time
};

/// One entry of the document's "devices" (also how ranks exchange their device).
nlohmann::ordered_json device_json(const DeviceEntry& d);

/// The result document (schema_version kResultSchemaVersion). Non-finite numbers become null.
nlohmann::ordered_json build_result_document(const ResultJsonOptions& options, const ResultRecord& record);

/// Writes `contents` to `path` atomically: to PATH.tmp.<pid> in the same
/// directory, fsync, rename over PATH, then fsync of the directory. On failure the
/// temporary file is removed and std::runtime_error says which step failed for
/// which file, starting with `what` and the path (e.g. "--result_json=/x/r.json:
/// cannot create /x/r.json.tmp.42: No such file or directory").
void write_file_atomically(const std::string& path, std::string_view contents, std::string_view what);

/// Collects the displayed steps and writes the document on summary(). Never
/// throws from its Reporter methods: a failure to write is kept in error() for
/// the caller to print after the text summary (exit status 1).
class ResultJsonReporter final : public Reporter {
 public:
  explicit ResultJsonReporter(ResultJsonOptions options);

  void header(const RunInfo& info) override;
  void step(const RunInfo& info, const StepStats& stats) override;
  void summary(const RunResult& result) override;

  /// Empty, or why the document was not written (names --result_json and the path).
  [[nodiscard]] std::string error() const override { return error_; }
  [[nodiscard]] bool written() const { return written_; }

 private:
  int64_t now_ms() const;

  ResultJsonOptions options_;
  ResultRecord record_;
  std::string error_;
  bool written_ = false;
};

}  // namespace cnnbench::bench
