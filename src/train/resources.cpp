// Machine-dependent bounds of a run (see resources.h).
#include "train/resources.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "core/host_info.h"

namespace ts {

void refuse_collectively(Communicator& comm, const std::string& local_refusal, bool unsupported) {
  if (comm.size() == 1) {
    if (local_refusal.empty()) return;
    if (unsupported) throw UnsupportedError(local_refusal);
    throw ConfigError(local_refusal);
  }
  // Each refusal travels with its kind as the first character: 'u' unsupported, 'c' config.
  const std::vector<std::string> all =
      comm.gather_strings_to_root(local_refusal.empty() ? "" : (unsupported ? "u" : "c") + local_refusal);
  std::string message;
  bool all_unsupported = true;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    all_unsupported = all_unsupported && all[r][0] == 'u';
    if (all[r] == all.front() && r > 0) continue;  // the same reason as rank 0 (a homogeneous cluster)
    if (!message.empty()) message += "; ";
    message += r == 0 ? all[r].substr(1) : "rank " + std::to_string(r) + ": " + all[r].substr(1);
  }
  double verdict = message.empty() ? 0.0 : all_unsupported ? 2.0 : 1.0;
  comm.broadcast(&verdict, 1, 0);
  if (verdict == 0.0) return;
  const std::string text = comm.rank() == 0 ? message : "refused by the check of rank 0 (its message names the reason)";
  if (verdict == 2.0) throw UnsupportedError(text);
  throw ConfigError(text);
}

void check_host_threads(const ResolvedConfig& cfg, Communicator& comm) {
  const RunConfig& r = cfg.run;
  const int64_t cpus = host_online_cpus();
  const std::string node = "host " + host_name() + " has " + std::to_string(cpus) + " CPU(s) online";
  std::string refusal;
  if (r.threads > cpus)
    refusal = cfg.locate("threads") + ": " + std::to_string(r.threads) + " compute threads per worker, but " + node +
              "; use at most " + std::to_string(cpus) +
              " (a rank's threads beyond its node's CPUs only slow it down, and far beyond them the OpenMP runtime "
              "cannot start; ranks on one node may share its CPUs)";
  else if (r.dataset.loader_threads > kLoaderThreadsPerCpu * cpus)
    refusal = cfg.locate("dataset.loader_threads") + ": " + std::to_string(r.dataset.loader_threads) +
              " loader threads per worker, but " + node + "; use at most " +
              std::to_string(kLoaderThreadsPerCpu * cpus) + " (" + std::to_string(kLoaderThreadsPerCpu) +
              " per CPU: they mostly wait on storage, and more only cost memory)";
  refuse_collectively(comm, refusal);
}

}  // namespace ts
