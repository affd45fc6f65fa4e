// The network NCCL uses between nodes, as NCCL itself reports it, for the header.
//
// NCCL names the network it chose in its own log only ("NCCL INFO Using network
// Socket" / "IB" / "AWS Libfabric", INFO level, subsystem INIT; src/init.cc, the same
// from NCCL 2.21 to 2.28), and the aws-ofi-nccl plugin adds the libfabric provider
// ("NET/OFI Selected provider is efa, ..."). With NCCL_DEBUG unset NCCL logs nothing,
// so a run turns INFO on for INIT alone into a file of its own and reads it once NCCL
// has started; a user's own NCCL_DEBUG setting is left as it is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "bench/discovery/environment.h"

namespace cnnbench::bench {

/// What NCCL's log says about its network.
struct NcclNetwork {
  std::string net;       ///< "Socket", "IB", "AWS Libfabric", ... (NCCL's name of its net)
  std::string provider;  ///< libfabric provider from aws-ofi-nccl ("efa"); empty when not logged
};

/// The network in NCCL's log text: the last "Using network NAME" line and the last
/// "Selected provider is NAME" line (either case of "provider"). nullopt when the
/// log holds no "Using network" line.
std::optional<NcclNetwork> parse_nccl_log(std::string_view log);

/// NCCL_DEBUG_FILE with NCCL's substitutions: %h = the host name up to its first
/// '.', %p = the process id; any other %c stays as written.
std::string expand_nccl_debug_file(std::string_view pattern, std::string_view host_name, int pid);

/// Where this process reads NCCL's log. Move-only; the folder it made (if any) is
/// removed with it (a process that ends through abort leaves it in the temp folder).
class NcclLog {
 public:
  /// Sets one environment variable of this process (setenv).
  using SetEnv = std::function<void(const std::string& name, const std::string& value)>;

  /// Decides where NCCL will log; call on the main thread before NCCL's first call
  /// (NCCL reads its variables once):
  ///   NCCL_DEBUG unset or empty: makes a folder under `temp_root` and sets
  ///     NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT and NCCL_DEBUG_FILE=<folder>/nccl.log;
  ///   NCCL_DEBUG=INFO or TRACE with NCCL_DEBUG_FILE: reads that file;
  ///   otherwise (the log goes to stdout, or the level is below INFO, or
  ///   NCCL_DEBUG_SUBSYS leaves INIT out): unreadable, with the reason.
  /// `host_name` and `pid` expand a user's NCCL_DEBUG_FILE. Never throws but bad_alloc.
  static NcclLog prepare(const EnvLookup& env, const SetEnv& set_env, const std::string& temp_root,
                         const std::string& host_name, int pid);
  /// prepare() with this process's environment, setenv, $TMPDIR (else /tmp), host and pid.
  static NcclLog prepare_for_this_process();

  NcclLog() = default;
  NcclLog(NcclLog&& other) noexcept;
  NcclLog& operator=(NcclLog&& other) noexcept;
  NcclLog(const NcclLog&) = delete;
  NcclLog& operator=(const NcclLog&) = delete;
  ~NcclLog();

  /// The file NCCL writes; empty when unreadable.
  [[nodiscard]] const std::string& path() const { return path_; }
  /// Why the network cannot be read from a file; empty when it can.
  [[nodiscard]] const std::string& unreadable_reason() const { return reason_; }
  /// The network as NCCL logged it so far (read from the file); nullopt when the
  /// file is unreadable or holds no "Using network" line yet.
  [[nodiscard]] std::optional<NcclNetwork> network() const;

 private:
  void remove_own_folder() noexcept;
  std::string path_;
  std::string own_folder_;  ///< made by prepare(); removed by the destructor
  std::string reason_;
};

/// The header line of the network between the ranks, e.g.
///   "Network:     NCCL net AWS Libfabric, provider efa, as NCCL reported it (NCCL_NET unset)"
///   "Network:     NCCL (its net is not known: NCCL_DEBUG=WARN logs it only at INFO)"
///   "Network:     MPI (the MPI library's own transports)"
/// `transport` is the communicator's name ("nccl", "mpi"). The variables that steer
/// NCCL's choice (NCCL_NET, NCCL_NET_PLUGIN, NCCL_SOCKET_IFNAME, FI_PROVIDER) are
/// named with their values when set.
std::string network_header_line(const std::string& transport, const std::optional<NcclNetwork>& network,
                                const std::string& unreadable_reason, const EnvLookup& env);

}  // namespace cnnbench::bench
