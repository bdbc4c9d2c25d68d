// Strict YAML loading (see strict_yaml.h): one pass over yaml-cpp's parse events checks
// documents, duplicate keys and the alias budget; then yaml-cpp builds the node tree. Then
// YamlReader, the checked reading of its nodes.
#include "config/strict_yaml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/names.h"
#include "core/strings.h"

namespace ts {
namespace {

class StrictChecker : public YAML::EventHandler {
 public:
  StrictChecker(std::string origin, YamlLimits limits) : origin_(std::move(origin)), limits_(limits) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1)
      fail(mark, "a second YAML document begins here (after '---'); a file holds one document: remove the '---' "
                 "line and what follows, or move it into a file of its own");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor, std::string()); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    check_tag(mark, tag);
    leaf(mark, anchor, value);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    for (const Frame& open : stack_)
      if (open.anchor == anchor && anchor != YAML::NullAnchor)
        fail(mark, "an alias (*name) inside the node its anchor (&name) names makes a cycle; write the values out");
    const auto size = anchor_nodes_.find(anchor);
    const int64_t nodes = size != anchor_nodes_.end() ? size->second : 1;
    alias_nodes_ += nodes;
    if (alias_nodes_ > limits_.max_alias_nodes)
      fail(mark, "aliases (*name) expand to more than " + std::to_string(limits_.max_alias_nodes) +
                     " nodes in all (a 'billion laughs' YAML bomb?); write the values out instead of aliasing them");
    const auto scalar = anchor_scalars_.find(anchor);
    begin_node(mark, scalar != anchor_scalars_.end() ? std::optional<std::string>(scalar->second) : std::nullopt);
    end_node(nodes);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    begin_collection(mark, tag, anchor, false);
  }
  void OnSequenceEnd() override { end_collection(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    begin_collection(mark, tag, anchor, true);
  }
  void OnMapEnd() override { end_collection(); }

 private:
  struct Frame {
    bool is_map = false;
    YAML::anchor_t anchor = YAML::NullAnchor;
    bool expect_key = true;                 // maps: the next node is a key
    std::map<std::string, int> key_lines;   // maps: key -> 1-based line
    std::string current_key;                // maps: the key of the value being read
    int64_t items = 0;                      // sequences: items so far
    int64_t nodes = 0;                      // nodes inside, aliases counted expanded
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& msg) const {
    throw ConfigError(origin_ + ":" + std::to_string(mark.line + 1) + ": " + msg);
  }

  // yaml-cpp keeps a tag it does not know (`!custom 3`) and reads the value as if it were not
  // there: an application tag means something to its author that nothing here would honour.
  // Accepted: no tag ("?" plain, "!" quoted) and YAML's own (`!!str`, tag:yaml.org,2002:...).
  void check_tag(const YAML::Mark& mark, const std::string& tag) const {
    if (tag.empty() || tag == "?" || tag == "!" || tag.rfind("tag:yaml.org,2002:", 0) == 0) return;
    fail(mark, "the YAML tag '" + tag + "' is not understood here (only YAML's own, such as !!str); remove it");
  }

  void check_depth(const YAML::Mark& mark) const {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth)
      fail(mark, "mappings and lists are nested too deep here (more than " + std::to_string(limits_.max_depth) +
                     " levels; a trainscale file needs a few): is this the right file?");
  }

  // "dist.allreduce" or "runs[3].config.lr": where the node being read sits.
  std::string path_to(const std::string& key) const {
    std::string path;
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      const Frame& f = stack_[i];
      if (f.is_map) path += (path.empty() ? "" : ".") + f.current_key;
      else path += "[" + std::to_string(f.items) + "]";
    }
    return path.empty() ? key : path + "." + key;
  }

  // A node starts; `key_text` is its text when it is a scalar (or an alias of one).
  void begin_node(const YAML::Mark& mark, const std::optional<std::string>& key_text) {
    if (stack_.empty() || !stack_.back().is_map || !stack_.back().expect_key) return;
    Frame& map = stack_.back();
    if (!key_text) {
      map.current_key = "?";
      return;
    }
    const auto [it, inserted] = map.key_lines.emplace(*key_text, mark.line + 1);
    if (!inserted)
      fail(mark, "key '" + path_to(*key_text) + "' is given twice in one mapping (first at line " +
                     std::to_string(it->second) + "); YAML keeps only one of them, so remove the other");
    map.current_key = *key_text;
  }

  // A node of `nodes` nodes (expanded) ends: counted in its parent, and a map's key/value
  // alternation advances.
  void end_node(int64_t nodes) {
    if (stack_.empty()) return;
    Frame& parent = stack_.back();
    parent.nodes += nodes;
    if (parent.is_map) parent.expect_key = !parent.expect_key;
    else ++parent.items;
  }

  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, const std::string& text) {
    begin_node(mark, text);
    if (anchor != YAML::NullAnchor) {
      anchor_nodes_[anchor] = 1;
      anchor_scalars_[anchor] = text;
    }
    end_node(1);
  }

  void begin_collection(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, bool is_map) {
    check_tag(mark, tag);
    check_depth(mark);
    begin_node(mark, std::nullopt);
    Frame frame;
    frame.is_map = is_map;
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }

  void end_collection() {
    const Frame done = std::move(stack_.back());
    stack_.pop_back();
    const int64_t nodes = done.nodes + 1;
    if (done.anchor != YAML::NullAnchor) anchor_nodes_[done.anchor] = nodes;
    end_node(nodes);
  }

  std::string origin_;
  YamlLimits limits_;
  int documents_ = 0;
  int64_t alias_nodes_ = 0;
  std::vector<Frame> stack_;
  std::map<YAML::anchor_t, int64_t> anchor_nodes_;
  std::map<YAML::anchor_t, std::string> anchor_scalars_;
};

