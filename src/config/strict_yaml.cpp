// Strict YAML loading (see strict_yaml.h): one pass over yaml-cpp's parse events checks
// documents, duplicate keys and the alias budget; then yaml-cpp builds the node tree.
#include "config/strict_yaml.h"

#include <map>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "core/error.h"

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
    check_tag(mark, tag);
    begin_node(mark, std::nullopt);
    Frame frame;
    frame.is_map = false;
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
  }
  void OnSequenceEnd() override { end_collection(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    check_tag(mark, tag);
    begin_node(mark, std::nullopt);
    Frame frame;
    frame.is_map = true;
    frame.anchor = anchor;
    stack_.push_back(std::move(frame));
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

}  // namespace

YAML::Node load_yaml_strictly(const std::string& text, const std::string& origin, const YamlLimits& limits) {
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

}  // namespace ts
