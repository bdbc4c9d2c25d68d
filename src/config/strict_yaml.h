// Loading the YAML of run configs, sweep files, site files and manifests strictly: what
// yaml-cpp accepts silently is refused here with the file and line (docs/reliability.md
// "Hostile input"):
//   - a key given twice in one mapping (at any depth): yaml-cpp keeps one of them silently;
//   - a second document (`---`) in one file: yaml-cpp's Load reads the first and drops the rest;
//   - aliases that expand to more than `max_alias_nodes` nodes in all: yaml-cpp shares an
//     aliased node, but every reader that walks or re-emits the tree expands it, so a "billion
//     laughs" file of a few lines would become billions of nodes. The count is arithmetic (the
//     size of each anchored node, added at each alias), nothing is expanded to count it;
//   - nesting deeper than `max_depth`, and NUL bytes (yaml-cpp names the wrong line for them).
// Errors are ConfigError "<origin>:<line>: ...".
// YamlReader is the one reading layer on top of it for every YAML file of the project (run
// configs: raw_values.cpp; sweep and site files: src/sweep/; cluster files: src/perfmodel/):
// each value checked for its type where it is read, every error "<file>:<line>: key '<key>':
// what is wrong; what is accepted", with the closest accepted name for a misspelt one.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace ts {

struct YamlLimits {
  int64_t max_alias_nodes = 10000;  // nodes that aliases may add, counted as if expanded
  // Mappings and lists inside each other: a manifest needs 5; beyond yaml-cpp's own 500 it would
  // say only "bad file", so the checker refuses deeper files first, naming the line.
  int max_depth = 64;
};

// The one document of `text` (a Null node for an empty text or one of comments only).
YAML::Node load_yaml_strictly(const std::string& text, const std::string& origin, const YamlLimits& limits = {});

// True when `node` holds no document content (empty file, comments only, a bare `---`).
bool yaml_is_empty(const YAML::Node& node);

// "'<word>' is not accepted (did you mean '<closest>'?); accepted: a | b": the one wording of a
// name that is not among `accepted` (the suggestion only when one is close).
std::string not_accepted(const std::string& word, const std::vector<std::string>& accepted,
                         const std::string& separator = " | ");

// Checked reading of the nodes of one file; `key` arguments are dotted ("node.cores").
struct YamlReader {
  std::string path;            // names the file in messages
  bool null_is_empty = false;  // a key without a value reads as "" (site files: `binary:`)
  bool one_line_values = false;  // values are one line of text (site files: they go into job scripts)

  // The file's one document, strictly (load_yaml_strictly).
  YAML::Node load(const std::string& text, const YamlLimits& limits = {}) const;
  std::string at(const YAML::Node& n) const;  // "file:line" ("file" for a node not from the text)
  [[noreturn]] void fail(const YAML::Node& n, const std::string& msg) const;
  static std::string kind(const YAML::Node& n);  // "a mapping", "a list", "a scalar", "null"

  // A mapping's key: a name (a scalar), not a list or mapping; `section` is the mapping's key.
  std::string name(const YAML::Node& key, const std::string& section) const;
  std::string scalar(const YAML::Node& n, const std::string& key) const;
  int64_t integer(const YAML::Node& n, const std::string& key, int64_t lo,
                  int64_t hi = std::numeric_limits<int64_t>::max()) const;
  double number(const YAML::Node& n, const std::string& key, double lo, bool lo_open = false,
                double hi = std::numeric_limits<double>::max()) const;
  bool boolean(const YAML::Node& n, const std::string& key) const;
  std::string choice(const YAML::Node& n, const std::string& key, const std::vector<std::string>& accepted) const;
  // A scalar or a list of scalars (null: none); `example` shows a list ("[openmpi/4.1]").
  std::vector<std::string> strings(const YAML::Node& n, const std::string& key, const std::string& example) const;
  // A non-empty list of scalars.
  std::vector<std::string> list(const YAML::Node& n, const std::string& key, const std::string& example) const;
  // A mapping whose keys are among `accepted`: "<section>: unknown key 'x' (did you mean 'y'?); accepted: ...".
  void check_keys(const YAML::Node& n, const std::string& section, const std::vector<std::string>& accepted) const;
  // `parent[key]` is given: "<section>: key '<key>' is required (<doc>)".
  void require(const YAML::Node& parent, const std::string& key, const std::string& section, const std::string& doc) const;
};

}  // namespace ts