// yaml-cpp reads a NUL byte as the end of a line and names a later line, or none: the first
// one is refused here with its own line and column.
void refuse_nul_bytes(const std::string& text, const std::string& origin) {
  const size_t nul = text.find('\0');
  if (nul == std::string::npos) return;
  const size_t line_start = text.rfind('\n', nul);
  const size_t column = nul - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
  throw ConfigError(origin + ":" + std::to_string(line) + ": a NUL byte (\\x00) at column " + std::to_string(column) +
                    "; a YAML file is text: is this the right file, or one cut or overwritten mid-write?");
}

}  // namespace

YAML::Node load_yaml_strictly(const std::string& text, const std::string& origin, const YamlLimits& limits) {
  refuse_nul_bytes(text, origin);
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    StrictChecker checker(origin, limits);
    while (parser.HandleNextDocument(checker)) {
    }
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
}

bool yaml_is_empty(const YAML::Node& node) { return !node.IsDefined() || node.IsNull(); }

namespace {

// " (did you mean 'y'?)" when a name of `accepted` is close to `word`, else "".
std::string suggestion(const std::string& word, const std::vector<std::string>& accepted) {
  const std::string best = closest_match(word, accepted);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string not_accepted(const std::string& word, const std::vector<std::string>& accepted, const std::string& separator) {
  return "'" + word + "' is not accepted" + suggestion(word, accepted) + "; accepted: " + join(accepted, separator);
}

YAML::Node YamlReader::load(const std::string& text, const YamlLimits& limits) const {
  return load_yaml_strictly(text, path, limits);
}

std::string YamlReader::at(const YAML::Node& n) const {
  const YAML::Mark m = n.Mark();
  return m.is_null() ? path : path + ":" + std::to_string(m.line + 1);
}

void YamlReader::fail(const YAML::Node& n, const std::string& msg) const { throw ConfigError(at(n) + ": " + msg); }

std::string YamlReader::kind(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsScalar()) return "a scalar";
  return "null";
}

std::string YamlReader::name(const YAML::Node& key, const std::string& section) const {
  if (!key.IsScalar()) fail(key, section + ": a key must be a name (a scalar), not " + kind(key));
  if (one_line_values && !control_character_problem(key.Scalar()).empty())
    fail(key, section + ": the key contains " + control_character_problem(key.Scalar()) + "; keys are one line of text");
  return key.Scalar();
}

std::string YamlReader::scalar(const YAML::Node& n, const std::string& key) const {
  if (null_is_empty && n.IsNull()) return "";
  if (!n.IsScalar()) fail(n, "key '" + key + "': expected a single value (a scalar), got " + kind(n));
  if (one_line_values)
    if (const std::string control = control_character_problem(n.Scalar()); !control.empty())
      fail(n, "key '" + key + "': the value contains " + control + "; values are one line of text");
  return n.Scalar();
}

int64_t YamlReader::integer(const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi) const {
  const std::string t = scalar(n, key);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  const bool bounded = hi != std::numeric_limits<int64_t>::max();
  const std::string accepted = bounded ? "in " + std::to_string(lo) + ".." + std::to_string(hi) : ">= " + std::to_string(lo);
  const bool digits = end == t.data() + t.size() && !t.empty();
  if (digits && ec == std::errc() && v >= lo && v <= hi) return v;
  // An integer above the range (or beyond 64 bits) is named as such, not "not an integer".
  const bool too_large = ec == std::errc::result_out_of_range ? t[0] != '-' : ec == std::errc() && v > hi;
  if (digits && too_large)
    fail(n, "key '" + key + "': " + t + " is above the maximum " + std::to_string(hi) + "; accepted: an integer " + accepted);
  fail(n, "key '" + key + "': '" + t + "' is not an integer " + accepted);
}

double YamlReader::number(const YAML::Node& n, const std::string& key, double lo, bool lo_open, double hi) const {
  const std::string t = scalar(n, key);
  double v = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc() && end == t.data() + t.size() && std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi)
    return v;
  const bool bounded = hi != std::numeric_limits<double>::max();
  fail(n, "key '" + key + "': '" + t + "' is not a number " + (lo_open ? "> " : ">= ") + shortest_number_text(lo) +
              (bounded ? " and at most " + shortest_number_text(hi) : ""));
}

