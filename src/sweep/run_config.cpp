// Run-config schema, parsing, validation and resolution (see run_config.h).
#include "sweep/run_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"

namespace ts {
namespace {

enum class Type { integer, number, boolean, string };

// One accepted leaf key. `def` empty means "unset unless given" (mutually exclusive groups).
struct KeySpec {
  std::string key;
  Type type;
  std::string def;
  std::vector<std::string> accepted;  // for enumerations; empty = free text / numeric
  std::string help;
};

const std::vector<KeySpec>& schema() {
  static const std::vector<KeySpec> specs = {
      {"model", Type::string, "lenet",
       {"lenet", "mlp", "neuron", "alexnet_cifar", "resnet20", "resnet50", "vgg16", "alexnet",
        "mobilenet_v2", "inception_v3"},
       "network to train"},
      {"dataset.name", Type::string, "fashion_mnist",
       {"fashion_mnist", "mnist", "cifar10", "synthetic", "neuron"}, "data set"},
      {"dataset.format", Type::string, "idx",
       {"idx", "cifar_bin", "synthetic", "hdf5", "records", "jpeg_dir"}, "on-disk format"},
      {"dataset.root", Type::string, "/usr/share/datasets/fashion-mnist", {}, "data directory"},
      {"dataset.storage", Type::string, "local", {}, "storage name (sites map it to a path)"},
      {"dataset.synthetic_samples", Type::integer, "8192", {}, "samples of synthetic data"},
      {"dataset.loader_threads", Type::integer, "1", {}, "loader worker threads per rank"},
      {"dataset.prefetch", Type::integer, "2", {}, "batches prepared ahead"},
      {"dataset.shuffle", Type::boolean, "true", {}, "reshuffle every epoch"},
      {"batch_per_worker", Type::integer, "", {}, "minibatch per worker (or global_batch)"},
      {"global_batch", Type::integer, "", {}, "minibatch over all workers (or batch_per_worker)"},
      {"lr", Type::number, "0.05", {}, "learning rate"},
      {"lr_schedule.kind", Type::string, "constant", {"constant", "step", "cosine"}, "LR schedule"},
      {"lr_schedule.warmup_epochs", Type::number, "0", {}, "linear warm-up length"},
      {"lr_schedule.step_epochs", Type::number, "1", {}, "step: decay period in epochs"},
      {"lr_schedule.gamma", Type::number, "0.1", {}, "step: decay factor"},
      {"lr_schedule.final_lr_fraction", Type::number, "0", {}, "cosine: final lr / lr"},
      {"lr_schedule.scale", Type::string, "none", {"none", "linear"}, "LR scaling with batch"},
      {"lr_schedule.base_batch", Type::integer, "0", {}, "batch that lr is tuned for"},
      {"momentum", Type::number, "0.9", {}, "SGD momentum"},
      {"nesterov", Type::boolean, "false", {}, "Nesterov momentum"},
      {"weight_decay", Type::number, "0", {}, "L2 weight decay"},
      {"dropout", Type::number, "0", {}, "dropout probability before the last layer"},
      {"epochs", Type::number, "", {}, "training length in epochs (or steps / train_samples)"},
      {"steps", Type::integer, "", {}, "training length in steps"},
      {"train_samples", Type::integer, "", {}, "training length in samples (all workers)"},
      {"precision", Type::string, "fp32", {"fp32", "bf16", "fp16", "tf32"}, "compute precision"},
      {"backend", Type::string, "cpu", {"ref", "cpu", "cuda"}, "compute backend"},
      {"threads", Type::integer, "2", {}, "compute threads per worker"},
      {"workers", Type::integer, "1", {}, "expected MPI world size"},
      {"dist.strategy", Type::string, "sync", {"sync", "weight_avg"}, "gradient exchange"},
      {"dist.allreduce", Type::string, "ring", {"mpi", "ring", "tree", "ps", "shm", "nccl"},
       "all-reduce algorithm"},
      {"dist.bucket_mb", Type::number, "25", {}, "gradient bucket size in MiB"},
      {"dist.overlap", Type::boolean, "true", {}, "overlap all-reduce with backward"},
      {"dist.period", Type::integer, "1", {}, "weight_avg: steps between averages"},
      {"dist.update", Type::string, "replicated", {"replicated", "sharded"},
       "sync: every rank updates all weights, or each its share (shm, one node)"},
      {"gpu", Type::string, "none", {}, "expected GPU generation (none | v100 | a100 | h100 ...)"},
      {"mpi_flavor", Type::string, "any", {"any", "openmpi", "mpich"}, "expected MPI library"},
      {"eval.every_epochs", Type::number, "1", {}, "evaluation period in epochs (0 = never)"},
      {"eval.target_accuracy", Type::number, "0.9", {}, "accuracy for time_to_target"},
      {"eval.batch", Type::integer, "1000", {}, "evaluation minibatch"},
      {"seed", Type::integer, "1", {}, "random seed"},
      {"log_every", Type::integer, "20", {}, "progress line period in steps"},
  };
  return specs;
}

const KeySpec* find_spec(const std::string& key) {
  for (const auto& s : schema())
    if (s.key == key) return &s;
  return nullptr;
}

bool is_group(const std::string& prefix) {
  for (const auto& s : schema())
    if (s.key.rfind(prefix + ".", 0) == 0) return true;
  return false;
}

std::string join(const std::vector<std::string>& v, const std::string& sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::integer: return "an integer";
    case Type::number: return "a number";
    case Type::boolean: return "true or false";
    case Type::string: return "a string";
  }
  return "?";
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Shortest text that parses back to the same double ("0.05", "1e-05", "2").
std::string format_number(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// A value as given, with where it came from.
struct RawValue {
  std::string text;
  std::string where;  // "file:line" or "--set k=v"
};

struct Parser {
  std::string origin;
  std::map<std::string, RawValue> values;

  [[noreturn]] void fail(const std::string& where, const std::string& msg) {
    throw ConfigError(where + ": " + msg);
  }

  std::string unknown_key_message(const std::string& key, const std::string& scope) {
    std::vector<std::string> keys = run_config_keys();
    std::string msg = "unknown key '" + key + "'";
    std::string best = closest_key(key, keys);
    if (!best.empty()) msg += "; did you mean '" + best + "'?";
    std::vector<std::string> here;
    for (const auto& k : keys) {
      std::string rest = scope.empty() ? k : (k.rfind(scope + ".", 0) == 0 ? k.substr(scope.size() + 1) : "");
      if (rest.empty()) continue;
      std::string first = rest.substr(0, rest.find('.'));
      if (std::find(here.begin(), here.end(), first) == here.end()) here.push_back(first);
    }
    msg += " Accepted keys" + (scope.empty() ? std::string() : " under '" + scope + "'") + ": " +
           join(here) + ". See docs/config.md.";
    return msg;
  }

  void walk(const YAML::Node& node, const std::string& prefix) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      std::string name = it->first.as<std::string>();
      std::string key = prefix.empty() ? name : prefix + "." + name;
      std::string where = origin + ":" + std::to_string(it->first.Mark().line + 1);
      const YAML::Node& value = it->second;
      if (is_group(key)) {
        if (!value.IsMap())
          fail(where, "key '" + key + "' must be a mapping of sub-keys, e.g. " + key + ": {...}");
        walk(value, key);
      } else if (find_spec(key)) {
        if (value.IsNull()) fail(where, "key '" + key + "' has no value; it must be " +
                                            type_name(find_spec(key)->type));
        if (!value.IsScalar())
          fail(where, "key '" + key + "' must be " + type_name(find_spec(key)->type) +
                          ", not a list or mapping");
        values[key] = {value.Scalar(), where};
      } else {
        fail(where, unknown_key_message(key, prefix));
      }
    }
  }

