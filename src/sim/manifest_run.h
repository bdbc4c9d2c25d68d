// The command-line settings of a simulated run, and run I of a frozen campaign
// (`trainscale-sim run --manifest DIR --index I`, started by the local executor for a site with
// `scheduler: simulate`, docs/sweeps.md): idempotent, one log per attempt, RUNNING while it runs
// and DONE or FAILED at the end, as `trainscale run --manifest` does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "sim/simulate_run.h"

namespace ts::sim {

struct SimFlags {
  std::string cluster;                    // the cluster file
  std::vector<std::string> cluster_sets;  // "dotted.key=value" overrides of it
  std::optional<int64_t> steps;           // default 3
  std::string network_model;              // "" = CM02
  std::string coll_selector;              // "" = from the run's mpi_flavor / the cluster file
  int64_t workers_per_node = 0;           // > 0: the run's layout (perf::place_workers)
};

// The request for `cfg` with the flags' cluster and settings (run id, path: the caller's).
// ConfigError when the cluster file is missing or wrong.
SimRunRequest request_of(const SimFlags& flags, ResolvedConfig cfg);

// Simulates run `index` of the campaign in `dir` into dir/runs/<run_id>.h5; a run with a DONE
// marker is skipped. Settings the flags leave out come from the campaign site's `simulate:`
// entry. Exit code (0 ok); throws after writing the FAILED marker.
int run_manifest_entry(const std::string& dir, int64_t index, const SimFlags& flags);

}  // namespace ts::sim
