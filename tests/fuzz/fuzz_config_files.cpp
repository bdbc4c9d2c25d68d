// The YAML fuzz targets (see fuzz_targets.h): run configs, sweep files and site files, through
// the functions `trainscale run`, `sweep expand` and `sweep submit` call on file contents.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/run_config.h"
#include "core/error.h"
#include "fuzz_targets.h"
#include "sweep/campaign.h"
#include "sweep/expand.h"
#include "sweep/site.h"
#include "sweep/sweep_file.h"

namespace ts::fuzz {
namespace {

// Sweeps with more runs than this are parsed but not expanded: expansion resolves every run
// (about a millisecond each), so a large valid sweep is slow, not wrong, and the cap on
// expansion sizes has tests of its own.
constexpr size_t kMaxExpandedRuns = 64;

std::string text_of(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

size_t planned_runs(const SweepFile& sweep) {
  size_t points = 1;
  for (const auto& d : sweep.dimensions) {
    points *= d.values.size();
    if (points > kMaxExpandedRuns) return points;
  }
  return (points + sweep.include.size()) * static_cast<size_t>(sweep.repetitions);
}

// A campaign directory of this process for the manifest target, removed at exit.
struct ScratchCampaign {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ts_fuzz_campaign_" + std::to_string(::getpid()));
  ScratchCampaign() { std::filesystem::create_directories(dir); }
  ~ScratchCampaign() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace

void run_config(const uint8_t* data, size_t size) {
  ResolvedConfig cfg;
  try {
    cfg = parse_run_config(text_of(data, size), "fuzz.yaml", {});
  } catch (const ConfigError&) {
    return;
  } catch (const RuntimeError&) {
    return;
  }
  // The canonical YAML is what run files and manifests hold and what config_id hashes: it must
  // be accepted and resolve to itself.
  ResolvedConfig again;
  try {
    again = parse_run_config(cfg.yaml, "canonical.yaml", {});
  } catch (const ConfigError& e) {
    throw InvariantError(std::string("the canonical YAML of an accepted config is refused: ") + e.what() +
                         "\n--- canonical YAML:\n" + cfg.yaml);
  }
  if (again.yaml != cfg.yaml)
    throw InvariantError("the canonical YAML does not resolve to itself\n--- first:\n" + cfg.yaml + "--- again:\n" + again.yaml);
}

void sweep_file(const uint8_t* data, size_t size) {
  try {
    // `base` is looked up beside this (absent) file: configs/sweeps/ holds example_base.yaml.
    const SweepFile sweep = parse_sweep_file(text_of(data, size), TRAINSCALE_SOURCE_DIR "/configs/sweeps/fuzz.yaml");
    if (planned_runs(sweep) > kMaxExpandedRuns) return;
    const Expansion expansion = expand_sweep(sweep);
    check_expansion_against_site(expansion, default_local_site());
    manifest_yaml(expansion, "trainscale fuzz");
    dry_run_table(expansion);
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

void site_file(const uint8_t* data, size_t size) {
  try {
    parse_site_file(text_of(data, size), "fuzz-site.yaml");
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

void manifest(const uint8_t* data, size_t size) {
  static const ScratchCampaign scratch;
  const std::string text = text_of(data, size);
  // A matching manifest.hash, as someone who edits a manifest would write: the parser is the target.
  write_file(scratch.dir / "manifest.yaml", text);
  write_file(scratch.dir / "manifest.hash", manifest_hash(text) + "\n");
  try {
    const Campaign campaign = load_campaign(scratch.dir.string());
    status_text(campaign, campaign_status(campaign, {}));
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

}  // namespace ts::fuzz
