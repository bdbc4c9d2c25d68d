// Sweep expansion and the campaign directory (see expand.h).
#include "sweep/expand.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

#include "core/error.h"
#include "config/config_id.h"
#include "config/run_config.h"
#include "config/schema.h"
#include "core/file_io.h"
#include "core/names.h"
#include "core/strings.h"
#include "core/timer.h"

namespace ts {
namespace {

namespace fs = std::filesystem;


// Text compared by exclusion: numbers and booleans in one spelling ("0.020" == "0.02",
// "32" == "32.0", "yes" == "true"), everything else as written.
std::string canonical_value(const std::string& t) {
  if (t == "true" || t == "True" || t == "yes" || t == "on") return "true";
  if (t == "false" || t == "False" || t == "no" || t == "off") return "false";
  double v = 0;
  auto res = std::from_chars(t.data(), t.data() + t.size(), v);
  if (!t.empty() && res.ec == std::errc() && res.ptr == t.data() + t.size()) {
    char buf[64];
    auto out = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, out.ptr);
  }
  return t;
}

std::string describe(const SweepAssignments& point) {
  std::string s = "{";
  for (size_t i = 0; i < point.size(); ++i) s += (i ? ", " : "") + point[i].first + ": " + one_line(point[i].second);
  return s + "}";
}

struct Point {
  SweepAssignments values;
  std::string label;  // "matrix point 3" or "include[0] (sweep.yaml:20)"
};

// Cartesian product of the dimensions, first dimension slowest, last fastest; a sweep without
// dimensions is one point (the base).
std::vector<Point> matrix_points(const SweepFile& sweep) {
  std::vector<Point> points;
  std::vector<size_t> step(sweep.dimensions.size(), 0);
  for (int64_t n = 0;; ++n) {
    Point p;
    p.label = "matrix point " + std::to_string(n);
    for (size_t d = 0; d < sweep.dimensions.size(); ++d) {
      const SweepDimension& dim = sweep.dimensions[d];
      for (size_t k = 0; k < dim.keys.size(); ++k) p.values.emplace_back(dim.keys[k], dim.values[step[d]][k]);
    }
    points.push_back(std::move(p));
    size_t d = sweep.dimensions.size();
    while (d > 0 && ++step[d - 1] == sweep.dimensions[d - 1].values.size()) step[--d] = 0;
    if (d == 0) return points;
  }
}

std::string flat_value(const ResolvedConfig& cfg, const std::string& key, const std::string& fallback) {
  const auto it = cfg.flat.find(key);
  return it != cfg.flat.end() ? it->second : fallback;
}

// Exclusion: an entry removes a point when every one of its keys matches the point's value
// (the point's own assignment, else the base config's resolved value); then the includes.
std::vector<Point> kept_points(const SweepFile& sweep, const ResolvedConfig& base, std::vector<Point> points) {
  auto value_of = [&](const Point& p, const std::string& key) {
    for (const auto& kv : p.values)
      if (kv.first == key) return kv.second;
    return flat_value(base, key, "");
  };
  std::vector<Point> kept;
  std::vector<bool> matched(sweep.exclude.size(), false);
  for (auto& p : points) {
    bool excluded = false;
    for (size_t i = 0; i < sweep.exclude.size(); ++i) {
      bool all = true;
      for (const auto& kv : sweep.exclude[i].values)
        all = all && canonical_value(value_of(p, kv.first)) == canonical_value(kv.second);
      matched[i] = matched[i] || all;
      excluded = excluded || all;
    }
    if (!excluded) kept.push_back(std::move(p));
  }
  for (size_t i = 0; i < sweep.exclude.size(); ++i)
    if (!matched[i])
      throw ConfigError(sweep.exclude[i].where + ": exclude[" + std::to_string(i) + "] " + describe(sweep.exclude[i].values) +
                        " matches none of the " + std::to_string(points.size()) +
                        " points of the matrix (a typo in a value, or a value no dimension takes?); fix or remove it");
  if (kept.empty() && sweep.include.empty())
    throw ConfigError(sweep.path + ": `exclude` removes all " + std::to_string(points.size()) +
                      " points of the matrix; loosen the exclude entries or add `include` points");
  for (size_t i = 0; i < sweep.include.size(); ++i)
    kept.push_back({sweep.include[i].values, "include[" + std::to_string(i) + "] (" + sweep.include[i].where + ")"});
  return kept;
}

// What later passes need of the resolved config (ExpandedRun's facts).
void keep_facts(const ResolvedConfig& cfg, ExpandedRun& run) {
  run.gpu = flat_value(cfg, "gpu", "none");
  run.mpi_flavor = flat_value(cfg, "mpi_flavor", "any");
  run.storage = flat_value(cfg, "dataset.storage", "local");
  for (BackendKind b : cfg.run.backends()) run.capability_key += std::string(backend_kind_name(b)) + ",";
  run.capability_key += flat_value(cfg, "precision", "") + "," + gpu_generation_name(cfg.run.gpu);
}

// The runs of one point: validated, de-duplicated by resolved config (`seen_ids`), repeated.
void expand_point(const SweepFile& sweep, const Point& p, std::set<std::string>& seen_ids, Expansion& ex) {
  std::vector<std::string> overrides;
  bool sets_seed = false;
  for (const auto& kv : p.values) {
    overrides.push_back(kv.first + "=" + kv.second);
    sets_seed = sets_seed || kv.first == "seed";
  }
  ResolvedConfig cfg;
  try {
    cfg = parse_run_config(sweep.base_text, sweep.base_path, overrides);
  } catch (const ConfigError& e) {
    throw ConfigError(sweep.path + ": " + p.label + " " + describe(p.values) + " is not a valid run config: " + e.what());
  }
  const std::string config_id = config_id_of(cfg.yaml);
  if (!seen_ids.insert(config_id).second) return;  // same resolved config as an earlier point
  for (int k = 0; k < sweep.repetitions; ++k) {
    ExpandedRun run;
    run.index = static_cast<int64_t>(ex.runs.size());
    run.config_id = config_id;
    run.repetition = k;
    run.run_id = config_id + "-r" + std::to_string(k);
    ResolvedConfig seeded = cfg;
    if (!sets_seed) {
      run.seed = derive_seed(config_id, k);
      std::vector<std::string> with_seed = overrides;
      with_seed.push_back("seed=" + std::to_string(run.seed));
      seeded = parse_run_config(sweep.base_text, sweep.base_path, with_seed);
    } else {
      run.seed = cfg.run.seed;
    }
    run.config_yaml = seeded.yaml;
    for (const auto& key : ex.swept_keys) run.swept[key] = flat_value(seeded, key, "");
    keep_facts(seeded, run);
    ex.runs.push_back(std::move(run));
  }
}

}  // namespace

