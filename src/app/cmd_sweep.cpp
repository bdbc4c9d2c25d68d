// `trainscale sweep`: experiment campaigns. This build has `expand` (sweep file -> frozen
// campaign directory, docs/sweeps.md); submit, status and resubmit come later.
#include <boost/program_options.hpp>

#include <iostream>

#include "app/commands.h"
#include "core/build_info.h"
#include "core/error.h"
#include "sweep/expand.h"
#include "sweep/sweep_file.h"

namespace po = boost::program_options;

namespace ts {
namespace {

constexpr const char* kSweepUsage =
    "usage: trainscale sweep expand SWEEP.yaml [--site SITE.yaml] --out CAMPAIGN_DIR [--dry-run]\n"
    "       trainscale sweep submit|status|resubmit ...   (not in this build yet)\n";

int sweep_expand(const std::vector<std::string>& args) {
  po::options_description opts(
      std::string("usage: trainscale sweep expand SWEEP.yaml [--site SITE.yaml] --out CAMPAIGN_DIR [--dry-run]\n\n"
                  "Expands a sweep file (docs/sweeps.md) into its runs, validates every run config and\n"
                  "freezes the campaign: CAMPAIGN_DIR/manifest.yaml (runs: index, run_id, config_id,\n"
                  "repetition, config), manifest.hash, sweep.yaml, site.yaml (with --site) and runs/.\n"
                  "Expanding the same files again gives a byte-identical manifest; a directory holding a\n"
                  "different manifest is refused. Exit codes: 0 ok, 2 sweep/config error.\n\noptions"));
  opts.add_options()("help,h", "show this help")
      ("sweep", po::value<std::string>(), "sweep YAML file (positional)")
      ("site", po::value<std::string>(), "site YAML file (copied into the campaign)")
      ("out", po::value<std::string>(), "campaign directory to write")
      ("dry-run", "print the runs as a table and their count; write nothing");
  po::positional_options_description pos;
  pos.add("sweep", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  if (!vm.count("sweep")) throw ConfigError("a sweep file is required: trainscale sweep expand SWEEP.yaml --out CAMPAIGN_DIR");
  const bool dry_run = vm.count("dry-run") > 0;
  if (!dry_run && !vm.count("out")) throw ConfigError("--out CAMPAIGN_DIR is required (or --dry-run to only list the runs)");

  const SweepFile sweep = load_sweep_file(vm["sweep"].as<std::string>());
  const Expansion expansion = expand_sweep(sweep);
  if (dry_run) {
    std::cout << dry_run_table(expansion);
    return kExitOk;
  }
  const std::string out = vm["out"].as<std::string>();
  const std::string manifest = manifest_yaml(expansion, std::string("trainscale ") + TRAINSCALE_VERSION);
  write_campaign(out, manifest, sweep.path, vm.count("site") ? vm["site"].as<std::string>() : "");
  std::cout << "campaign " << expansion.campaign << ": " << expansion.runs.size() << " runs -> " << out << "/manifest.yaml ("
            << manifest_hash(manifest) << ")\n";
  return kExitOk;
}

}  // namespace

int command_sweep(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kSweepUsage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  const std::string sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (sub == "expand") return sweep_expand(rest);
  if (sub == "submit" || sub == "status" || sub == "resubmit")
    throw ConfigError("`trainscale sweep " + sub + "` is not in this build yet; available: trainscale sweep expand");
  throw ConfigError("unknown sweep subcommand '" + sub + "'; available: expand (submit, status, resubmit come later)");
}

}  // namespace ts
