// The sweep file (docs/sweeps.md "Sweep file schema"): a base run config plus
// the dimensions that vary it (matrix, zip), points removed (exclude) and added (include),
// repetitions and resources. Parsing checks shapes and keys only; expand.h validates points.
// Errors are ConfigError naming the sweep file, line and key.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace YAML {
class Emitter;
class Node;
}  // namespace YAML

namespace ts {

// Ordered "dotted.key" -> value text (as written in the sweep file).
using SweepAssignments = std::vector<std::pair<std::string, std::string>>;

// One stepping dimension: a matrix key (one key) or a zip group (several keys, lock-step).
// values[i] is the i-th step: one text per key, in `keys` order.
struct SweepDimension {
  std::string name;                              // matrix key, or zip group name
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;  // [step][key]
  std::string where;                             // "sweep.yaml:12"
};

struct SweepEntry {  // an exclude or include entry
  SweepAssignments values;
  std::string where;
};

struct SweepFile {
  std::string path;               // the sweep file as given
  std::string campaign;           // defaults to the sweep file's stem
  std::string base_path;          // resolved path of the base run config
  std::string base_text;          // its contents
  std::vector<SweepDimension> dimensions;  // matrix keys in file order, then zip groups in file order
  std::vector<SweepEntry> exclude;
  std::vector<SweepEntry> include;
  int repetitions = 1;
  std::string resources_yaml;     // the `resources` mapping re-emitted as YAML ("{}" when absent)
};

// Emits `node` keeping mapping order and the quoting of quoted scalars ("00:20:00" stays a string).
void emit_yaml_node(YAML::Emitter& em, const YAML::Node& node);

// Reads and parses `path`. `base` is looked up relative to the sweep file's directory first,
// then relative to the current directory (absolute paths as they are).
SweepFile load_sweep_file(const std::string& path);
// Same from text; `path` names the file in messages and anchors the `base` lookup.
SweepFile parse_sweep_file(const std::string& text, const std::string& path);

}  // namespace ts
