// The simulated cluster: a SimGrid platform built from a cluster file (docs/model.md
// "Simulation"), one host per node that holds the node's ranks, the interconnect's topology with
// the file's alpha and bandwidth:
//   star      every node's split-duplex link (alpha/2, the bandwidth per direction) to one
//             switch: a message pays alpha and each node sends and receives at full rate;
//   mesh      routers on a grid of `dims` (no wrap-around), torus with wrap-around: split-duplex
//             links of the bandwidth between neighbouring routers (no latency: cut-through), each
//             node joined to its router by a link of alpha/2 whose bandwidth is the router's
//             ports together; shortest-path routes;
//   fat_tree  SimGrid's two-level fat tree of full bisection (k nodes per leaf switch, k spines,
//             k = ceil(sqrt(nodes))), every link alpha/4: alpha through a spine, alpha/2 within
//             a leaf switch.
// Ranks of one node talk through the node's loopback: the intra-node level (the first of
// `levels`, the network itself in a one-level file) with alpha and a bandwidth that every flow
// gets whole (a switch such as NVSwitch, or shared memory). A host has a core per rank for the
// rank's modelled compute; its reductions (dist/smpi/modelled_reduce_kernel.cpp) take time but
// no core, as the communication thread's core is not one the compute uses.
#pragma once

#include <string>
#include <vector>

#include "perfmodel/allreduce_model.h"
#include "perfmodel/cluster.h"

namespace simgrid::s4u {
class Host;
}

namespace ts::sim {

// Speed of one core of a simulated host: the simulator turns modelled seconds into this many
// flops per second (host speed is a unit here, not a claim about the node).
inline constexpr double kCoreSpeed = 1e9;

struct Platform {
  std::vector<simgrid::s4u::Host*> rank_hosts;  // rank r runs on rank_hosts[r]
  std::string description;                      // one line for logs and the run file
};

// Builds the platform for `placement` (perf::place_workers: ranks r of node r / ranks_per_node)
// in the current SimGrid engine (before it runs). ConfigError for a topology the file describes
// in a way the simulator cannot build (mesh/torus dims too small for the nodes).
Platform build_platform(const perf::ClusterSpec& cluster, const perf::Placement& placement);

}  // namespace ts::sim
