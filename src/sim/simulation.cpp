// The SimGrid engine and the SMPI instance of a simulated run (see simulation.h).
#include "sim/simulation.h"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/version.h>
#include <smpi/smpi.h>
#include <xbt/log.h>

#include <memory>

#include "core/error.h"
#include "dist/smpi/simulation.h"
#include "sim/platform.h"

namespace ts::sim {
namespace {

namespace s4u = simgrid::s4u;

constexpr const char* kInstance = "trainscale";
static_assert(kCoreSpeed == 1e9, "smpi/host-speed below says 1Gf");

std::unique_ptr<s4u::Engine> engine;

}  // namespace

std::vector<std::string> simulation_config(const SimulationSettings& s) {
  std::vector<std::string> c{"network/model:" + s.network_model, "network/crosstraffic:0",
                             "smpi/simulate-computation:no", "smpi/host-speed:1Gf", "smpi/send-is-detached-thresh:0"};
  if (!s.coll_selector.empty()) c.push_back("smpi/coll-selector:" + s.coll_selector);
  if (!s.allreduce.empty()) c.push_back("smpi/allreduce:" + s.allreduce);
  for (const std::string& extra : s.extra) c.push_back(extra);
  return c;
}

std::string simgrid_version() {
  return std::to_string(SIMGRID_VERSION_MAJOR) + "." + std::to_string(SIMGRID_VERSION_MINOR) + "." +
         std::to_string(SIMGRID_VERSION_PATCH);
}

Simulation::Simulation(const SimulationSettings& settings) {
  if (engine) throw RuntimeError("trainscale-sim: one simulation per process (SimGrid's engine is a singleton)");
  static char name[] = "trainscale-sim";
  static char* argv[] = {name, nullptr};
  int argc = 1;
  xbt_log_control_set("root.thres:warning");  // SimGrid's progress messages are not ours
  engine = std::make_unique<s4u::Engine>(&argc, argv);
  smpi_init_options();  // declares the smpi/* keys, so that they can be set before SMPI_init
  for (const std::string& line : simulation_config(settings)) {
    try {
      s4u::Engine::set_config(line);
    } catch (const std::exception& e) {
      const std::string why = e.what();  // SimGrid appends every key it knows: keep the first line
      throw ConfigError("simulator setting '" + line + "' is not accepted by SimGrid " + simgrid_version() + ": " +
                        why.substr(0, why.find('\n')));
    }
  }
  SMPI_init();
}

Simulation::~Simulation() { SMPI_finalize(); }

double Simulation::run(const std::vector<s4u::Host*>& hosts, const RankMain& rank_main) {
  const int n = static_cast<int>(hosts.size());
  SMPI_app_instance_register(kInstance, nullptr, n);  // the instance; its actors are created here
  for (int r = 0; r < n; ++r) {
    s4u::ActorPtr actor = s4u::Actor::init("rank" + std::to_string(r), hosts[static_cast<size_t>(r)]);
    actor->set_property("instance_id", kInstance);
    actor->set_property("rank", std::to_string(r));
    actor->start([r, &rank_main] {
      static char arg0[] = "trainscale-sim";
      char* args[] = {arg0, nullptr};
      int argc = 1;
      char** argv = args;
      init_simulated_rank(&argc, &argv);
      rank_main(r, argc, argv);
    });
  }
  engine->run();
  return s4u::Engine::get_clock();
}

}  // namespace ts::sim
