// Cluster files as text: cluster_yaml (what `calibrate --out` writes and `predict` records) and
// the `calibration:` section, read and written.
#include <yaml-cpp/yaml.h>


#include "config/strict_yaml.h"
#include "core/strings.h"
#include "perfmodel/cluster.h"

namespace ts::perf {

Calibration read_calibration(const YamlReader& reader, const YAML::Node& n);

namespace {

constexpr const char* kDoc = "docs/model.md \"Calibration\"";

// Numbers with 6 significant digits (plain enough to read, exact enough to re-read).
std::string num(double v) { return format_number("%.6g", v); }

PhaseEfficiency read_efficiency(const YamlReader& p, const YAML::Node& n, const std::string& section) {
  p.check_keys(n, section, {"fp", "bp"});
  PhaseEfficiency e;
  if (n["fp"]) e.fp = p.number(n["fp"], section + ".fp", 0, true);
  if (n["bp"]) e.bp = p.number(n["bp"], section + ".bp", 0, true);
  return e;
}

AllreduceFit read_fit(const YamlReader& p, const YAML::Node& n, const std::string& section) {
  p.check_keys(n, section, {"ranks", "latency_us", "slope_ns_per_byte", "alpha_us", "beta_ns_per_byte"});
  for (const char* k : {"ranks", "alpha_us", "beta_ns_per_byte"}) p.require(n, k, section, kDoc);
  AllreduceFit f;
  f.ranks = p.integer(n["ranks"], section + ".ranks", 2);
  if (n["latency_us"]) f.latency_s = p.number(n["latency_us"], section + ".latency_us", 0) * 1e-6;
  if (n["slope_ns_per_byte"]) f.s_per_byte = p.number(n["slope_ns_per_byte"], section + ".slope_ns_per_byte", 0) * 1e-9;
  f.alpha_s = p.number(n["alpha_us"], section + ".alpha_us", 0) * 1e-6;
  f.beta_s_per_byte = p.number(n["beta_ns_per_byte"], section + ".beta_ns_per_byte", 0) * 1e-9;
  return f;
}

void emit_efficiency(YAML::Emitter& out, const PhaseEfficiency& e) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "fp" << YAML::Value << num(e.fp) << YAML::Key << "bp"
      << YAML::Value << num(e.bp) << YAML::EndMap;
}

void emit_level(YAML::Emitter& out, const LinkLevel& level, bool named) {
  if (named) out << YAML::Key << "name" << YAML::Value << level.name;
  out << YAML::Key << "topology" << YAML::Value << topology_name(level.topology);
  if (!level.dims.empty()) out << YAML::Key << "dims" << YAML::Value << YAML::Flow << level.dims;
  out << YAML::Key << "alpha_us" << YAML::Value << num(level.alpha_us);
  out << YAML::Key << "bandwidth_gbps" << YAML::Value << num(level.bandwidth_gbps);
}

void emit_node(YAML::Emitter& out, const NodeSpec& node) {
  out << YAML::Key << "node" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cores" << YAML::Value << node.cores;
  out << YAML::Key << "gpus" << YAML::Value << node.gpus;
  out << YAML::Key << "memory_gb" << YAML::Value << num(node.memory_gb);
  out << YAML::Key << "peak_gflops" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& kv : node.peak_gflops) out << YAML::Key << kv.first << YAML::Value << num(kv.second);
  out << YAML::EndMap;
  out << YAML::Key << "memory_bandwidth_gbs" << YAML::Value << num(node.memory_bandwidth_gbs);
  if (node.gemm_blocking.known())
    out << YAML::Key << "gemm_blocking" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "mc"
        << YAML::Value << node.gemm_blocking.mc << YAML::Key << "nc" << YAML::Value << node.gemm_blocking.nc
        << YAML::Key << "kc" << YAML::Value << node.gemm_blocking.kc << YAML::EndMap;
  if (node.reduce_ns_per_byte > 0) out << YAML::Key << "reduce_ns_per_byte" << YAML::Value << num(node.reduce_ns_per_byte);
  out << YAML::EndMap;
}

