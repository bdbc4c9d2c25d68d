// Resource shapes against the node they must fit on (docs/sweeps.md "Resource shapes"): before
// `sweep submit` writes or submits anything, every shape is compared with the site's `node`
// (cores, GPUs, memory of one node; for the local executor this machine) and a shape that can
// never be scheduled — 2 workers x 2 threads on a 2-core node, 8 GPUs per node on 4-GPU nodes,
// more memory than a node has — is refused with exit 2, naming its runs and what to change.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sweep/campaign.h"
#include "sweep/site.h"
#include "sweep/submit.h"

namespace ts {

// This machine: the cores this process may run on (sched_getaffinity), its GPUs (/dev/nvidiaN)
// and its memory (physical, or the cgroup's limit when lower).
SiteNode local_machine_node();

// The node `scheduler` places runs on: for the local executor this machine, unless the
// campaign's site is a local site that declares `node`; for Slurm and PBS the site's `node`
// (unknown values are not checked).
SiteNode effective_node(const Site& site, const std::string& scheduler);

// "8G", "512M", "1T", "16gb", "2048" (MiB, Slurm's default unit) -> bytes; nullopt when the text
// is not a memory size.
std::optional<double> memory_bytes(const std::string& text);

// One message per shape that can never fit `node`: its runs (indices and ids), what it needs,
// what the node has, and what to change. Empty when all fit.
std::vector<std::string> shape_problems(const Campaign& campaign, const std::vector<ShapeGroup>& groups,
                                        const std::string& scheduler, const SiteNode& node);

// How a packed array task of `pack` runs of `shape` runs them (docs/sweeps.md "Packed
// allocations"): `width` side by side, `per_node` of them on each of `nodes` nodes. With the
// site's pack_side_by_side, for a one-node CPU shape without resources.mem on a node whose cores
// the site declares (not oversubscribed): as many as a node holds by cores on each of up to
// pack_nodes nodes, at most `pack`; else one after another (width 1 on the shape's nodes).
struct PackLayout {
  int width = 1, per_node = 1, nodes = 1;
};
PackLayout pack_layout(const Site& site, const JobShape& shape, int pack);

// ConfigError (exit 2) listing every shape_problems() of the effective node.
void check_shapes(const Campaign& campaign, const std::vector<ShapeGroup>& groups, const std::string& scheduler);

}  // namespace ts
