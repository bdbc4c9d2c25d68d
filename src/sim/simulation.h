// One SimGrid simulation per process (SimGrid's engine is a singleton): the engine with the
// configuration that makes SMPI a faithful alpha-beta network (docs/model.md "Simulation"), the
// SMPI instance of the run's ranks, and the run.
//
// Settings that change what the simulator measures (they are recorded in run and bench files):
//   network/model        CM02 (default): a message of m bytes on a route costs the route's
//                        latency + m / its bottleneck bandwidth, shared max-min between flows;
//                        SMPI: SimGrid's piecewise model calibrated on a real cluster (extra
//                        per-size latency and bandwidth factors); LV08: constant factors;
//   network/crosstraffic 0: acknowledgements take no bandwidth;
//   smpi/coll-selector   the MPI library whose collective algorithms MPI_Allreduce, MPI_Gather,
//                        MPI_Bcast use (ompi, mpich, impi, mvapich2; SMPI's default otherwise);
//   smpi/allreduce       one MPI_Allreduce algorithm whatever the selector (lr, rdb, rab_rdb, ...);
//   smpi/simulate-computation no: host time between MPI calls is not simulated time (compute is
//                        modelled explicitly, sim/sim_rank.cpp);
//   smpi/send-is-detached-thresh 0: no send is copied into a temporary buffer to be delivered
//                        eagerly; the project's algorithms never rely on eager sends, their
//                        simulated times are the same, and the host works a third less.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace ts::sim {

struct SimulationSettings {
  std::string network_model = "CM02";
  std::string coll_selector;  // "" = SMPI's default selector
  std::string allreduce;      // "" = the selector's choice
  std::vector<std::string> extra;  // more "key:value" lines
};

// The configuration lines the simulation runs with, "key:value", in the order they are set.
std::vector<std::string> simulation_config(const SimulationSettings& settings);

// The SimGrid version ("3.32.0").
std::string simgrid_version();

class Simulation {
 public:
  // Creates the engine (once per process) and initialises SMPI with `settings`.
  explicit Simulation(const SimulationSettings& settings);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Starts one SMPI rank per host (rank r on hosts[r]; build the platform first), each running
  // rank_main(r, argc, argv), and runs the simulation until every rank has ended or none can go
  // on. Returns the simulated seconds at the end. Callable once.
  using RankMain = std::function<void(int rank, int argc, char** argv)>;
  double run(const std::vector<simgrid::s4u::Host*>& hosts, const RankMain& rank_main);
};

}  // namespace ts::sim
