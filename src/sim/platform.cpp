// The simulated cluster's platform (see platform.h).
#include "sim/platform.h"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "core/strings.h"
#include "perfmodel/collectives.h"

namespace ts::sim {
namespace {

namespace s4u = simgrid::s4u;
using Direction = s4u::LinkInRoute::Direction;

double bytes_per_second(const perf::LinkLevel& level) { return level.bandwidth_gbps * 1e9 / 8.0; }

std::string node_name(int64_t node) { return "node" + std::to_string(node); }

// A node's host: a core per rank.
s4u::Host* make_node_host(s4u::NetZone* zone, int64_t node, int64_t ranks) {
  s4u::Host* host = zone->create_host(node_name(node), kCoreSpeed)->set_core_count(static_cast<int>(ranks));
  host->seal();
  return host;
}

// The loopback of a node: the intra-node level, every flow gets it whole (FATPIPE).
s4u::Link* make_loopback(s4u::NetZone* zone, int64_t node, const perf::ClusterSpec& cluster) {
  const perf::LinkLevel& intra = cluster.interconnect.intra_node();
  s4u::Link* loop = zone->create_link(node_name(node) + "-loopback", bytes_per_second(intra))
                        ->set_latency(intra.alpha_s())
                        ->set_sharing_policy(s4u::Link::SharingPolicy::FATPIPE);
  loop->seal();
  return loop;
}

// A node's host on a zone that takes loopback routes (star, Dijkstra).
s4u::Host* make_routed_node(s4u::NetZone* zone, int64_t node, const perf::ClusterSpec& cluster, int64_t ranks) {
  s4u::Host* host = make_node_host(zone, node, ranks);
  s4u::Link* loop = make_loopback(zone, node, cluster);
  zone->add_route(host->get_netpoint(), host->get_netpoint(), nullptr, nullptr, {{loop, Direction::NONE}}, false);
  return host;
}

std::vector<s4u::Host*> star(const perf::ClusterSpec& cluster, int64_t nodes, int64_t ranks) {
  const perf::LinkLevel& net = cluster.interconnect.network();
  s4u::NetZone* zone = s4u::create_star_zone("cluster");
  std::vector<s4u::Host*> hosts;
  for (int64_t n = 0; n < nodes; ++n) {
    s4u::Host* host = make_routed_node(zone, n, cluster, ranks);
    s4u::Link* link = zone->create_split_duplex_link(node_name(n) + "-link", bytes_per_second(net))
                          ->set_latency(net.alpha_s() / 2);
    link->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, Direction::UP}}, true);
    hosts.push_back(host);
  }
  zone->seal();
  return hosts;
}

// Row-major coordinates of node n on `dims`.
std::vector<int64_t> coordinates(int64_t n, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    c[k] = n % dims[k];
    n /= dims[k];
  }
  return c;
}

int64_t index_of(const std::vector<int64_t>& c, const std::vector<int64_t>& dims) {
  int64_t n = 0;
  for (size_t k = 0; k < dims.size(); ++k) n = n * dims[k] + c[k];
  return n;
}

// Mesh / torus: a router per grid place, links between neighbours, nodes on their routers.
std::vector<s4u::Host*> grid(const perf::ClusterSpec& cluster, int64_t nodes, int64_t ranks, const std::vector<int64_t>& dims,
                             bool wrap) {
  const perf::LinkLevel& net = cluster.interconnect.network();
  s4u::NetZone* zone = s4u::create_dijkstra_zone("cluster", true);
  int64_t places = 1;
  for (int64_t d : dims) places *= d;
  std::vector<simgrid::kernel::routing::NetPoint*> routers;
  for (int64_t p = 0; p < places; ++p) routers.push_back(zone->create_router("router" + std::to_string(p)));
  int ports = 0;  // of the busiest router: two neighbours per dimension of 3 and more, one of 2
  for (int64_t d : dims) ports += d >= 3 ? 2 : (d == 2 ? 1 : 0);
  for (int64_t p = 0; p < places; ++p) {
    const std::vector<int64_t> c = coordinates(p, dims);
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] < 2 || (!wrap && c[k] + 1 >= dims[k]) || (wrap && dims[k] == 2 && c[k] == 1)) continue;
      std::vector<int64_t> next = c;
      next[k] = (c[k] + 1) % dims[k];
      const int64_t q = index_of(next, dims);
      s4u::Link* link = zone->create_split_duplex_link("hop" + std::to_string(p) + "-" + std::to_string(q),
                                                       bytes_per_second(net));
      link->seal();
      zone->add_route(routers[p], routers[q], nullptr, nullptr, {{link, Direction::UP}}, true);
    }
  }
  std::vector<s4u::Host*> hosts;
  for (int64_t n = 0; n < nodes; ++n) {
    s4u::Host* host = make_routed_node(zone, n, cluster, ranks);
    s4u::Link* link = zone->create_split_duplex_link(node_name(n) + "-link", bytes_per_second(net) * std::max(1, ports))
                          ->set_latency(net.alpha_s() / 2);
    link->seal();
    zone->add_route(host->get_netpoint(), routers[n], nullptr, nullptr, {{link, Direction::UP}}, true);
    hosts.push_back(host);
  }
  zone->seal();
  return hosts;
}

