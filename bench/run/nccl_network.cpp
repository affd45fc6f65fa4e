#include "bench/run/nccl_network.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "bench/report/text_report.h"

namespace cnnbench::bench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

/// The text after the last occurrence of `marker` up to the end of its line.
std::optional<std::string_view> after_last(std::string_view log, std::string_view marker) {
  const size_t at = log.rfind(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = log.substr(at + marker.size());
  return rest.substr(0, rest.find('\n'));
}

std::string upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

/// Whether NCCL_DEBUG_SUBSYS lets INIT through: unset (default INIT,BOOTSTRAP,ENV),
/// a list naming INIT or ALL, or an exclusion list ("^...") that does not name INIT.
bool subsys_logs_init(const std::optional<std::string>& subsys) {
  if (!subsys || subsys->empty()) return true;
  std::string list = upper(*subsys);
  const bool exclude = list.front() == '^';
  if (exclude) list.erase(0, 1);
  bool named = false;
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    item = std::string(trim(item));
    if (item == "INIT" || (!exclude && item == "ALL")) named = true;
  }
  return exclude ? !named : named;
}

}  // namespace

std::optional<NcclNetwork> parse_nccl_log(std::string_view log) {
  const auto net = after_last(log, "NCCL INFO Using network ");
  if (!net || trim(*net).empty()) return std::nullopt;
  NcclNetwork n;
  n.net = std::string(trim(*net));
  std::optional<std::string_view> provider = after_last(log, "Selected provider is ");
  const auto capital = after_last(log, "Selected Provider is ");
  if (!provider || (capital && log.rfind("Selected Provider is ") > log.rfind("Selected provider is "))) {
    provider = capital;
  }
  if (provider) {
    std::string_view p = trim(*provider);
    p = p.substr(0, p.find_first_of(", ("));
    n.provider = std::string(p);
  }
  return n;
}

std::string expand_nccl_debug_file(std::string_view pattern, std::string_view host_name, int pid) {
  const std::string_view short_host = host_name.substr(0, host_name.find('.'));
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'h') {
      out += short_host;
    } else if (c == 'p') {
      out += std::to_string(pid);
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

NcclLog NcclLog::prepare(const EnvLookup& env, const SetEnv& set_env, const std::string& temp_root,
                         const std::string& host_name, int pid) {
  NcclLog log;
  const std::optional<std::string> level = env("NCCL_DEBUG");
  if (!level || level->empty()) {
    std::string folder = temp_root + "/cnnbench-nccl.XXXXXX";
    std::vector<char> buf(folder.begin(), folder.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      log.reason_ = "no folder for NCCL's log under " + temp_root + ": " + std::strerror(errno);
      return log;
    }
    log.own_folder_ = buf.data();
    log.path_ = log.own_folder_ + "/nccl.log";
    set_env("NCCL_DEBUG", "INFO");
    set_env("NCCL_DEBUG_SUBSYS", "INIT");
    set_env("NCCL_DEBUG_FILE", log.path_);
    return log;
  }
  const std::string u = upper(*level);
  if (u != "INFO" && u != "TRACE") {
    log.reason_ = "NCCL_DEBUG=" + *level + ": NCCL logs it only at INFO";
    return log;
  }
  if (!subsys_logs_init(env("NCCL_DEBUG_SUBSYS"))) {
    log.reason_ = "NCCL_DEBUG_SUBSYS=" + env("NCCL_DEBUG_SUBSYS").value_or("") + " leaves out INIT";
    return log;
  }
  const std::optional<std::string> file = env("NCCL_DEBUG_FILE");
  if (!file || file->empty()) {
    log.reason_ = "NCCL_DEBUG=" + *level + " without NCCL_DEBUG_FILE: see \"NCCL INFO Using network\" in the output";
    return log;
  }
  log.path_ = expand_nccl_debug_file(*file, host_name, pid);
  return log;
}

NcclLog NcclLog::prepare_for_this_process() {
  const EnvLookup env = mpi::process_environment();  // main thread, before threads start
  const std::optional<std::string> tmp = env("TMPDIR");
  const std::string root = tmp && !tmp->empty() && (*tmp)[0] == '/' ? *tmp : "/tmp";
  const EnvironmentSources sources = system_sources();
  return prepare(
      env,
      [](const std::string& name, const std::string& value) { ::setenv(name.c_str(), value.c_str(), 1); },
      root, sources.host_name(), static_cast<int>(::getpid()));
}

NcclLog::NcclLog(NcclLog&& other) noexcept
    : path_(std::move(other.path_)), own_folder_(std::move(other.own_folder_)), reason_(std::move(other.reason_)) {
  other.own_folder_.clear();
  other.path_.clear();
}

NcclLog& NcclLog::operator=(NcclLog&& other) noexcept {
  if (this != &other) {
    remove_own_folder();
    path_ = std::move(other.path_);
    own_folder_ = std::move(other.own_folder_);
    reason_ = std::move(other.reason_);
    other.own_folder_.clear();
    other.path_.clear();
  }
  return *this;
}

NcclLog::~NcclLog() { remove_own_folder(); }

void NcclLog::remove_own_folder() noexcept {
  if (own_folder_.empty()) return;
  // NCCL may still hold the file open; unlinking it is fine on Linux.
  ::unlink(path_.c_str());
  ::rmdir(own_folder_.c_str());
  own_folder_.clear();
}

std::optional<NcclNetwork> NcclLog::network() const {
  if (path_.empty()) return std::nullopt;
  std::ifstream in(path_);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_nccl_log(text.str());
}

std::string network_header_line(const std::string& transport, const std::optional<NcclNetwork>& network,
                                const std::string& unreadable_reason, const EnvLookup& env) {
  if (transport != "nccl") {
    return header_line("Network", transport == "mpi" ? "MPI (the MPI library's own transports)" : transport);
  }
  std::string settings;
  for (const char* name : {"NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_SOCKET_IFNAME", "FI_PROVIDER"}) {
    if (const auto value = env ? env(name) : std::nullopt; value && !value->empty()) {
      settings += (settings.empty() ? "" : ", ") + std::string(name) + "=" + *value;
    }
  }
  if (!network) {
    std::string why = unreadable_reason.empty() ? "NCCL's log has no \"Using network\" line" : unreadable_reason;
    return header_line("Network", "NCCL (its net is not known: " + why + ")" +
                                      (settings.empty() ? "" : "; " + settings));
  }
  std::string text = "NCCL net " + network->net;
  if (!network->provider.empty()) text += ", provider " + network->provider;
  text += ", as NCCL reported it";
  text += settings.empty() ? " (NCCL_NET unset)" : " (" + settings + ")";
  return header_line("Network", text);
}

}  // namespace cnnbench::bench
