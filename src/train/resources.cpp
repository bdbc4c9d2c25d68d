// Machine-dependent bounds of a run (see resources.h).
#include "train/resources.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/host_info.h"
#include "core/strings.h"

namespace ts {
namespace {

// The CPUs this process may run on (sched_getaffinity) as ranges, "0-3,8"; all online CPUs
// when the mask cannot be read.
std::string affinity_ranges() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.empty())
    for (int c = 0; c < host_online_cpus(); ++c) cpus.push_back(c);
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return text;
}

int64_t number_of(const std::string& text) {
  int64_t v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

// What the ranks of one node run, and on which CPUs.
struct NodeLoad {
  std::vector<int64_t> threads;  // each rank's compute threads
  std::set<int64_t> cpus;        // the union of their affinity masks
  int64_t online = 0;            // the node's CPUs online

  // One rank's fields: its compute threads, its node's CPUs online, its affinity ranges.
  void add(const std::string& threads_text, const std::string& online_text, const std::string& ranges) {
    threads.push_back(number_of(threads_text));
    online = number_of(online_text);
    for (const std::string& range : split(ranges, ',')) {
      const std::vector<std::string> ends = split(range, '-');
      for (int64_t c = number_of(ends.front()); c <= number_of(ends.back()); ++c) cpus.insert(c);
    }
  }
  int64_t total_threads() const { return std::accumulate(threads.begin(), threads.end(), int64_t{0}); }
  // "runs 4 compute threads (2 rank(s) x 2 thread(s)) on the 2 CPU(s) its ranks may use".
  std::string text() const {
    const bool alike = std::set<int64_t>(threads.begin(), threads.end()).size() == 1;
    std::vector<std::string> each;
    for (int64_t t : threads) each.push_back(std::to_string(t));
    const int64_t usable = static_cast<int64_t>(cpus.size());
    return "runs " + std::to_string(total_threads()) + " compute threads (" + std::to_string(threads.size()) +
           " rank(s) x " + (alike ? each.front() : join(each, "+")) + " thread(s)) on the " + std::to_string(usable) +
           " CPU(s) its ranks may use" +
           (usable < online ? " (bound to " + std::to_string(usable) + " of its " + std::to_string(online) + " CPUs)"
                            : std::string());
  }
};

}  // namespace

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

std::vector<std::string> oversubscription_warnings(const ResolvedConfig& cfg, Communicator& comm) {
  const RunConfig& r = cfg.run;
  const int64_t threads = r.threads * (r.dist.strategy == DistStrategy::hogwild ? r.dist.threads_per_worker : 1);
  const std::string mine = host_name() + "\t" + std::to_string(threads) + "\t" + std::to_string(host_online_cpus()) +
                           "\t" + affinity_ranges();
  const std::vector<std::string> all = comm.size() > 1 ? comm.gather_strings_to_root(mine) : std::vector<std::string>{mine};
  std::map<std::string, NodeLoad> nodes;  // by host, in name order
  for (const std::string& rank : all) {
    const std::vector<std::string> f = split(rank, '\t');
    if (f.size() == 4) nodes[f[0]].add(f[1], f[2], f[3]);
  }
  std::map<std::string, std::vector<std::string>> hosts_by_load;  // nodes loaded alike: one warning
  for (const auto& [host, load] : nodes)
    if (load.total_threads() > static_cast<int64_t>(load.cpus.size())) hosts_by_load[load.text()].push_back(host);
  std::vector<std::string> warnings;
  for (const auto& [load, hosts] : hosts_by_load) {
    constexpr size_t kNamed = 3;
    std::vector<std::string> named(hosts.begin(), hosts.begin() + static_cast<long>(std::min(hosts.size(), kNamed)));
    const std::string more = hosts.size() > kNamed ? " and " + std::to_string(hosts.size() - kNamed) + " more" : "";
    const bool bound = load.find("(bound to") != std::string::npos;
    warnings.push_back("the node is oversubscribed: host " + join(named) + more + (hosts.size() > 1 ? " each " : " ") +
                       load + ", so step times include the threads' waits for a CPU; lower threads or run fewer "
                       "ranks per node" +
                       (bound ? std::string(", or let each rank use as many CPUs as it has threads (mpirun --map-by "
                                            "slot:PE=N or --bind-to none, srun --cpus-per-task=N)")
                              : std::string()));
  }
  return warnings;
}

}  // namespace ts