void emit_interconnect(YAML::Emitter& out, const InterconnectSpec& net) {
  out << YAML::Key << "interconnect" << YAML::Value << YAML::BeginMap;
  if (net.levels.size() == 1 && net.levels[0].name == "network") {
    emit_level(out, net.levels[0], false);
  } else {
    out << YAML::Key << "levels" << YAML::Value << YAML::BeginSeq;
    for (const LinkLevel& level : net.levels) {
      out << YAML::Flow << YAML::BeginMap;
      emit_level(out, level, true);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
}

// kinds: {kind: {fp, bp}} and layers: {model: {layer: {fp, bp}}} of `n` (a calibration or one
// of its at_threads entries).
void read_efficiencies(const YamlReader& p, const YAML::Node& n, const std::string& section, LayerEfficiency& e) {
  if (const YAML::Node k = n["kinds"]) {
    if (!k.IsMap()) p.fail(k, section + ".kinds: expected a mapping of layer kinds to {fp, bp}");
    for (const auto& kv : k) {
      const std::string name = p.name(kv.first, section + ".kinds");
      e.kinds[name] = read_efficiency(p, kv.second, section + ".kinds." + name);
    }
  }
  if (const YAML::Node l = n["layers"]) {
    if (!l.IsMap()) p.fail(l, section + ".layers: expected a mapping of models to {layer: {fp, bp}}");
    for (const auto& model : l) {
      const std::string name = p.name(model.first, section + ".layers");
      if (!model.second.IsMap()) p.fail(model.second, section + ".layers." + name + ": expected a mapping of layers to {fp, bp}");
      for (const auto& layer : model.second) {
        const std::string layer_name = p.name(layer.first, section + ".layers." + name);
        e.layers[name][layer_name] = read_efficiency(p, layer.second, section + ".layers." + name + "." + layer_name);
      }
    }
  }
}

void emit_efficiencies(YAML::Emitter& out, const LayerEfficiency& set) {
  out << YAML::Key << "kinds" << YAML::Value << YAML::BeginMap;
  for (const auto& [kind, e] : set.kinds) {
    out << YAML::Key << kind << YAML::Value;
    emit_efficiency(out, e);
  }
  out << YAML::EndMap;
  out << YAML::Key << "layers" << YAML::Value << YAML::BeginMap;
  for (const auto& [model, by_layer] : set.layers) {
    out << YAML::Key << model << YAML::Value << YAML::BeginMap;
    for (const auto& [layer, e] : by_layer) {
      out << YAML::Key << layer << YAML::Value;
      emit_efficiency(out, e);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

// The parameter a codec's rate was measured at, by compressor: its key in the file, or "".
const char* codec_parameter_key(const std::string& kind) {
  return kind == "topk" ? "ratio" : kind == "powersgd" ? "rank" : "";
}

// compression: {kind: {encode_ns, decode_ns[, ratio | rank]}} (ns per bucket element).
void read_codec_rates(const YamlReader& p, const YAML::Node& n, std::map<std::string, CodecRate>& rates) {
  p.check_keys(n, "calibration.compression", {"fp16", "bf16", "qsgd", "topk", "powersgd"});  // the compressors
  for (const auto& kv : n) {
    const std::string kind = kv.first.Scalar();
    const std::string section = "calibration.compression." + kind;
    const std::string at = codec_parameter_key(kind);
    std::vector<std::string> keys = {"encode_ns", "decode_ns"};
    if (!at.empty()) keys.push_back(at);
    p.check_keys(kv.second, section, keys);
    for (const std::string& k : keys) p.require(kv.second, k, section, kDoc);
    CodecRate& r = rates[kind];
    r.encode_s_per_element = p.number(kv.second["encode_ns"], section + ".encode_ns", 0) * 1e-9;
    r.decode_s_per_element = p.number(kv.second["decode_ns"], section + ".decode_ns", 0) * 1e-9;
    if (!at.empty()) r.parameter = p.number(kv.second[at], section + "." + at, 0);
  }
}

void emit_codec_rates(YAML::Emitter& out, const std::map<std::string, CodecRate>& rates) {
  out << YAML::Key << "compression" << YAML::Value << YAML::BeginMap;
  for (const auto& [kind, r] : rates) {
    out << YAML::Key << kind << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "encode_ns" << YAML::Value << num(r.encode_s_per_element * 1e9);
    out << YAML::Key << "decode_ns" << YAML::Value << num(r.decode_s_per_element * 1e9);
    const std::string at = codec_parameter_key(kind);
    if (!at.empty()) out << YAML::Key << at << YAML::Value << num(r.parameter);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

Calibration read_calibration(const YamlReader& p, const YAML::Node& n) {
  p.check_keys(n, "calibration",
               {"machine", "date", "threads", "layer_batch", "compute_noise_cv", "allreduce", "kinds", "layers", "at_threads", "compression"});
  Calibration c;
  if (n["machine"]) c.machine = p.scalar(n["machine"], "calibration.machine");
  if (n["date"]) c.date = p.scalar(n["date"], "calibration.date");
  if (n["threads"]) c.threads = p.integer(n["threads"], "calibration.threads", 0);
  if (n["layer_batch"]) c.layer_batch = p.integer(n["layer_batch"], "calibration.layer_batch", 0);
  if (n["compute_noise_cv"]) c.compute_noise_cv = p.number(n["compute_noise_cv"], "calibration.compute_noise_cv", 0);
  if (const YAML::Node a = n["allreduce"]) {
    if (!a.IsMap()) p.fail(a, "calibration.allreduce: expected a mapping of algorithm names to fits");
    for (const auto& kv : a) {
      const std::string name = p.name(kv.first, "calibration.allreduce");
      c.allreduce[name] = read_fit(p, kv.second, "calibration.allreduce." + name);
    }
  }
  read_efficiencies(p, n, "calibration", c);
  if (const YAML::Node t = n["at_threads"]) {
    if (!t.IsMap()) p.fail(t, "calibration.at_threads: expected a mapping of thread counts to {kinds, layers}");
    for (const auto& kv : t) {
      const int64_t threads = p.integer(kv.first, "calibration.at_threads", 1);
      const std::string sec = "calibration.at_threads." + std::to_string(threads);
      p.check_keys(kv.second, sec, {"kinds", "layers"});
      read_efficiencies(p, kv.second, sec, c.at_threads[threads]);
    }
  }
  if (const YAML::Node z = n["compression"]) read_codec_rates(p, z, c.compression);
  return c;
}

namespace {

void emit_calibration(YAML::Emitter& out, const Calibration& c) {
  out << YAML::BeginMap;
  out << YAML::Key << "machine" << YAML::Value << c.machine;
  out << YAML::Key << "date" << YAML::Value << c.date;
  out << YAML::Key << "threads" << YAML::Value << c.threads;
  out << YAML::Key << "layer_batch" << YAML::Value << c.layer_batch;
  if (c.compute_noise_cv > 0) out << YAML::Key << "compute_noise_cv" << YAML::Value << num(c.compute_noise_cv);
  out << YAML::Key << "allreduce" << YAML::Value << YAML::BeginMap;
  for (const auto& [name, f] : c.allreduce) {
    out << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "ranks" << YAML::Value << f.ranks;
    out << YAML::Key << "latency_us" << YAML::Value << num(f.latency_s * 1e6);
    out << YAML::Key << "slope_ns_per_byte" << YAML::Value << num(f.s_per_byte * 1e9);
    out << YAML::Key << "alpha_us" << YAML::Value << num(f.alpha_s * 1e6);
    out << YAML::Key << "beta_ns_per_byte" << YAML::Value << num(f.beta_s_per_byte * 1e9);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  emit_efficiencies(out, c);
  if (!c.at_threads.empty()) {
    out << YAML::Key << "at_threads" << YAML::Value << YAML::BeginMap;
    for (const auto& [threads, e] : c.at_threads) {
      out << YAML::Key << threads << YAML::Value << YAML::BeginMap;
      emit_efficiencies(out, e);
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  if (!c.compression.empty()) emit_codec_rates(out, c.compression);
  out << YAML::EndMap;
}

}  // namespace

std::string cluster_yaml(const ClusterSpec& spec) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  out << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << spec.source;
  out << YAML::Key << "nodes" << YAML::Value << spec.nodes;
  emit_node(out, spec.node);
  emit_interconnect(out, spec.interconnect);
  out << YAML::Key << "mpi" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "allreduce" << YAML::Value
      << spec.mpi.allreduce << YAML::EndMap;
  if (!spec.calibration.empty()) {
    out << YAML::Key << "calibration" << YAML::Value;
    emit_calibration(out, spec.calibration);
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace ts::perf
