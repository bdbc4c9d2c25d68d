// The combinations of run-config values that are refused, as one table (config/rules.cpp,
// docs/config.md "Combinations"): each row names the keys it reads, the condition under which a
// config is refused, the message (what is wrong, what is accepted, what to do) and the test that
// covers it (tests/cpp/test_config_rules.cpp checks that each named test exists). Each value's
// own type and range are checked when it is read (config/schema.h); what this binary, MPI world
// or device cannot run is train/capabilities.cpp.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace ts {

// What a row's condition and message read.
struct RuleContext {
  const ResolvedConfig& cfg;
  const std::map<std::string, std::string>& texts;  // key -> canonical text (given keys and defaults)

  const RunConfig& run() const { return cfg.run; }
  bool given(const std::string& key) const { return cfg.where.count(key) > 0; }
  std::string text(const std::string& key) const;
  int64_t global_batch() const { return run().global_batch_for(run().workers); }
};

// When a row is checked: `config` whenever a config is resolved (every command that reads one,
// sweep expansion included); `run` when `trainscale run` starts: combinations the training loop
// cannot execute but `predict` and `trainscale-sim` price (nccl with a CPU backend's config).
enum class RuleScope { config, run };

struct ConfigRule {
  // The keys the row reads; the error names the first of them the config gives (else the first).
  std::vector<std::string> keys;
  RuleScope scope;
  std::string test;  // "<file under tests/>:<test name>", the test that covers the row
  bool (*refuses)(const RuleContext&);
  // What is wrong, what is accepted, what to do; "{key}" stands for the key's value, "{key@}" for
  // where it was set. A row whose message needs more than the keys' values computes it instead.
  std::string message;
  std::string (*computed)(const RuleContext&) = nullptr;
};

const std::vector<ConfigRule>& config_rules();

// The first row of `scope` (in table order) whose condition holds, as ConfigError
// "<where the key was set>: key '<key>': <message>".
void check_config_rules(const ResolvedConfig& cfg, const std::map<std::string, std::string>& texts, RuleScope scope);

}  // namespace ts
