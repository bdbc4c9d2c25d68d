// perfmodel-internal: checked reading of the YAML of cluster files (cluster.cpp and the
// calibration section, calibration_yaml.cpp). Every failure is a ConfigError "file:line: ...".
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strings.h"
#include "perfmodel/cluster.h"

namespace ts::perf {

struct YamlReader {
  std::string path;

  std::string at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    return m.is_null() ? path : path + ":" + std::to_string(m.line + 1);
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const { throw ConfigError(at(n) + ": " + msg); }

  std::string scalar(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) fail(n, "key '" + key + "': expected a single value (a scalar)");
    return n.Scalar();
  }
  double number(const YAML::Node& n, const std::string& key, double lo, bool lo_open = false) const {
    const std::string t = scalar(n, key);
    try {
      size_t used = 0;
      const double v = std::stod(t, &used);
      if (used == t.size() && std::isfinite(v) && (lo_open ? v > lo : v >= lo)) return v;
    } catch (const std::exception&) {
    }
    fail(n, "key '" + key + "': '" + t + "' is not a number " + (lo_open ? "> " : ">= ") + trim_number(lo));
  }
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t lo) const {
    const std::string t = scalar(n, key);
    try {
      size_t used = 0;
      const long long v = std::stoll(t, &used);
      if (used == t.size() && v >= lo) return v;
    } catch (const std::exception&) {
    }
    fail(n, "key '" + key + "': '" + t + "' is not an integer >= " + std::to_string(lo));
  }
  std::string choice(const YAML::Node& n, const std::string& key, const std::vector<std::string>& accepted) const {
    const std::string v = scalar(n, key);
    if (std::find(accepted.begin(), accepted.end(), v) != accepted.end()) return v;
    std::string msg = "key '" + key + "': '" + v + "' is not accepted";
    const std::string best = closest_match(v, accepted);
    if (!best.empty()) msg += " (did you mean '" + best + "'?)";
    fail(n, msg + "; accepted: " + join(accepted, " | "));
  }
  // A mapping whose keys must be among `accepted`; unknown keys get the closest suggestion.
  void check_keys(const YAML::Node& n, const std::string& section, const std::vector<std::string>& accepted) const {
    if (!n.IsMap()) fail(n, section + ": expected a mapping with keys " + join(accepted));
    for (const auto& kv : n) {
      const std::string key = scalar(kv.first, section);
      if (std::find(accepted.begin(), accepted.end(), key) != accepted.end()) continue;
      std::string msg = section + ": unknown key '" + key + "'";
      const std::string best = closest_match(key, accepted);
      if (!best.empty()) msg += " (did you mean '" + best + "'?)";
      fail(kv.first, msg + "; accepted: " + join(accepted));
    }
  }
  void require(const YAML::Node& parent, const std::string& key, const std::string& section) const {
    if (!parent[key]) fail(parent, section + ": key '" + key + "' is required (docs/model.md \"Cluster files\")");
  }
  static std::string trim_number(double v) {
    std::string s = std::to_string(v);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
};

// The `calibration:` section (calibration_yaml.cpp).
Calibration read_calibration(const YamlReader& reader, const YAML::Node& n);
void emit_calibration(YAML::Emitter& out, const Calibration& calibration);

}  // namespace ts::perf