// SimGrid's fat tree: two levels of k-port switches, full bisection.
std::vector<s4u::Host*> fat_tree(const perf::ClusterSpec& cluster, int64_t nodes, int64_t ranks, int64_t* leaves) {
  const perf::LinkLevel& net = cluster.interconnect.network();
  const auto k = static_cast<unsigned>(std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(nodes)))));
  *leaves = static_cast<int64_t>(k) * k;
  std::vector<s4u::Host*> hosts(static_cast<size_t>(*leaves), nullptr);  // by leaf id
  auto leaf = [&](s4u::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    s4u::Host* host = make_node_host(zone, static_cast<int64_t>(id), ranks);
    hosts.at(id) = host;
    return std::make_pair(host->get_netpoint(), static_cast<simgrid::kernel::routing::NetPoint*>(nullptr));
  };
  auto loopback = [&](s4u::NetZone* zone, const std::vector<unsigned long>&, unsigned long id) {
    return make_loopback(zone, static_cast<int64_t>(id), cluster);
  };
  const s4u::FatTreeParams params(2, {k, k}, {1, k}, {1, 1});
  s4u::NetZone* zone = s4u::create_fatTree_zone("cluster", nullptr, params, s4u::ClusterCallbacks(leaf, loopback, {}),
                                                bytes_per_second(net), net.alpha_s() / 4,
                                                s4u::Link::SharingPolicy::SPLITDUPLEX);
  zone->seal();
  hosts.resize(static_cast<size_t>(nodes));
  return hosts;
}

std::string link_text(const perf::LinkLevel& level) {
  char text[96];
  std::snprintf(text, sizeof text, "alpha %g us, %g Gbit/s", level.alpha_us, level.bandwidth_gbps);
  return text;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::vector<std::string> items;
  for (int64_t d : dims) items.push_back(std::to_string(d));
  return "[" + join(items, ", ") + "]";
}

}  // namespace

Platform build_platform(const perf::ClusterSpec& cluster, const perf::Placement& placement) {
  const perf::LinkLevel& net = cluster.interconnect.network();
  const int64_t nodes = placement.nodes, ranks = placement.ranks_per_node;
  Platform p;
  std::vector<s4u::Host*> hosts;
  std::string shape;
  switch (net.topology) {
    case perf::Topology::star:
      hosts = star(cluster, nodes, ranks);
      shape = "star";
      break;
    case perf::Topology::mesh:
    case perf::Topology::torus: {
      if (net.dims.empty())
        throw ConfigError(cluster.path + ": interconnect: a " + perf::topology_name(net.topology) +
                          " needs `dims` (nodes per dimension, e.g. [32, 32]) for the simulator");
      const std::vector<int64_t> dims = perf::subgrid_dims(nodes, net.dims);
      int64_t places = 1;
      for (int64_t d : dims) places *= d;
      if (places < nodes)
        throw ConfigError(cluster.path + ": interconnect.dims " + dims_text(net.dims) + " hold " + std::to_string(places) +
                          " nodes, fewer than the " + std::to_string(nodes) + " the run places ranks on");
      const bool wrap = net.topology == perf::Topology::torus;
      hosts = grid(cluster, nodes, ranks, dims, wrap);
      shape = std::string(wrap ? "torus " : "mesh ") + dims_text(dims) + " (shortest paths, cut-through)";
      break;
    }
    case perf::Topology::fat_tree: {
      int64_t leaves = 0;
      hosts = fat_tree(cluster, nodes, ranks, &leaves);
      shape = "fat tree of " + std::to_string(leaves) + " leaves (2 levels, full bisection)";
      break;
    }
  }
  for (int64_t r = 0; r < placement.workers; ++r) p.rank_hosts.push_back(hosts[static_cast<size_t>(r / ranks)]);
  p.description = std::to_string(nodes) + " nodes x " + std::to_string(ranks) + " ranks, " + shape + ", " +
                  link_text(net) + "; intra-node " + link_text(cluster.interconnect.intra_node());
  return p;
}

}  // namespace ts::sim
