// Cluster files (configs/clusters/*.yaml, docs/model.md "Cluster files"): the machines the
// performance model (`trainscale predict`) and the simulator (`trainscale-sim`) describe —
// nodes (peak flops per precision, memory bandwidth, GEMM blocking, cores, GPUs), the
// interconnect (topology, alpha, bandwidth, per level for hierarchical machines), the MPI
// library's all-reduce choice and, from `trainscale calibrate`, measured efficiencies and
// all-reduce fits. Errors are ConfigError naming the file, line, key and what is accepted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts::perf {

enum class Topology { star, mesh, torus, fat_tree };
const char* topology_name(Topology topology);

// The blocking of a BLIS-style GEMM (Goto's algorithm): the macro-kernel works on an
// mc x kc block of A (in L2), a kc x nc panel of B (in L3) and an mc x nc block of C.
struct GemmBlocking {
  int64_t mc = 0, nc = 0, kc = 0;
  bool known() const { return mc > 0 && nc > 0 && kc > 0; }
};

struct NodeSpec {
  int64_t cores = 1;
  int64_t gpus = 0;                           // > 0: one rank per GPU, rates below are per GPU
  double memory_gb = 0;
  std::map<std::string, double> peak_gflops;  // precision (fp32, bf16, fp16, tf32) -> GFLOP/s
  double memory_bandwidth_gbs = 0;            // GB/s (1e9 bytes/s)
  GemmBlocking gemm_blocking;                 // unknown (0s): intensity of the whole GEMM
  // Seconds per byte a reduction (sum of two vectors into one) costs: the gamma of the
  // all-reduce formulas. 0 in the file: 3 bytes of memory traffic per byte (read two, write
  // one) at memory_bandwidth_gbs.
  double reduce_ns_per_byte = 0;
};

// One level of the interconnect: the network between nodes, or a link inside a node (NVLink,
// shared memory) in a hierarchical machine.
struct LinkLevel {
  std::string name = "network";
  Topology topology = Topology::star;
  std::vector<int64_t> dims;  // mesh / torus: nodes per dimension (product <= the level's size)
  double alpha_us = 0;        // latency per message, microseconds
  double bandwidth_gbps = 0;  // per link and direction, Gbit/s (1e9 bits/s)

  double alpha_s() const { return alpha_us * 1e-6; }
  double beta_s_per_byte() const { return bandwidth_gbps > 0 ? 8.0 / (bandwidth_gbps * 1e9) : 0.0; }
};

// levels: innermost first; the last one is the network between nodes. A file without `levels`
// has one level (its top-level topology, dims, alpha_us, bandwidth_gbps), used inside nodes too.
struct InterconnectSpec {
  std::vector<LinkLevel> levels;
  const LinkLevel& network() const { return levels.back(); }
  // The link between ranks of one node: the first level (the network itself when there is one).
  const LinkLevel& intra_node() const { return levels.front(); }
};

// What `dist.allreduce: mpi` does on this machine: a model algorithm (mst, bkt, ring, tree,
// butterfly, rabenseifner, ps, shm) or an MPI library's selector (ompi, mpich, intel, mvapich2).
struct MpiSpec {
  std::string allreduce = "ompi";
};

// An all-reduce algorithm's measured cost (from `trainscale calibrate`'s fit of T = a + b m at
// `ranks` ranks), turned into the alpha and beta of the algorithm's own formula at that size
// (the reduction's gamma folded into beta).
struct AllreduceFit {
  double latency_s = 0;     // a: seconds per call at 0 bytes
  double s_per_byte = 0;    // b: seconds per message byte
  int64_t ranks = 2;
  double alpha_s = 0;       // a / latency terms of the formula at `ranks`
  double beta_s_per_byte = 0;  // b / byte terms at `ranks`
};

// Measured / roofline time of a layer's forward and backward (1 = at the roofline).
struct PhaseEfficiency {
  double fp = 1.0, bp = 1.0;
};

// Per-layer efficiencies measured with one number of compute threads per worker.
struct LayerEfficiency {
  std::map<std::string, PhaseEfficiency> kinds;  // layer kind (conv, fc, bn, ...) -> median
  // model -> layer name -> efficiency
  std::map<std::string, std::map<std::string, PhaseEfficiency>> layers;
};

// A gradient compressor's encoding and decoding on this node (docs/model.md "Compressed
// exchanges"), the real codec timed on one rank: seconds per element of the bucket (decoding:
// one rank's contribution), measured at `parameter` (topk: its ratio, powersgd: its rank; the
// others: 0), which the model scales by where the cost follows it.
struct CodecRate {
  double encode_s_per_element = 0;
  double decode_s_per_element = 0;
  double parameter = 0;
};

// The LayerEfficiency it derives from: the efficiencies measured at `threads`.
struct Calibration : LayerEfficiency {
  std::string machine;     // CPU model of the machine measured
  std::string date;        // ISO date of the measurement
  int64_t threads = 0;     // compute threads the measurement used
  int64_t layer_batch = 0; // minibatch of the per-layer measurement
  // Step-to-step variation of one rank's compute while every rank computes (1.4826 x the median
  // absolute deviation of the per-step forward + backward, over its median): the step waits for
  // the slowest rank (StepPrediction::straggle). 0: not measured, no straggling priced.
  double compute_noise_cv = 0;
  std::map<std::string, AllreduceFit> allreduce;  // dist algorithm name -> fit
  // The same measured at other thread counts (a layer on one core is not half as fast as on
  // two): a worker computing on that many cores uses them.
  std::map<int64_t, LayerEfficiency> at_threads;
  std::map<std::string, CodecRate> compression;  // dist.compression name -> its codec's rate
  bool empty() const {
    return allreduce.empty() && kinds.empty() && layers.empty() && at_threads.empty() && compression.empty() &&
           compute_noise_cv == 0;
  }
  // The efficiencies for a worker on `cores` cores: the set measured at that many threads
  // (rounded), else the main one (at `threads`).
  LayerEfficiency for_cores(double cores) const;
};

struct ClusterSpec {
  std::string path;    // the file ("" when built in code)
  std::string name;
  std::string source;  // where the numbers come from
  int64_t nodes = 1;
  NodeSpec node;
  InterconnectSpec interconnect;
  MpiSpec mpi;
  Calibration calibration;

  // Peak GFLOP/s of one node (or GPU) at `precision`; ConfigError naming the file and the
  // precisions it has when absent.
  double peak_gflops(const std::string& precision) const;
  // Seconds per byte of a reduction (NodeSpec::reduce_ns_per_byte or its default).
  double gamma_s_per_byte() const;
  // Ranks one node holds: its GPUs, else cores / threads (at least 1).
  int64_t ranks_per_node(int64_t threads) const;
};

// The accepted keys (top level), in documentation order.
std::vector<std::string> cluster_file_keys();
// The accepted `mpi.allreduce` names.
std::vector<std::string> mpi_allreduce_names();

// Reads and checks a cluster file. `overrides` are "dotted.key=value" settings applied to the
// YAML before it is checked (`predict --cluster-set interconnect.topology=mesh`); the value is
// YAML ("[32, 32]" is a list).
ClusterSpec load_cluster_file(const std::string& path, const std::vector<std::string>& overrides = {});
ClusterSpec parse_cluster_file(const std::string& text, const std::string& path,
                               const std::vector<std::string>& overrides = {});
// The spec as a cluster file (parse_cluster_file reads it back to an equal spec); what
// `calibrate --out` writes and what run files record.
std::string cluster_yaml(const ClusterSpec& spec);

}  // namespace ts::perf
