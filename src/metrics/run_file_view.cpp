// Reading a run file back whole (see run_file_view.h).
#include "metrics/run_file_view.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/strings.h"
#include "metrics/hdf5_reader.h"

namespace ts {
namespace {

using Kind = h5::ReadFile::AttributeKind;

std::string attribute_text(const h5::ReadFile& f, const std::string& object, const std::string& name) {
  switch (f.attribute_kind(object, name)) {
    case Kind::string: return f.string_attr(object, name);
    case Kind::integer: return std::to_string(f.int_attr(object, name));
    case Kind::real: return shortest_number_text(f.real_attr(object, name));
    case Kind::other: break;
  }
  return "";  // an array or compound attribute: not one of the schema's, left out
}

void read_summary(const h5::ReadFile& f, RunFileView& v) {
  if (!f.exists("/summary")) return;
  for (const std::string& name : f.attribute_names("/summary")) {
    const Kind kind = f.attribute_kind("/summary", name);
    if (kind == Kind::real) v.summary[name] = f.real_attr("/summary", name);
    else if (kind == Kind::integer) v.summary[name] = static_cast<double>(f.int_attr("/summary", name));
    else if (kind == Kind::string) v.summary_text[name] = f.string_attr("/summary", name);
  }
}

// A [S, R] phase of /timing, checked against the file's step count and world size.
std::vector<float> read_phase(const h5::ReadFile& f, const std::string& phase, int64_t steps, int64_t ranks) {
  h5::Array<float> a = f.read<float>("/timing/" + phase);
  const bool shaped = a.dims.size() == 2 ? a.dims[0] == steps && a.dims[1] == ranks : steps == 0 && a.values.empty();
  if (!shaped)
    throw RuntimeError("run file " + f.path() + ": /timing/" + phase + " is not steps x ranks (" +
                       std::to_string(steps) + " x " + std::to_string(ranks) + ")");
  return std::move(a.values);
}

// /bucket_timing: step [N], start and end [N, R, B], checked against the world size.
void read_bucket_timing(const h5::ReadFile& f, RunFileView& v) {
  if (!f.exists("/bucket_timing")) return;
  v.bucket_step = f.read<int64_t>("/bucket_timing/step").values;
  h5::Array<float> start = f.read<float>("/bucket_timing/start"), end = f.read<float>("/bucket_timing/end");
  const int64_t N = static_cast<int64_t>(v.bucket_step.size());
  if (start.dims.size() != 3 || start.dims[0] != N || start.dims[1] != v.ranks || end.dims != start.dims)
    throw RuntimeError("run file " + f.path() + ": /bucket_timing/start and end are not recorded steps x ranks x " +
                       "buckets (" + std::to_string(N) + " x " + std::to_string(v.ranks) + " x B)");
  v.bucket_count = start.dims[2];
  v.bucket_start = std::move(start.values);
  v.bucket_end = std::move(end.values);
}

void read_series(const h5::ReadFile& f, RunFileView& v) {
  f.read_series("/train", {{"step", v.step}, {"samples", v.samples}, {"epoch", v.epoch}, {"time", v.time},
                           {"loss", v.loss}, {"lr", v.lr}});
  v.steps = static_cast<int64_t>(v.step.size());
  if (f.exists("/train/wall_time")) v.wall_time = f.read<double>("/train/wall_time").values;
  if (f.exists("/timing"))
    for (const std::string& phase : f.members("/timing")) v.timing[phase] = read_phase(f, phase, v.steps, v.ranks);
  read_bucket_timing(f, v);
  if (f.exists("/eval")) {
    f.read_series("/eval", {{"step", v.eval_step}, {"epoch", v.eval_epoch}, {"time", v.eval_time},
                            {"loss", v.eval_loss}, {"accuracy", v.eval_accuracy}});
    if (f.exists("/eval/wall_time"))
      f.read_series("/eval", {{"wall_time", v.eval_wall_time}, {"seconds", v.eval_seconds}});
  }
  if (f.exists("/checkpoints/step"))
    f.read_series("/checkpoints", {{"step", v.checkpoint_step}, {"wall_time", v.checkpoint_wall_time},
                                   {"seconds", v.checkpoint_seconds}, {"bytes", v.checkpoint_bytes}});
  if (f.exists("/utilisation/au"))
    f.read_series("/utilisation", {{"au", v.au}, {"data_wait_share", v.data_wait_share}});
}

}  // namespace

std::string RunFileView::attribute(const std::string& name) const {
  const auto it = attributes.find(name);
  return it == attributes.end() ? "" : it->second;
}

double RunFileView::attribute_number(const std::string& name) const {
  const auto it = attributes.find(name);
  if (it == attributes.end() || !numeric_attributes.count(name)) return std::numeric_limits<double>::quiet_NaN();
  return std::stod(it->second);
}

std::string RunFileView::config_value(const std::string& key, const std::string& fallback) const {
  const auto it = config.find(key);
  return it == config.end() ? fallback : it->second;
}

double RunFileView::summary_value(const std::string& name) const {
  const auto it = summary.find(name);
  return it == summary.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

std::vector<std::string> RunFileView::phases() const {
  static const std::vector<std::string> order = {"data_wait", "forward", "backward", "comm", "comm_wait", "optimizer",
                                                 "step", "gather", "average", "broadcast", "compress", "decompress"};
  std::vector<std::string> out;
  for (const std::string& p : order)
    if (timing.count(p)) out.push_back(p);
  for (const auto& [p, values] : timing)
    if (std::find(order.begin(), order.end(), p) == order.end()) out.push_back(p);
  return out;
}

RunFileView read_run_file_view(const std::string& path) {
  const h5::ReadFile f = h5::ReadFile::open(path);
  RunFileView v;
  v.path = path;
  for (const std::string& name : f.attribute_names("/")) {
    v.attributes[name] = attribute_text(f, "/", name);
    const Kind kind = f.attribute_kind("/", name);
    if (kind == Kind::integer || kind == Kind::real) v.numeric_attributes.insert(name);
  }
  if (v.attribute("schema").rfind("trainscale-run/", 0) != 0)
    throw RuntimeError("run file " + path + ": not a trainscale run file (root attribute 'schema' is '" +
                       v.attribute("schema") + "', expected trainscale-run/1)");
  if (f.exists("/config"))
    for (const std::string& key : f.attribute_names("/config")) v.config[key] = attribute_text(f, "/config", key);
  v.ranks = f.int_attr("/", "world_size");
  if (v.ranks < 1) throw RuntimeError("run file " + path + ": world_size " + std::to_string(v.ranks) + " < 1");
  v.rank_hosts = split(v.attribute("rank_hosts"), ',');
  v.local_ranks = split(v.attribute("local_ranks"), ',');
  if (static_cast<int64_t>(v.rank_hosts.size()) != v.ranks) v.rank_hosts.clear();
  if (static_cast<int64_t>(v.local_ranks.size()) != v.ranks) v.local_ranks.clear();
  read_summary(f, v);
  read_series(f, v);
  if (f.exists("/model")) {
    v.model_name = f.string_attr("/model", "name");
    v.model_parameters = f.int_attr("/model", "parameters");
    v.model_flops_per_sample = f.int_attr("/model", "flops_per_sample");
  }
  return v;
}

}  // namespace ts
