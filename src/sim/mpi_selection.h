// Which MPI library a simulated run stands for (docs/model.md "Simulation"): SMPI runs the
// collective algorithms of Open MPI, MPICH, Intel MPI and MVAPICH2 through its collective
// selectors, so the "MPI flavor" of a run extends to libraries not installed here. The run
// config's mpi_flavor names the library; with mpi_flavor: any, the cluster file's
// mpi.allreduce does (a selector, or a model algorithm mapped to SMPI's nearest MPI_Allreduce).
#pragma once

#include <string>
#include <vector>

#include "config/run_config.h"
#include "perfmodel/cluster.h"

namespace ts::sim {

struct MpiSelection {
  std::string flavor;         // the run file's mpi_flavor: openmpi | mpich | intel | mvapich2 | smpi
  std::string coll_selector;  // smpi/coll-selector ("" = SMPI's default)
  std::string allreduce;      // smpi/allreduce ("" = the selector's choice)
  std::string reason;         // where the choice came from, for the log
  std::vector<std::string> extra;  // more simulator settings the library needs ("key:value")
};

// `selector_override` (trainscale-sim --coll-selector) wins over both when not empty. ConfigError
// for a selector SMPI does not have.
MpiSelection select_mpi(const RunConfig& run, const perf::ClusterSpec& cluster, const std::string& selector_override);

// The SMPI selector of an MPI flavor name (openmpi -> ompi, intel -> impi, ...); "" for others.
std::string selector_of_flavor(const std::string& flavor);

}  // namespace ts::sim
