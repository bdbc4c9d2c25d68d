// The simulated MPI library (see mpi_selection.h).
#include "sim/mpi_selection.h"

#include <algorithm>
#include <map>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace ts::sim {
namespace {

// SMPI's MPI_Allreduce nearest to a model algorithm of the cluster file (perfmodel/collectives.h):
// bkt and ring are reduce-scatter + all-gather on a ring (lr), mst and tree reduce to a root and
// broadcast along binomial trees (redbcast, with a binomial MPI_Reduce), butterfly is recursive
// doubling (rdb), rabenseifner recursive halving + doubling (rab_rdb); ps and shm have no MPI
// counterpart and run the selector's choice.
const std::map<std::string, std::string>& model_allreduce() {
  static const std::map<std::string, std::string> m{{"bkt", "lr"},        {"ring", "lr"},  {"mst", "redbcast"},
                                                    {"tree", "redbcast"}, {"butterfly", "rdb"},
                                                    {"rabenseifner", "rab_rdb"}};
  return m;
}

std::string flavor_of_selector(const std::string& selector) {
  if (selector == "ompi") return "openmpi";
  if (selector == "impi") return "intel";
  if (selector == "mpich" || selector == "mvapich2") return selector;
  return "smpi";
}

}  // namespace

std::string selector_of_flavor(const std::string& flavor) {
  if (flavor == "openmpi" || flavor == "ompi") return "ompi";
  if (flavor == "intel" || flavor == "impi") return "impi";
  if (flavor == "mpich" || flavor == "mvapich2") return flavor;
  return "";
}

MpiSelection select_mpi(const RunConfig& run, const perf::ClusterSpec& cluster, const std::string& selector_override) {
  MpiSelection s;
  if (!selector_override.empty()) {
    s.coll_selector = selector_override;
    s.reason = "--coll-selector " + selector_override;
  } else if (run.mpi_flavor != MpiFlavor::any) {
    s.coll_selector = selector_of_flavor(mpi_flavor_name(run.mpi_flavor));
    s.reason = std::string("mpi_flavor: ") + mpi_flavor_name(run.mpi_flavor);
  } else {
    const std::string& a = cluster.mpi.allreduce;
    s.coll_selector = selector_of_flavor(a);
    if (s.coll_selector.empty()) {
      const auto it = model_allreduce().find(a);
      if (it != model_allreduce().end()) s.allreduce = it->second;
      // redbcast reduces with MPI_Reduce, whose SMPI default is linear (every rank sends its
      // whole message to the root): MST's reduce is the binomial tree. (Its broadcast, SMPI's
      // default, is the binomial tree already.)
      if (a == "mst" || a == "tree") s.extra.push_back("smpi/reduce:binomial");
    }
    s.reason = cluster.path + ": mpi.allreduce: " + a;
  }
  static const std::vector<std::string> selectors{"default", "ompi", "mpich", "mvapich2", "impi", "automatic"};
  if (!s.coll_selector.empty() && std::find(selectors.begin(), selectors.end(), s.coll_selector) == selectors.end())
    throw ConfigError(s.reason + ": '" + s.coll_selector + "' is not an SMPI collective selector; accepted: " +
                      join(selectors));
  // SMPI 3.32's impi broadcast fails on large messages (MPI_ERR_TYPE, then a stall): Intel MPI's
  // broadcast is MPICH's lineage, so MPICH's selection stands in for it.
  if (s.coll_selector == "impi") s.extra.push_back("smpi/bcast:mpich");
  s.flavor = flavor_of_selector(s.coll_selector);
  return s;
}

}  // namespace ts::sim
