// Simulated campaigns (docs/sweeps.md "Simulated campaigns"): a site with `scheduler: simulate`
// runs every run of a campaign through trainscale-sim on this machine, on the simulated cluster
// its `simulate:` entry names; the local executor starts them (sweep/submit.h run_local).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sweep/campaign.h"

namespace ts {

// The command that simulates run `index` of `campaign`:
// trainscale-sim run --manifest DIR --index I --cluster ABS [--cluster-set ...] --steps S ...
// ConfigError when the simulator or the cluster file is not there.
std::vector<std::string> simulate_command(const Campaign& campaign, int64_t index);

}  // namespace ts
