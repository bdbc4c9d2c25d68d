// See predict_file.h.
#include "metrics/predict_file.h"

#include "core/strings.h"
#include "metrics/hdf5_file.h"

namespace ts {
namespace {

void write_layer_table(h5::Group& top, const PredictResult& r) {
  using Row = PredictLayerRow;
  std::vector<h5::Column> cols = {
      h5::Column::of("name", r.layers, &Row::name), h5::Column::of("kind", r.layers, &Row::kind),
      h5::Column::of("descriptor", r.layers, &Row::descriptor), h5::Column::of("parameters", r.layers, &Row::parameters)};
  static const char* kPass[3] = {"fp", "bp_gc", "bp_wu"};
  for (int p = 0; p < 3; ++p) {
    const std::string pass = kPass[p];
    cols.push_back(h5::Column::of(pass + "_flops", r.layers, [p](const Row& l) { return l.flops[p]; }));
    cols.push_back(h5::Column::of(pass + "_bytes", r.layers, [p](const Row& l) { return l.bytes[p]; }));
    cols.push_back(h5::Column::of(pass + "_intensity", r.layers, [p](const Row& l) { return l.intensity[p]; }));
    cols.push_back(h5::Column::of(pass + "_intensity_blocked", r.layers, [p](const Row& l) { return l.intensity_blocked[p]; }));
  }
  h5::Dataset table = top.write_table("layers", cols);
  table.set_attr("units", "flops, bytes, flops per byte; for one worker's minibatch (batch_per_worker)");
  table.set_attr("batch_per_worker", r.batch_per_worker);
}

void write_per_layer(h5::Group& top, const PredictResult& r) {
  const std::vector<int64_t> dims = {static_cast<int64_t>(r.workers.size()), static_cast<int64_t>(r.layers.size())};
  top.write_series({{"layer_fp", r.layer_fp, "seconds", dims}, {"layer_bp_gc", r.layer_bp_gc, "seconds", dims},
                    {"layer_bp_wu", r.layer_bp_wu, "seconds", dims}, {"layer_comm", r.layer_comm, "seconds", dims}});
  h5::Dataset bound = top.write("layer_bound", dims, r.layer_bound.data());
  bound.set_attr("units", "code");
  bound.set_attr("codes", "0 compute, 1 memory, 2 network");
}

}  // namespace

void write_predict_file(const std::string& path, const PredictResult& r) {
  h5::write_file(path, "trainscale-predict/1", [&](h5::File& file) {
    file.set_attrs({{"config", r.config_yaml}, {"config_id", r.config_id}, {"cluster", r.cluster_yaml},
                    {"cluster_name", r.cluster_name}, {"cluster_path", r.cluster_path}, {"model", r.model},
                    {"precision", r.precision}, {"version", r.version}, {"git_sha", r.git_sha},
                    {"created", r.created}, {"gemm_only", r.gemm_only}});
    h5::Group top = file.create_group("predict");
    top.set_attrs({{"allreduce", join(r.allreduce, "\n")}, {"compression", r.compression},
                   {"shares", join(r.shares, "\n")}});
    top.write_series({{"workers", r.workers, "workers"}, {"nodes", r.nodes, "nodes"},
                      {"ranks_per_node", r.ranks_per_node, "ranks"}, {"batch_per_worker", r.batch, "samples"},
                      {"step_time", r.step_time, "seconds"}, {"compute", r.compute, "seconds"},
                      {"comm", r.comm, "seconds"}, {"exposed_comm", r.exposed_comm, "seconds"},
                      {"contention", r.contention, "seconds"}, {"straggle", r.straggle, "seconds"},
                      {"data", r.data, "seconds"}, {"forward", r.forward, "seconds"},
                      {"backward", r.backward, "seconds"}, {"update", r.update, "seconds"},
                      {"compress", r.compress, "seconds"}, {"decompress", r.decompress, "seconds"},
                      {"wire_bytes", r.wire_bytes, "bytes"}, {"throughput", r.throughput, "samples/s"},
                      {"scaling_efficiency", r.scaling_efficiency, "fraction"}});
    write_layer_table(top, r);
    write_per_layer(top, r);
  });
}

}  // namespace ts