uint64_t derive_seed(const std::string& config_id, int repetition) {
  return fnv1a64(config_id + "-r" + std::to_string(repetition)) & 0x7fffffffULL;
}

int64_t planned_run_count(const SweepFile& sweep) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto times = [&](int64_t a, int64_t b) { return b != 0 && a > kMax / b ? kMax : a * b; };
  int64_t points = 1;
  for (const auto& dim : sweep.dimensions) points = times(points, static_cast<int64_t>(dim.values.size()));
  const auto includes = static_cast<int64_t>(sweep.include.size());
  points = points > kMax - includes ? kMax : points + includes;
  return times(points, sweep.repetitions);
}

Expansion expand_sweep(const SweepFile& sweep, int64_t max_runs, ExpansionProgress* progress) {
  if (const int64_t planned = planned_run_count(sweep); planned > max_runs) {
    std::string product;
    for (const auto& dim : sweep.dimensions) product += (product.empty() ? "" : " x ") + std::to_string(dim.values.size());
    throw ConfigError(sweep.path + ": the sweep expands to " +
                      (planned == std::numeric_limits<int64_t>::max() ? std::string("more than 9e18")
                                                                       : "up to " + std::to_string(planned)) +
                      " runs ((" + (product.empty() ? std::string("1") : product) + " points + " +
                      std::to_string(sweep.include.size()) + " includes) x " + std::to_string(sweep.repetitions) +
                      " repetitions, before exclusion), more than --max-runs " + std::to_string(max_runs) +
                      "; split the sweep into smaller campaigns, or raise --max-runs if you mean it");
  }
  Expansion ex;
  ex.campaign = sweep.campaign;
  ex.sweep_path = sweep.path;
  ex.resources_yaml = sweep.resources_yaml;
  ResolvedConfig base;
  try {
    base = parse_run_config(sweep.base_text, sweep.base_path, {});
  } catch (const ConfigError& e) {
    throw ConfigError(sweep.path + ": base run config is invalid: " + e.what());
  }
  ex.base_seed = flat_value(base, "seed", find_key_spec("seed")->def);
  const std::vector<Point> kept = kept_points(sweep, base, matrix_points(sweep));
  // Swept keys: dimensions' keys, then keys only includes name.
  for (const auto& dim : sweep.dimensions)
    for (const auto& k : dim.keys) ex.swept_keys.push_back(k);
  for (const auto& e : sweep.include)
    for (const auto& kv : e.values)
      if (std::find(ex.swept_keys.begin(), ex.swept_keys.end(), kv.first) == ex.swept_keys.end())
        ex.swept_keys.push_back(kv.first);
  std::set<std::string> seen_ids;
  for (size_t i = 0; i < kept.size(); ++i) {
    expand_point(sweep, kept[i], seen_ids, ex);
    if (progress) progress->report("expanded", static_cast<int64_t>(i + 1), static_cast<int64_t>(kept.size()), "points");
  }
  return ex;
}

void check_expansion_against_site(const Expansion& ex, const Site& site) {
  for (const auto& run : ex.runs) {
    const std::string problem = site_check_run(site, run.gpu, run.mpi_flavor, run.storage);
    if (problem.empty()) continue;
    std::string point = "{";
    for (const auto& key : ex.swept_keys) point += (point.size() > 1 ? ", " : "") + key + ": " + run.swept.at(key);
    throw ConfigError(ex.sweep_path + ": run " + std::to_string(run.index) + " (" + run.run_id + ") " + point + "}: " + problem);
  }
}