  void apply_override(const std::string& assignment) {
    std::string where = "--set " + assignment;
    auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
      fail(where, "expected key=value with a dotted key, e.g. --set dist.allreduce=tree");
    std::string key = assignment.substr(0, eq);
    std::string text = assignment.substr(eq + 1);
    if (!find_spec(key)) {
      if (is_group(key)) fail(where, "'" + key + "' is a group; set one of its keys, e.g. " + key + ".<key>=...");
      fail(where, unknown_key_message(key, ""));
    }
    values[key] = {text, where};
  }
};

bool parse_bool(const std::string& t, bool& out) {
  if (t == "true" || t == "True" || t == "yes" || t == "on") return out = true, true;
  if (t == "false" || t == "False" || t == "no" || t == "off") return out = false, true;
  return false;
}

bool parse_int(const std::string& t, int64_t& out) {
  auto res = std::from_chars(t.data(), t.data() + t.size(), out);
  return res.ec == std::errc() && res.ptr == t.data() + t.size();
}

bool parse_double(const std::string& t, double& out) {
  if (t.empty()) return false;
  auto res = std::from_chars(t.data(), t.data() + t.size(), out);
  return res.ec == std::errc() && res.ptr == t.data() + t.size() && std::isfinite(out);
}

}  // namespace

