// See allreduce_model.h.
#include "perfmodel/allreduce_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/strings.h"

namespace ts::perf {
namespace {

bool is_grid(Topology t) { return t == Topology::mesh || t == Topology::torus; }

// The grid p ranks span on `link` (star and fat tree: one dimension).
std::vector<int64_t> grid_for(const LinkLevel& link, int64_t p) {
  if (!is_grid(link.topology)) return {p};
  return subgrid_dims(p, link.dims);
}

// An MPI library's choice, approximated by the better of its candidates per message size
// (docs/model.md): MPICH (Thakur, Rabenseifner, Gropp 2005) takes recursive doubling below
// 2 KiB and Rabenseifner's reduce-scatter + all-gather above; Open MPI's tuned component,
// Intel MPI and MVAPICH2 choose among recursive doubling, Rabenseifner and ring.
std::vector<std::string> selector_candidates(const std::string& selector, double bytes) {
  if (selector == "mpich") return {bytes < 2048 ? "butterfly" : "rabenseifner"};
  return {"butterfly", "rabenseifner", "ring"};
}

bool is_selector(const std::string& name) {
  return name == "ompi" || name == "mpich" || name == "intel" || name == "mvapich2";
}

std::string us(double seconds) { return format_number("%.3g us", seconds * 1e6); }
std::string number(double v) { return format_number("%.4g", v); }

}  // namespace

std::vector<std::string> formula_names() { return {"mst", "bkt", "ring", "tree", "butterfly", "rabenseifner", "ps", "shm"}; }

CostTerms formula_terms(const std::string& f, int64_t p, double m, const std::vector<int64_t>& dims) {
  if (p <= 1) return {};
  if (f == "mst") return mst_allreduce(dims, m);
  if (f == "bkt") return bkt_allreduce(dims, m);
  if (f == "ring") return ring_allreduce(p, m);
  if (f == "tree") return tree_allreduce(p, m);
  if (f == "butterfly") return butterfly_allreduce(p, m);
  if (f == "rabenseifner") return rabenseifner_allreduce(p, m);
  if (f == "ps") return ps_allreduce(p, m);
  if (f == "shm") return shm_allreduce(p, m);
  throw ConfigError("all-reduce formula '" + f + "' is not known; accepted: " + join(formula_names()));
}

Placement place_workers(const ClusterSpec& cluster, int64_t workers, int64_t threads, int64_t workers_per_node) {
  if (workers < 1) throw ConfigError("the performance model needs at least 1 worker (got " + std::to_string(workers) + ")");
  Placement pl;
  pl.workers = workers;
  const int64_t places = cluster.ranks_per_node(threads);
  const int64_t per_node = workers_per_node > 0 ? workers_per_node : places;
  pl.nodes = std::min(cluster.nodes, (workers + per_node - 1) / per_node);
  pl.ranks_per_node = (workers + pl.nodes - 1) / pl.nodes;
  const int64_t threads_on_node = pl.ranks_per_node * std::max<int64_t>(1, threads);
  pl.oversubscribed = pl.ranks_per_node > places || (cluster.node.gpus == 0 && threads_on_node > cluster.node.cores);
  const double cores = static_cast<double>(cluster.node.cores);
  pl.cores_per_worker = std::min(static_cast<double>(std::max<int64_t>(1, threads)), cores / static_cast<double>(pl.ranks_per_node));
  return pl;
}

WorkerRate worker_rate(const ClusterSpec& cluster, const Placement& pl, const std::string& precision) {
  const double peak = cluster.peak_gflops(precision) * 1e9;
  const double bandwidth = cluster.node.memory_bandwidth_gbs * 1e9;
  if (cluster.node.gpus > 0) {
    // GPUs of an oversubscribed node are shared by the ranks on them.
    const double share = std::min(1.0, static_cast<double>(cluster.node.gpus) / static_cast<double>(pl.ranks_per_node));
    return {peak * share, bandwidth * share};
  }
  // Bandwidth follows the cores as the peak does: a core's loads and stores go through its own
  // caches and miss handling, so one core of an idle node does not draw the node's bandwidth,
  // and the cores of a full node share it. (Dividing by the ranks on the node instead gave a
  // lone 1-thread worker the whole node's bandwidth; its calibration then over-predicted the
  // same layers by up to 2x once every core ran a worker: docs/model.md "Validation".)
  const double share = pl.cores_per_worker / static_cast<double>(cluster.node.cores);
  return {peak * share, bandwidth * share};
}

AllreduceModel::AllreduceModel(const ClusterSpec& cluster, const std::string& algorithm, const Placement& placement)
    : cluster_(cluster), placement_(placement), algorithm_(algorithm) {
  static const std::vector<std::string> dist_names = {"mpi", "ring", "tree", "ps", "shm", "butterfly", "nccl"};
  const std::vector<std::string> models = formula_names();
  if (algorithm == "mpi") formula_ = cluster.mpi.allreduce;
  else if (algorithm == "nccl") formula_ = "nccl";
  else if (std::find(models.begin(), models.end(), algorithm) != models.end()) formula_ = algorithm;
  else
    throw ConfigError("all-reduce '" + algorithm + "' has no cost model; accepted: " + join(dist_names) + " (dist.allreduce) or " +
                      join(models));
  auto it = cluster.calibration.allreduce.find(algorithm);
  if (it != cluster.calibration.allreduce.end()) fit_ = &it->second;
}

double AllreduceModel::flat_seconds(const std::string& f, int64_t p, double bytes, const LinkLevel& link,
                                    const std::vector<int64_t>& dims) const {
  const double gamma = cluster_.gamma_s_per_byte();
  if (is_selector(f) || f == "nccl") {
    const std::vector<std::string> candidates =
        f == "nccl" ? std::vector<std::string>{"ring", "tree"} : selector_candidates(f, bytes);
    double best = std::numeric_limits<double>::infinity();
    for (const std::string& c : candidates) best = std::min(best, flat_seconds(c, p, bytes, link, dims));
    return best;
  }
  return formula_terms(f, p, bytes, dims).seconds(link.alpha_s(), link.beta_s_per_byte(), gamma);
}

// Across nodes of a hierarchical machine: reduce-scatter inside each node (bucket on the
// innermost level), the algorithm among the nodes on each node's 1/g share, all-gather inside
// the node: the way NCCL and shm's hierarchical path split the work.
double AllreduceModel::hierarchical_seconds(double bytes) const {
  const LinkLevel& intra = cluster_.interconnect.intra_node();
  const LinkLevel& net = cluster_.interconnect.network();
  const int64_t g = placement_.ranks_per_node;
  const double gamma = cluster_.gamma_s_per_byte();
  const CostTerms inside = bkt_allreduce({g}, bytes);
  const double share = bytes / static_cast<double>(g);
  const std::string across = formula_ == "shm" ? "ring" : formula_;
  return inside.seconds(intra.alpha_s(), intra.beta_s_per_byte(), gamma) +
         flat_seconds(across, placement_.nodes, share, net, grid_for(net, placement_.nodes));
}

double AllreduceModel::average_seconds(double bytes) const {
  if (placement_.workers <= 1 || bytes <= 0) return 0.0;
  return seconds(bytes) + 2.0 / 3.0 * bytes * cluster_.gamma_s_per_byte();
}

double AllreduceModel::seconds(double bytes) const {
  const int64_t p = placement_.workers;
  if (p <= 1 || bytes <= 0) return 0.0;
  if (fit_) {
    // Calibrated: the formula's own latency and byte terms with the measured alpha and beta
    // (gamma folded into beta by the fit).
    const std::string f = is_selector(formula_) || formula_ == "nccl" ? "ring" : formula_;
    return formula_terms(f, p, bytes, {p}).seconds(fit_->alpha_s, fit_->beta_s_per_byte, 0.0);
  }
  if (placement_.nodes == 1) {
    const LinkLevel& intra = cluster_.interconnect.intra_node();
    return flat_seconds(formula_, p, bytes, intra, {p});
  }
  const bool split = placement_.ranks_per_node > 1 && cluster_.interconnect.levels.size() > 1;
  if (split && (formula_ == "ring" || formula_ == "bkt" || formula_ == "nccl" || formula_ == "shm"))
    return hierarchical_seconds(bytes);
  // Flat over every rank on the network (the slowest level): a grid of nodes, each node's
  // ranks along the first dimension.
  const LinkLevel& net = cluster_.interconnect.network();
  std::vector<int64_t> dims = grid_for(net, placement_.nodes);
  dims[0] *= placement_.ranks_per_node;
  return flat_seconds(formula_, p, bytes, net, dims);
}

double AllreduceModel::allgather_seconds(double bytes_per_rank) const {
  const int64_t p = placement_.workers;
  if (p <= 1 || bytes_per_rank <= 0) return 0.0;
  const double gathered = bytes_per_rank * static_cast<double>(p);
  if (fit_) return bkt_allgather({p}, gathered).seconds(fit_->alpha_s, fit_->beta_s_per_byte, 0.0);
  if (placement_.nodes == 1) {
    const LinkLevel& intra = cluster_.interconnect.intra_node();
    return bkt_allgather({p}, gathered).seconds(intra.alpha_s(), intra.beta_s_per_byte(), 0.0);
  }
  const LinkLevel& net = cluster_.interconnect.network();
  std::vector<int64_t> dims = grid_for(net, placement_.nodes);
  dims[0] *= placement_.ranks_per_node;
  return bkt_allgather(dims, gathered).seconds(net.alpha_s(), net.beta_s_per_byte(), 0.0);
}

std::string AllreduceModel::describe() const {
  std::string text = algorithm_;
  if (formula_ != algorithm_) text += " (" + formula_ + ")";
  if (fit_)
    return text + " calibrated at " + std::to_string(fit_->ranks) + " ranks: alpha " + us(fit_->alpha_s) + ", beta " +
           us(fit_->beta_s_per_byte * 1e6) + "/MB";
  const LinkLevel& link = placement_.nodes == 1 ? cluster_.interconnect.intra_node() : cluster_.interconnect.network();
  text += " on " + link.name + " (" + topology_name(link.topology) + "): alpha " + us(link.alpha_s()) + ", " +
          number(link.bandwidth_gbps) + " Gbit/s";
  return text;
}

}  // namespace ts::perf