ExpansionProgress::ExpansionProgress(std::ostream* out, double every_seconds)
    : out_(out), every_seconds_(every_seconds), start_(now_seconds()), last_(start_) {}

void ExpansionProgress::report(const char* what, int64_t done, int64_t total, const char* items) {
  if (out_ == nullptr) return;
  const double now = now_seconds();
  if (now - last_ < every_seconds_ && done != total) return;
  if (done == total && last_ == start_ && now - start_ < every_seconds_) return;  // a short phase: no line
  last_ = now;
  *out_ << "sweep expand: " << what << " " << done << " of " << total << " " << items << " ("
        << (total > 0 ? 100 * done / total : 100) << "%), " << std::lround(now - start_) << " s so far" << std::endl;
}

std::string manifest_yaml(const Expansion& ex, const std::string& created_by, ExpansionProgress* progress) {
  YAML::Emitter em;
  em << YAML::BeginMap;
  em << YAML::Key << "campaign" << YAML::Value << YAML::DoubleQuoted << ex.campaign;
  em << YAML::Key << "sweep_file" << YAML::Value << YAML::DoubleQuoted << ex.sweep_path;
  em << YAML::Key << "created_by" << YAML::Value << YAML::DoubleQuoted << created_by;
  em << YAML::Key << "resources" << YAML::Value;
  emit_yaml_node(em, YAML::Load(ex.resources_yaml));
  // The seed config_id is computed with where a run's seed is derived (load_campaign checks ids).
  if (!ex.base_seed.empty()) em << YAML::Key << "base_seed" << YAML::Value << ex.base_seed;
  em << YAML::Key << "runs" << YAML::Value << YAML::BeginSeq;
  for (const auto& run : ex.runs) {
    em << YAML::BeginMap;
    em << YAML::Key << "index" << YAML::Value << run.index;
    em << YAML::Key << "run_id" << YAML::Value << YAML::DoubleQuoted << run.run_id;
    em << YAML::Key << "config_id" << YAML::Value << YAML::DoubleQuoted << run.config_id;
    em << YAML::Key << "repetition" << YAML::Value << run.repetition;
    em << YAML::Key << "config" << YAML::Value;
    emit_yaml_node(em, YAML::Load(run.config_yaml));
    em << YAML::EndMap;
    if (progress)
      progress->report("wrote", run.index + 1, static_cast<int64_t>(ex.runs.size()), "runs into the manifest");
  }
  em << YAML::EndSeq << YAML::EndMap;
  if (!em.good()) throw RuntimeError("manifest: YAML emitter failed: " + em.GetLastError());
  return std::string(em.c_str()) + "\n";
}

std::string manifest_hash(const std::string& manifest_text) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(manifest_text)));
  return std::string("fnv1a64:") + buf;
}

void write_campaign(const std::string& out_dir, const std::string& manifest_text, const std::string& sweep_path,
                    const std::string& site_path) {
  const fs::path dir(out_dir);
  const fs::path manifest = dir / "manifest.yaml";
  if (!site_path.empty() && !fs::is_regular_file(site_path))
    throw ConfigError(site_path + ": cannot open the site file; check the path given to --site");
  if (fs::exists(manifest)) {
    if (read_text_file(manifest.string()) != manifest_text)
      throw ConfigError(manifest.string() + ": a different campaign is already frozen here; use a new --out directory or delete " +
                        out_dir + " first");
  }
  std::error_code ec;
  fs::create_directories(dir / "runs", ec);
  if (ec) throw RuntimeError(out_dir + ": cannot create the campaign directory: " + ec.message());
  write_file_atomically((dir / "sweep.yaml").string(), read_text_file(sweep_path));
  if (!site_path.empty()) write_file_atomically((dir / "site.yaml").string(), read_text_file(site_path));
  write_file_atomically((dir / "manifest.hash").string(), manifest_hash(manifest_text) + "\n");
  // Last: its presence means the campaign is complete.
  write_file_atomically(manifest.string(), manifest_text);
}

std::string dry_run_table(const Expansion& ex) {
  std::vector<std::string> header = {"index", "run_id"};
  for (const auto& k : ex.swept_keys) header.push_back(k);
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, int64_t> shapes;
  for (const auto& run : ex.runs) {
    std::vector<std::string> row = {std::to_string(run.index), run.run_id};
    for (const auto& k : ex.swept_keys) row.push_back(run.swept.at(k));
    rows.push_back(std::move(row));
    const YAML::Node c = YAML::Load(run.config_yaml);
    shapes["workers=" + c["workers"].Scalar() + " gpu=" + c["gpu"].Scalar() + " mpi_flavor=" + c["mpi_flavor"].Scalar()]++;
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) s += cells[c] + std::string(width[c] - cells[c].size() + 2, ' ');
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line(header);
  for (const auto& r : rows) line(r);
  out << "campaign " << ex.campaign << ": " << ex.runs.size() << " runs\n";
  for (const auto& [shape, n] : shapes) out << "  " << shape << ": " << n << " runs\n";
  return out.str();
}

}  // namespace ts
