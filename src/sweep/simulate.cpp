// Simulated campaigns (see simulate.h).
#include "sweep/simulate.h"

#include <unistd.h>

#include <filesystem>

#include "core/error.h"

namespace ts {

namespace fs = std::filesystem;

// trainscale-sim: the site's simulate.binary (relative: from the current directory), else the one
// beside the running trainscale.
static std::string simulator_binary(const Site& site) {
  if (!site.simulate.binary.empty())
    return fs::absolute(fs::path(site.simulate.binary)).lexically_normal().string();
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw RuntimeError("cannot find the running trainscale binary (/proc/self/exe): " + ec.message() +
                             "; name `simulate.binary` in the site file");
  return (self.parent_path() / "trainscale-sim").string();
}

std::vector<std::string> simulate_command(const Campaign& c, int64_t index) {
  const SiteSimulate& sim = c.site.simulate;
  const std::string binary = simulator_binary(c.site);
  if (::access(binary.c_str(), X_OK) != 0)
    throw ConfigError("site " + c.site.path + ": simulate.binary: " + binary +
                      " is not an executable here; build trainscale-sim (scripts/build.sh, with libsimgrid-dev "
                      "installed) or set simulate.binary");
  const fs::path cluster = fs::absolute(fs::path(sim.cluster)).lexically_normal();
  std::error_code not_a_path;  // a site file's text may name anything (too long a path): no throw
  if (!fs::is_regular_file(cluster, not_a_path))
    throw ConfigError("site " + c.site.path + ": simulate.cluster: " + cluster.string() +
                      " is not a file; name a cluster file (configs/clusters/*.yaml)");
  std::vector<std::string> cmd{binary, "run", "--manifest", c.dir, "--index", std::to_string(index),
                               "--cluster", cluster.string(), "--steps", std::to_string(sim.steps)};
  for (const std::string& s : sim.cluster_set) cmd.insert(cmd.end(), {"--cluster-set", s});
  if (!sim.network_model.empty()) cmd.insert(cmd.end(), {"--network-model", sim.network_model});
  if (!sim.coll_selector.empty()) cmd.insert(cmd.end(), {"--coll-selector", sim.coll_selector});
  return cmd;
}

}  // namespace ts