std::vector<std::string> run_config_keys() {
  std::vector<std::string> keys;
  for (const auto& s : schema()) keys.push_back(s.key);
  return keys;
}

std::string closest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::string::npos;
  std::string leaf = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
  for (const auto& c : candidates) {
    size_t d = std::min(edit_distance(key, c), edit_distance(leaf, c.substr(c.rfind('.') == std::string::npos ? 0 : c.rfind('.') + 1)) + 1);
    if (d < best_d) best_d = d, best = c;
  }
  // Only suggest when the typo is plausibly one (about a third of the word at most).
  if (best_d == std::string::npos || best_d > std::max<size_t>(2, key.size() / 3)) return "";
  return best;
}

std::string ResolvedConfig::locate(const std::string& key) const {
  auto it = where.find(key);
  std::string w = it != where.end() ? it->second : origin + " (default)";
  return w + ": key '" + key + "'";
}

ResolvedConfig parse_run_config(const std::string& yaml_text, const std::string& origin,
                                const std::vector<std::string>& overrides) {
  Parser parser{origin, {}};
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (root.IsDefined() && !root.IsNull()) {
    if (!root.IsMap()) throw ConfigError(origin + ": a run config must be a YAML mapping of keys (see docs/config.md)");
    parser.walk(root, "");
  }
  for (const auto& o : overrides) parser.apply_override(o);

  ResolvedConfig out;
  out.origin = origin;
  std::map<std::string, std::string> text;  // canonical text per key that is set
  for (const auto& spec : schema()) {
    auto it = parser.values.find(spec.key);
    if (it == parser.values.end()) {
      if (!spec.def.empty()) text[spec.key] = spec.def;
      continue;
    }
    const RawValue& raw = it->second;
    out.where[spec.key] = raw.where;
    auto bad = [&](const std::string& what) {
      throw ConfigError(raw.where + ": key '" + spec.key + "': " + what);
    };
    switch (spec.type) {
      case Type::integer: {
        int64_t v;
        if (!parse_int(raw.text, v)) bad("'" + raw.text + "' is not an integer; expected " + type_name(spec.type));
        text[spec.key] = std::to_string(v);
        break;
      }
      case Type::number: {
        double v;
        if (!parse_double(raw.text, v)) bad("'" + raw.text + "' is not a finite number");
        text[spec.key] = format_number(v);
        break;
      }
      case Type::boolean: {
        bool v;
        if (!parse_bool(raw.text, v)) bad("'" + raw.text + "' is not true or false");
        text[spec.key] = v ? "true" : "false";
        break;
      }
      case Type::string: {
        if (!spec.accepted.empty() &&
            std::find(spec.accepted.begin(), spec.accepted.end(), raw.text) == spec.accepted.end()) {
          std::string msg = "'" + raw.text + "' is not accepted; accepted: " + join(spec.accepted, " | ");
          std::string best = closest_key(raw.text, spec.accepted);
          if (!best.empty()) msg += " (did you mean '" + best + "'?)";
          bad(msg);
        }
        if (raw.text.empty()) bad("must not be empty");
        text[spec.key] = raw.text;
        break;
      }
    }
  }

  auto has = [&](const std::string& k) { return text.count(k) > 0; };
  auto i64 = [&](const std::string& k) { int64_t v = 0; parse_int(text.at(k), v); return v; };
  auto f64 = [&](const std::string& k) { double v = 0; parse_double(text.at(k), v); return v; };
  auto boolean = [&](const std::string& k) { return text.at(k) == "true"; };
  auto where = [&](const std::string& k) { return out.locate(k); };

  // Mutually exclusive groups: exactly one of each.
  auto exactly_one = [&](const std::vector<std::string>& keys, const std::string& def_key,
                         const std::string& def_value) {
    std::vector<std::string> set;
    for (const auto& k : keys)
      if (has(k)) set.push_back(k);
    if (set.size() > 1)
      throw ConfigError(out.locate(set[1]) + ": conflicts with '" + set[0] + "'; give exactly one of " + join(keys));
    if (set.empty()) text[def_key] = def_value;  // documented default
  };
  exactly_one({"batch_per_worker", "global_batch"}, "batch_per_worker", "64");
  exactly_one({"epochs", "steps", "train_samples"}, "epochs", "1");

  RunConfig& r = out.run;
  r.model = text["model"];
  r.dataset.name = text["dataset.name"];
  r.dataset.format = text["dataset.format"];
  r.dataset.root = text["dataset.root"];
  r.dataset.storage = text["dataset.storage"];
  r.dataset.synthetic_samples = i64("dataset.synthetic_samples");
  r.dataset.loader_threads = static_cast<int>(i64("dataset.loader_threads"));
  r.dataset.prefetch = static_cast<int>(i64("dataset.prefetch"));
  r.dataset.shuffle = boolean("dataset.shuffle");
  if (has("batch_per_worker")) r.batch_per_worker = i64("batch_per_worker");
  if (has("global_batch")) r.global_batch = i64("global_batch");
  r.lr = f64("lr");
  r.lr_schedule.kind = text["lr_schedule.kind"];
  r.lr_schedule.warmup_epochs = f64("lr_schedule.warmup_epochs");
  r.lr_schedule.step_epochs = f64("lr_schedule.step_epochs");
  r.lr_schedule.gamma = f64("lr_schedule.gamma");
  r.lr_schedule.final_lr_fraction = f64("lr_schedule.final_lr_fraction");
  r.lr_schedule.scale = text["lr_schedule.scale"];
  r.lr_schedule.base_batch = i64("lr_schedule.base_batch");
  r.momentum = f64("momentum");
  r.nesterov = boolean("nesterov");
  r.weight_decay = f64("weight_decay");
  r.dropout = f64("dropout");
  if (has("epochs")) r.epochs = f64("epochs");
  if (has("steps")) r.steps = i64("steps");
  if (has("train_samples")) r.train_samples = i64("train_samples");
  r.precision = text["precision"];
  r.backend = text["backend"];
  r.threads = static_cast<int>(i64("threads"));
  r.workers = static_cast<int>(i64("workers"));
  r.dist.strategy = text["dist.strategy"];
  r.dist.allreduce = text["dist.allreduce"];
  r.dist.bucket_mb = f64("dist.bucket_mb");
  r.dist.overlap = boolean("dist.overlap");
  r.dist.period = i64("dist.period");
  r.dist.update = text["dist.update"];
  r.gpu = text["gpu"];
  r.mpi_flavor = text["mpi_flavor"];
  r.eval.every_epochs = f64("eval.every_epochs");
  r.eval.target_accuracy = f64("eval.target_accuracy");
  r.eval.batch = i64("eval.batch");
  r.seed = static_cast<uint64_t>(i64("seed"));
  r.log_every = i64("log_every");

  // Value ranges.
  auto positive = [&](const std::string& k, double v) {
    if (has(k) && !(v > 0)) throw ConfigError(where(k) + ": must be > 0, got " + text[k]);
  };
  auto non_negative = [&](const std::string& k, double v) {
    if (!(v >= 0)) throw ConfigError(where(k) + ": must be >= 0, got " + text[k]);
  };
  positive("batch_per_worker", static_cast<double>(r.batch_per_worker));
  positive("global_batch", static_cast<double>(r.global_batch));
  positive("lr", r.lr);
  positive("epochs", r.epochs);
  positive("steps", static_cast<double>(r.steps));
  positive("train_samples", static_cast<double>(r.train_samples));
  positive("threads", r.threads);
  positive("workers", r.workers);
  positive("dataset.synthetic_samples", static_cast<double>(r.dataset.synthetic_samples));
  positive("dataset.loader_threads", r.dataset.loader_threads);
  positive("dataset.prefetch", r.dataset.prefetch);
  positive("dist.bucket_mb", r.dist.bucket_mb);
  positive("dist.period", static_cast<double>(r.dist.period));
  positive("eval.batch", static_cast<double>(r.eval.batch));
  positive("log_every", static_cast<double>(r.log_every));
  positive("lr_schedule.step_epochs", r.lr_schedule.step_epochs);
  positive("lr_schedule.gamma", r.lr_schedule.gamma);
  non_negative("momentum", r.momentum);
  non_negative("weight_decay", r.weight_decay);
  non_negative("lr_schedule.warmup_epochs", r.lr_schedule.warmup_epochs);
  non_negative("lr_schedule.final_lr_fraction", r.lr_schedule.final_lr_fraction);
  non_negative("lr_schedule.base_batch", static_cast<double>(r.lr_schedule.base_batch));
  non_negative("eval.every_epochs", r.eval.every_epochs);
  if (r.momentum >= 1) throw ConfigError(where("momentum") + ": must be in [0, 1), got " + text["momentum"]);
  if (r.dropout >= 1 || r.dropout < 0)
    throw ConfigError(where("dropout") + ": must be in [0, 1), got " + text["dropout"]);
  if (r.eval.target_accuracy < 0 || r.eval.target_accuracy > 1)
    throw ConfigError(where("eval.target_accuracy") + ": must be in [0, 1], got " + text["eval.target_accuracy"]);
  if (r.nesterov && r.momentum == 0)
    throw ConfigError(where("nesterov") + ": Nesterov momentum needs momentum > 0");
  if (r.dist.strategy != "weight_avg" && out.where.count("dist.period") && r.dist.period != 1)
    throw ConfigError(where("dist.period") + ": " + text["dist.period"] + " applies to dist.strategy weight_avg only (" +
                      r.dist.strategy + " exchanges gradients every step); remove it or set dist.strategy: weight_avg");
  if (r.dist.update == "sharded" && (r.dist.strategy != "sync" || r.dist.allreduce != "shm"))
    throw ConfigError(where("dist.update") + ": sharded needs dist.strategy: sync and dist.allreduce: shm (each rank "
                      "updates its share of the node's one copy of the weights inside shm's reduce-scatter); got " +
                      r.dist.strategy + " with " + r.dist.allreduce + "; set dist.update: replicated or use sync + shm");
  if (r.global_batch > 0 && r.global_batch % r.workers != 0)
    throw ConfigError(where("global_batch") + ": " + text["global_batch"] + " does not divide evenly over " +
                      std::to_string(r.workers) + " workers; use a multiple of workers or batch_per_worker");

  // Data set and format must agree.
  static const std::map<std::string, std::vector<std::string>> formats = {
      {"fashion_mnist", {"idx"}}, {"mnist", {"idx"}}, {"cifar10", {"cifar_bin"}},
      {"synthetic", {"synthetic"}}, {"neuron", {"synthetic"}}};
  const auto& ok = formats.at(r.dataset.name);
  if (std::find(ok.begin(), ok.end(), r.dataset.format) == ok.end()) {
    bool later = r.dataset.format == "hdf5" || r.dataset.format == "records" || r.dataset.format == "jpeg_dir";
    throw ConfigError(where("dataset.format") + ": format '" + r.dataset.format + "' " +
                      (later ? "is not implemented in this build" : "does not fit data set '" + r.dataset.name + "'") +
                      "; data set '" + r.dataset.name + "' accepts: " + join(ok));
  }

  // Canonical resolved YAML: nested mappings in schema order (stable text for hashing).
  YAML::Emitter em;
  em << YAML::BeginMap;
  std::vector<std::string> open_groups;
  for (const auto& spec : schema()) {
    if (!text.count(spec.key)) continue;
    std::vector<std::string> parts;
    std::stringstream ss(spec.key);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    std::vector<std::string> groups(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < groups.size() && common < open_groups.size() && groups[common] == open_groups[common]) ++common;
    while (open_groups.size() > common) em << YAML::EndMap, open_groups.pop_back();
    for (size_t g = common; g < groups.size(); ++g) em << YAML::Key << groups[g] << YAML::Value << YAML::BeginMap, open_groups.push_back(groups[g]);
    em << YAML::Key << parts.back() << YAML::Value;
    if (spec.type == Type::string) em << YAML::DoubleQuoted << text[spec.key];
    else em << text[spec.key];
  }
  while (!open_groups.empty()) em << YAML::EndMap, open_groups.pop_back();
  em << YAML::EndMap;
  out.yaml = std::string(em.c_str()) + "\n";
  out.flat = text;
  return out;
}

ResolvedConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open the run config file; check the path given to --config");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_run_config(ss.str(), path, overrides);
}

}  // namespace ts
