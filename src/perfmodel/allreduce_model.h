// Where a run's workers sit on a cluster and what one all-reduce of m bytes costs them there:
// the run's `dist.allreduce` (mpi through the cluster's `mpi.allreduce`), on the levels of the
// interconnect, with the calibrated alpha and beta where the cluster file has them
// (docs/model.md "Communication model").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "perfmodel/cluster.h"
#include "perfmodel/collectives.h"
#include "perfmodel/gemm_model.h"

namespace ts::perf {

// Workers spread over as few nodes as their ranks-per-node allows (one per GPU, or cores /
// threads); with more workers than the cluster holds, nodes are oversubscribed.
struct Placement {
  int64_t workers = 1;
  int64_t nodes = 1;           // nodes used
  int64_t ranks_per_node = 1;  // ranks on the fullest node
  // More ranks on a node than it has places (cores / threads, GPUs), or on a CPU node more
  // compute threads than cores (ranks x threads > cores: one worker of more threads than cores).
  bool oversubscribed = false;
  double cores_per_worker = 1; // CPU clusters: cores one worker computes on
};
// `workers_per_node` > 0: the run's layout (Slurm's --ntasks-per-node, the test bed's ranks per
// host) instead of filling each node's places (cores / threads, GPUs) first.
Placement place_workers(const ClusterSpec& cluster, int64_t workers, int64_t threads, int64_t workers_per_node = 0);

// Peak flop/s and memory bandwidth of one worker at `precision` under `placement`: a GPU's
// own; on CPU nodes its cores' share of the node's peak and of the node's bandwidth.
WorkerRate worker_rate(const ClusterSpec& cluster, const Placement& placement, const std::string& precision);

class AllreduceModel {
 public:
  // `algorithm`: a dist.allreduce name (mpi, ring, tree, ps, shm, nccl) or a model name
  // (mst, bkt, butterfly, rabenseifner); ConfigError for anything else.
  AllreduceModel(const ClusterSpec& cluster, const std::string& algorithm, const Placement& placement);
  // Seconds of one all-reduce of `bytes` (0 on one worker).
  double seconds(double bytes) const;
  // An average as the trainer takes it (dist/bucket_plan.h average_over_ranks): the all-reduce,
  // then the sum scaled by 1/p, which reads and writes every float once: 2 bytes of memory
  // traffic per byte at the reduction's rate (3 / gamma bytes per second). 0 on one worker.
  double average_seconds(double bytes) const;
  // An all-gather in which every worker contributes `bytes_per_rank` (MPI_Allgather: the
  // compressors that gather, qsgd and topk): the bucket algorithm's sum (d_k - 1) alpha +
  // (p - 1) B beta over the grid the workers span, on the slowest level they use; with a
  // calibrated fit, its alpha and beta. 0 on one worker.
  double allgather_seconds(double bytes_per_rank) const;
  // "bkt on network mesh [32, 32], alpha 0.5 us, 200 Gbit/s" or "ring (calibrated: ...)".
  std::string describe() const;
  // The formula that runs (mpi resolved through the cluster's mpi.allreduce).
  const std::string& formula() const { return formula_; }

 private:
  double flat_seconds(const std::string& formula, int64_t p, double bytes, const LinkLevel& link,
                      const std::vector<int64_t>& dims) const;
  double hierarchical_seconds(double bytes) const;

  const ClusterSpec& cluster_;
  Placement placement_;
  std::string algorithm_;  // as asked
  std::string formula_;    // what computes it
  const AllreduceFit* fit_ = nullptr;
};

// The terms of a named formula (mst, bkt, ring, tree, butterfly, rabenseifner, ps, shm) for p
// ranks, m bytes, on grid dims (star: {p}).
CostTerms formula_terms(const std::string& formula, int64_t p, double m, const std::vector<int64_t>& dims);
// The names formula_terms accepts.
std::vector<std::string> formula_names();

}  // namespace ts::perf
