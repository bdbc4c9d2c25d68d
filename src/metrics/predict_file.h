// The prediction file written by `trainscale predict --out FILE.h5` (schema trainscale-predict/1,
// docs/hdf5-schema.md "Prediction file"): per worker count the modelled step split into
// compute / communication / exposed communication / data, throughput and scaling efficiency;
// the model's layer table with each pass's FLOPs, bytes and intensity; per worker count and
// layer the pass times, the all-reduce time of its gradients and its bound. The resolved run
// config and the cluster file are root attributes. Written atomically (core/file_io.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

// Bound codes of /predict/layer_bound.
enum class PredictBound : int64_t { compute = 0, memory = 1, network = 2 };

struct PredictLayerRow {
  std::string name, kind, descriptor;
  int64_t parameters = 0;
  double flops[3] = {0, 0, 0};              // fp, bp_gc, bp_wu, for the minibatch
  double bytes[3] = {0, 0, 0};
  double intensity[3] = {0, 0, 0};          // of the whole GEMM (or op)
  double intensity_blocked[3] = {0, 0, 0};  // of the blocked macro-kernel
};

struct PredictResult {
  // root attributes
  std::string config_yaml, config_id, cluster_yaml, cluster_name, cluster_path;
  std::string model, precision, version, git_sha, created;
  int64_t gemm_only = 0;
  int64_t batch_per_worker = 0;    // of the layer table (the first worker count's)
  // one entry per worker count
  std::vector<int64_t> workers, nodes, ranks_per_node, batch;
  std::vector<double> step_time, compute, comm, exposed_comm, contention, straggle, data, forward, backward, update,
      throughput, scaling_efficiency;
  std::vector<double> compress, decompress, wire_bytes;  // parts of comm, and bytes (0 without compression)
  std::vector<std::string> allreduce;  // the all-reduce model at each count, in words
  std::string compression;             // the compression model in words ("" without compression)
  std::vector<std::string> shares;     // uneven ranks: "<workers>: 96,32" per worker count
  // layers
  std::vector<PredictLayerRow> layers;
  // [workers x layers], row-major
  std::vector<double> layer_fp, layer_bp_gc, layer_bp_wu, layer_comm;
  std::vector<int64_t> layer_bound;
};

void write_predict_file(const std::string& path, const PredictResult& result);

}  // namespace ts