bool YamlReader::boolean(const YAML::Node& n, const std::string& key) const {
  const std::string t = scalar(n, key);
  if (t == "true" || t == "yes" || t == "on") return true;
  if (t == "false" || t == "no" || t == "off") return false;
  fail(n, "key '" + key + "': " + not_accepted(t, {"true", "false"}, ", "));
}

std::string YamlReader::choice(const YAML::Node& n, const std::string& key, const std::vector<std::string>& accepted) const {
  const std::string v = scalar(n, key);
  if (!contains(accepted, v)) fail(n, "key '" + key + "': " + not_accepted(v, accepted));
  return v;
}

std::vector<std::string> YamlReader::strings(const YAML::Node& n, const std::string& key, const std::string& example) const {
  if (n.IsNull()) return {};
  if (n.IsScalar()) return {scalar(n, key)};
  if (!n.IsSequence()) fail(n, "key '" + key + "': expected a list of strings, e.g. " + example + ", got " + kind(n));
  std::vector<std::string> out;
  for (const auto& v : n) out.push_back(scalar(v, key));
  return out;
}

std::vector<std::string> YamlReader::list(const YAML::Node& n, const std::string& key, const std::string& example) const {
  if (!n.IsSequence()) fail(n, "key '" + key + "': expected a list of values, e.g. " + example + ", got " + kind(n));
  if (n.size() == 0) fail(n, "key '" + key + "': the list is empty; give at least one value");
  std::vector<std::string> out;
  for (const auto& v : n) out.push_back(scalar(v, key));
  return out;
}

void YamlReader::check_keys(const YAML::Node& n, const std::string& section, const std::vector<std::string>& accepted) const {
  if (!n.IsMap()) fail(n, section + ": expected a mapping with keys " + join(accepted) + ", got " + kind(n));
  for (const auto& kv : n) {
    const std::string key = name(kv.first, section);
    if (!contains(accepted, key))
      fail(kv.first, section + ": unknown key '" + key + "'" + suggestion(key, accepted) + "; accepted: " + join(accepted));
  }
}

void YamlReader::require(const YAML::Node& parent, const std::string& key, const std::string& section,
                         const std::string& doc) const {
  if (!parent[key]) fail(parent, section + ": key '" + key + "' is required (" + doc + ")");
}

}  // namespace ts
