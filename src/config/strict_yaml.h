// Loading the YAML of run configs, sweep files, site files and manifests strictly: what
// yaml-cpp accepts silently is refused here with the file and line (docs/reliability.md
// "Hostile input"):
//   - a key given twice in one mapping (at any depth): yaml-cpp keeps one of them silently;
//   - a second document (`---`) in one file: yaml-cpp's Load reads the first and drops the rest;
//   - aliases that expand to more than `max_alias_nodes` nodes in all: yaml-cpp shares an
//     aliased node, but every reader that walks or re-emits the tree expands it, so a "billion
//     laughs" file of a few lines would become billions of nodes. The count is arithmetic (the
//     size of each anchored node, added at each alias), nothing is expanded to count it.
// Errors are ConfigError "<origin>:<line>: ...".
#pragma once

#include <cstdint>
#include <string>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace ts {

struct YamlLimits {
  int64_t max_alias_nodes = 10000;  // nodes that aliases may add, counted as if expanded
};

// The one document of `text` (a Null node for an empty text or one of comments only).
YAML::Node load_yaml_strictly(const std::string& text, const std::string& origin, const YamlLimits& limits = {});

// True when `node` holds no document content (empty file, comments only, a bare `---`).
bool yaml_is_empty(const YAML::Node& node);

}  // namespace ts
