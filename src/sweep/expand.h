// Sweep expansion (docs/sweeps.md "Expansion"): a parsed sweep file
// becomes the ordered list of runs of a campaign, each a validated, resolved run config with
// its config_id, run_id and seed; and the frozen campaign directory (manifest.yaml, its hash,
// copies of the sweep and site files, runs/).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sweep/site.h"
#include "sweep/sweep_file.h"

namespace ts {

// Progress lines of a long `sweep expand`: a 10^6-point sweep resolves every run config (a few
// milliseconds each) and said nothing for minutes. A line goes to the stream at most every
// `every_seconds` (0: after every item), never for a phase that ends before the first is due.
class ExpansionProgress {
 public:
  // `out` nullptr: silent.
  ExpansionProgress(std::ostream* out, double every_seconds);
  // `done` of `total` items of a phase: "sweep expand: expanded 120000 of 1000000 points (12%),
  // 41 s so far" when a line is due.
  void report(const char* what, int64_t done, int64_t total, const char* items);

 private:
  std::ostream* out_;
  double every_seconds_;
  double start_, last_;
};

struct ExpandedRun {
  int64_t index = 0;        // position in the manifest's runs list
  std::string run_id;       // <config_id>-r<repetition>
  std::string config_id;    // config_id_of(resolved config before the per-repetition seed)
  int repetition = 0;       // 0-based
  uint64_t seed = 0;
  std::string config_yaml;  // canonical resolved run config with `seed` set
  std::map<std::string, std::string> swept;  // swept key -> canonical value of this run
  // Facts of the resolved config kept from expansion, so that no later pass parses every run
  // again: what the site is checked against, and "<backends>,<precision>,<gpu>", alike for runs
  // that this build and machine can or cannot run alike.
  std::string gpu, mpi_flavor, storage, capability_key;
};

struct Expansion {
  std::string campaign;
  std::string sweep_path;
  std::string resources_yaml;
  std::vector<std::string> swept_keys;  // keys named by matrix, zip and include, in file order
  // The base config's resolved seed: the seed of every point that does not set its own, so the
  // one its config_id is computed with (the manifest's base_seed; load_campaign recomputes ids).
  std::string base_seed;
  std::vector<ExpandedRun> runs;
};

// The seed of repetition `k` of `config_id`: FNV-1a 64 of "<config_id>-r<k>", masked to 31 bits.
uint64_t derive_seed(const std::string& config_id, int repetition);

// The default of `sweep expand --max-runs`: a campaign larger than this is refused.
constexpr int64_t kDefaultMaxRuns = 10000;

// The most runs `sweep` can expand to, computed from the list lengths alone (nothing is
// materialised): (product of the dimensions' lengths + includes) x repetitions, before
// exclusion and de-duplication; saturates at INT64_MAX.
int64_t planned_run_count(const SweepFile& sweep);

// Expands and validates every point (ConfigError naming the sweep file, the point and the key).
// Refused before anything is materialised: planned_run_count above `max_runs`. Refused after
// the product: an exclude entry that matches no point (a typo in it would silently keep
// points the author meant to drop).
// Linear in the points: each is resolved once, and once more per repetition with its seed.
// `progress`, when given, reports the points expanded.
Expansion expand_sweep(const SweepFile& sweep, int64_t max_runs = kDefaultMaxRuns,
                       ExpansionProgress* progress = nullptr);

// Checks every run's gpu, mpi_flavor and dataset.storage against the site: a name the site
// lacks is a ConfigError naming the sweep file, the run (index, run_id, swept values) and the key.
void check_expansion_against_site(const Expansion& expansion, const Site& site);

// The manifest text (deterministic: no timestamps, fixed order). `created_by`: "trainscale 0.1.0".
std::string manifest_yaml(const Expansion& expansion, const std::string& created_by,
                          ExpansionProgress* progress = nullptr);

// "fnv1a64:<16 hex>" of the manifest bytes (the content of manifest.hash).
std::string manifest_hash(const std::string& manifest_text);

// Writes CAMPAIGN_DIR/{manifest.yaml, manifest.hash, sweep.yaml, site.yaml (when site_path is
// not empty), runs/} through temp names and renames. An existing campaign whose manifest
// differs is refused (ConfigError); an identical one is left as it is.
void write_campaign(const std::string& out_dir, const std::string& manifest_text, const std::string& sweep_path,
                    const std::string& site_path);

// The --dry-run table: index, run_id and the swept keys, then counts (total and per shape).
std::string dry_run_table(const Expansion& expansion);

}  // namespace ts
