// The per-rank keys of a run config, ranks.backend and ranks.threads (docs/heterogeneous.md
// "Ranks of different kinds"): their items checked and filled, and read into RunConfig (see
// resolve_steps.h); config/rules.cpp checks them against the workers and the strategies.
#include <algorithm>
#include <charconv>

#include "config/enums.h"
#include "config/registries.h"
#include "config/resolve_steps.h"
#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

constexpr int kMostThreads = 1024;  // the range of `threads`

std::string where_of(const std::map<std::string, std::string>& where, const std::string& key) {
  auto it = where.find(key);
  return (it != where.end() ? it->second : std::string("<config>")) + ": key '" + key + "'";
}

bool parse_threads(const std::string& text, int& threads) {
  const auto res = std::from_chars(text.data(), text.data() + text.size(), threads);
  return res.ec == std::errc() && res.ptr == text.data() + text.size() && threads >= 1 && threads <= kMostThreads;
}

// One per-rank list: empty items (an entry of `ranks: [...]` without the key) take the run's
// value of `base`; each item is checked. Returns the items.
std::vector<std::string> resolve_items(KeyTexts& texts, const std::map<std::string, std::string>& where,
                                       const std::string& key, const std::string& base) {
  std::vector<std::string> items;
  for (const std::string& raw : split(texts.at(key), ',')) items.push_back(trim(raw));
  for (size_t i = 0; i < items.size(); ++i) {
    std::string& item = items[i];
    if (item.empty()) item = texts.at(base);
    const std::string at = where_of(where, key) + ": rank " + std::to_string(i) + "'s " + base + " '" + item + "'";
    if (base == "backend") {
      const std::vector<std::string> ok = accepted_backend_names();
      if (std::find(ok.begin(), ok.end(), item) == ok.end()) {
        const std::string best = closest_match(item, ok);
        throw ConfigError(at + " is not accepted; accepted: " + join(ok, " | ") +
                          (best.empty() ? "" : " (did you mean '" + best + "'?)"));
      }
    } else if (int threads = 0; !parse_threads(item, threads)) {
      throw ConfigError(at + " is not an integer in 1.." + std::to_string(kMostThreads) + " (docs/config.md)");
    }
  }
  texts[key] = join(items, ",");
  return items;
}

}  // namespace

void resolve_rank_texts(KeyTexts& texts, const std::map<std::string, std::string>& where) {
  size_t count = 0;
  std::string first;
  for (const char* base : {"backend", "threads"}) {
    const std::string key = std::string("ranks.") + base;
    if (!texts.count(key)) continue;
    const size_t n = resolve_items(texts, where, key, base).size();
    if (count != 0 && n != count)
      throw ConfigError(where_of(where, key) + ": " + std::to_string(n) + " entries, but " + first + " has " +
                        std::to_string(count) + "; give both lists one entry per rank");
    count = n;
    first = key;
  }
}

void read_rank_config(const KeyTexts& t, RunConfig& r) {
  if (auto it = t.find("ranks.backend"); it != t.end())
    for (const std::string& name : split(it->second, ','))
      r.rank_backends.push_back(enum_from_name(all_backend_kinds(), backend_kind_name, name, "ranks.backend"));
  if (auto it = t.find("ranks.threads"); it != t.end())
    for (const std::string& text : split(it->second, ',')) {
      int threads = 0;
      parse_threads(text, threads);
      r.rank_threads.push_back(threads);
    }
  const auto differ = [](const auto& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end(); };
  r.dist.ranks_differ = differ(r.rank_backends) || differ(r.rank_threads);
}

}  // namespace ts
