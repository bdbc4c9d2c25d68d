// `trainscale sweep`: experiment campaigns (docs/sweeps.md). expand (sweep file -> frozen
// campaign directory), submit (job arrays for Slurm / PBS, or the local executor), status and
// resubmit.
#include <boost/program_options.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include <unistd.h>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/strings.h"
#include "config/run_config.h"
#include "sweep/campaign.h"
#include "sweep/expand.h"
#include "sweep/launcher_end.h"
#include "sweep/local_executor.h"
#include "sweep/shape_check.h"
#include "sweep/site.h"
#include "sweep/submit.h"
#include "sweep/sweep_file.h"
#include "train/capabilities.h"

namespace po = boost::program_options;

namespace ts {
namespace {

namespace fs = std::filesystem;

// The points this build, machine or GPU generation cannot run (train/capabilities.h
// unsupported_reason), index -> reason. The machine is known here only when the site runs the
// campaign on it (the local executor); elsewhere a task finds out when it starts. Decided once
// per backends, precision and GPU generation (ExpandedRun::capability_key): a config is parsed
// again only for the first run of each, not for each of a 10^6-run sweep.
std::map<int64_t, std::string> unsupported_points(const Expansion& expansion, const Site& site) {
  const bool here = site.scheduler == "local";
  std::map<std::string, std::optional<std::string>> decided;
  std::map<int64_t, std::string> out;
  for (const auto& r : expansion.runs) {
    auto it = decided.find(r.capability_key);
    if (it == decided.end()) {
      const ResolvedConfig cfg = parse_run_config(r.config_yaml, expansion.sweep_path, {});
      it = decided.insert_or_assign(r.capability_key, unsupported_reason(cfg, here)).first;
    }
    if (it->second) out[r.index] = *it->second;
  }
  return out;
}

// One line per reason: "unsupported here (REASON): indices 1,3,5".
void print_unsupported(const std::map<int64_t, std::string>& points, std::ostream& out) {
  std::map<std::string, std::vector<int64_t>> by_reason;
  for (const auto& [index, reason] : points) by_reason[reason].push_back(index);
  for (const auto& [reason, indices] : by_reason) {
    out << "  unsupported " << indices.size() << " (" << reason << "): indices ";
    for (size_t i = 0; i < indices.size() && i < 20; ++i) out << (i ? "," : "") << indices[i];
    out << (indices.size() > 20 ? ",...\n" : "\n");
  }
}

constexpr const char* kSweepUsage =
    "usage: trainscale sweep expand SWEEP.yaml [--site SITE.yaml] --out CAMPAIGN_DIR [--max-runs N] [--dry-run]\n"
    "       trainscale sweep submit CAMPAIGN_DIR [--scheduler local|slurm|pbs|simulate] [--throttle K] [--pack K] [--dry-run]\n"
    "       trainscale sweep status CAMPAIGN_DIR [--format text|json]\n"
    "       trainscale sweep resubmit CAMPAIGN_DIR --failed|--preempted|--missing [--scheduler local|slurm|pbs|simulate] [--throttle K] [--pack K] [--dry-run]\n"
    "       trainscale sweep record-end CAMPAIGN_DIR --index I (--exit-code RC --since EPOCH_S [--log FILE] | --not-started)   (job scripts)\n"
    "`trainscale sweep <subcommand> --help` describes each; docs/sweeps.md has the file formats.\n";

int sweep_expand(const std::vector<std::string>& args) {
  po::options_description opts(
      std::string("usage: trainscale sweep expand SWEEP.yaml [--site SITE.yaml] --out CAMPAIGN_DIR [--max-runs N] [--dry-run]\n\n"
                  "Expands a sweep file (docs/sweeps.md) into its runs, validates every run config and\n"
                  "freezes the campaign: CAMPAIGN_DIR/manifest.yaml (runs: index, run_id, config_id,\n"
                  "repetition, config), manifest.hash, sweep.yaml, site.yaml (with --site) and runs/.\n"
                  "With --site, a run naming a gpu, mpi_flavor or dataset.storage that the site lacks is\n"
                  "an error. Expanding the same files again gives a byte-identical manifest; a directory\n"
                  "holding a different manifest is refused. A sweep of more than --max-runs runs (default\n"
                  "10000) is refused before anything is expanded. A long expansion prints its progress on\n"
                  "stderr every --progress-every seconds.\n"
                  "Exit codes: 0 ok, 2 sweep/site/config error.\n\noptions"));
  opts.add_options()("help,h", "show this help")
      ("sweep", po::value<std::string>(), "sweep YAML file (positional)")
      ("site", po::value<std::string>(), "site YAML file (configs/sites/; copied into the campaign)")
      ("out", po::value<std::string>(), "campaign directory to write")
      ("max-runs", po::value<int64_t>()->default_value(kDefaultMaxRuns),
       "refuse a sweep of more runs than this (counted from the list lengths before anything is expanded)")
      ("dry-run", "print the runs as a table and the count per resource shape; write nothing")
      ("progress-every", po::value<double>()->default_value(5.0),
       "seconds between progress lines on stderr while a long sweep expands (0: after every point)");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "sweep");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("sweep")) throw ConfigError("a sweep file is required: trainscale sweep expand SWEEP.yaml --out CAMPAIGN_DIR");
  const bool dry_run = vm.count("dry-run") > 0;
  if (!dry_run && !vm.count("out")) throw ConfigError("--out CAMPAIGN_DIR is required (or --dry-run to only list the runs)");

  const SweepFile sweep = load_sweep_file(vm["sweep"].as<std::string>());
  const std::string site_path = vm.count("site") ? vm["site"].as<std::string>() : "";
  const Site site = site_path.empty() ? default_local_site() : load_site_file(site_path);
  const int64_t max_runs = vm["max-runs"].as<int64_t>();
  if (max_runs < 1) throw ConfigError("--max-runs: expected an integer >= 1, got " + std::to_string(max_runs));
  const double progress_every = vm["progress-every"].as<double>();
  if (!(progress_every >= 0)) throw ConfigError("--progress-every: expected seconds >= 0");
  ExpansionProgress progress(&std::cerr, progress_every);
  const Expansion expansion = expand_sweep(sweep, max_runs, &progress);
  check_expansion_against_site(expansion, site);
  const std::map<int64_t, std::string> unsupported = unsupported_points(expansion, site);
  if (dry_run) {
    std::cout << dry_run_table(expansion);
    print_unsupported(unsupported, std::cout);
    // The allocation shapes `sweep submit` would make on this site (one job array each).
    Campaign c;
    c.dir = vm.count("out") ? vm["out"].as<std::string>() : ".";
    c.name = expansion.campaign;
    c.manifest_path = sweep.path;
    c.resources_yaml = expansion.resources_yaml;
    c.site = site;
    for (const auto& r : expansion.runs) c.runs.push_back({r.index, r.run_id, r.config_id, r.repetition, r.config_yaml, 0});
    std::cout << "job arrays on site " << site.name << " (" << site.scheduler << "):\n";
    for (const auto& g : group_by_shape(c, {})) std::cout << "  " << g.shape.label() << ": " << g.indices.size() << " runs\n";
    return kExitOk;
  }
  const std::string out = vm["out"].as<std::string>();
  const std::string manifest = manifest_yaml(expansion, std::string("trainscale ") + TRAINSCALE_VERSION, &progress);
  write_campaign(out, manifest, sweep.path, site_path);
  std::cout << "campaign " << expansion.campaign << ": " << expansion.runs.size() << " runs -> " << out << "/manifest.yaml ("
            << manifest_hash(manifest) << ")\n";
  for (const auto& [index, reason] : unsupported)  // neither failed nor dropped: a state of its own
    write_marker_here(run_files(out, expansion.runs[static_cast<size_t>(index)].run_id).unsupported, reason);
  if (!unsupported.empty()) {
    std::cout << "campaign " << expansion.campaign << ": " << unsupported.size() << " of " << expansion.runs.size()
              << " runs cannot run " << (site.scheduler == "local" ? "here" : "on their GPU generation")
              << "; marked unsupported (sweep status lists them):\n";
    print_unsupported(unsupported, std::cout);
  }
  return kExitOk;
}

// The local executor's closing line and exit code: 1 when a run failed, 4 when it was
// interrupted or a run ended preempted (resubmit continues), else 0 (unsupported runs included:
// every run this machine can run finished).
int report_local_run(const Campaign& campaign, const LocalRunSummary& sum) {
  std::cout << "campaign " << campaign.name << ": "
            << sum.finished - sum.failed - sum.preempted - sum.skipped - sum.unsupported
            << " runs finished (done or diverged), " << sum.failed << " failed, " << sum.preempted << " preempted, "
            << sum.skipped << " skipped";
  if (sum.unsupported) std::cout << ", " << sum.unsupported << " unsupported here";
  if (sum.interrupted_by) std::cout << ", " << sum.not_started << " not started (interrupted)";
  if (sum.failed > 0 || sum.preempted > 0 || sum.not_started > 0)
    std::cout << "; see trainscale sweep status " << campaign.dir << ", continue with trainscale sweep resubmit "
              << campaign.dir << " --failed --preempted --missing";
  std::cout << "\n";
  if (sum.failed > 0) return kExitFailed;
  return sum.interrupted_by || sum.preempted > 0 ? kExitPreempted : kExitOk;
}

// What `sweep submit` and `sweep resubmit` were asked for.
struct SubmitOptions {
  std::string scheduler;  // local | slurm | pbs | simulate
  int throttle = 0;       // 0: the site's
  int pack = 1;           // runs per array task (slurm, pbs)
  bool dry_run = false;
  std::string tag;        // "" or "resubmit<N>-"
};

// The local executor (and simulate, through it): runs `indices` here, or prints their commands.
int run_here(const Campaign& campaign, const std::vector<int64_t>& indices, const std::vector<ShapeGroup>& groups,
             const SubmitOptions& o) {
  if (o.dry_run && o.scheduler == "simulate") {
    for (int64_t i : indices) std::cout << "  " << join(simulate_command(campaign, i), " ") << "\n";
    return kExitOk;
  }
  if (o.dry_run) {
    for (const auto& g : groups) {
      std::cout << "shape " << g.shape.label() << ": " << g.indices.size() << " runs\n";
      std::string launch;
      for (const auto& a : launch_command(shape_mpi(campaign.site, g.shape), g.shape.workers)) launch += shell_quote(a) + " ";
      for (int64_t i : g.indices)
        std::cout << "  " << launch << "run --manifest " << shell_quote(campaign.dir) << " --index " << i << "    # "
                  << run_label(campaign, campaign.runs[static_cast<size_t>(i)]) << "\n";
    }
    return kExitOk;
  }
  const int k = o.throttle > 0 ? o.throttle : (campaign.site.throttle > 0 ? campaign.site.throttle : 1);
  SubmissionRecord rec;
  rec.scheduler = o.scheduler;
  rec.pid = static_cast<long>(::getpid());
  rec.host = host_name();
  rec.count = static_cast<int64_t>(indices.size());
  rec.index_file = (fs::absolute(campaign_jobs_dir(campaign.dir)) / (o.tag + "local.idx")).lexically_normal().string();
  fs::create_directories(campaign_jobs_dir(campaign.dir));
  write_file_atomically(rec.index_file, index_file_text(pack_indices(indices, 1)));
  record_submissions(campaign.dir, {rec});
  std::cout << "campaign " << campaign.name << ": running " << indices.size() << " runs locally, " << k << " at a time\n";
  return report_local_run(campaign, run_local(campaign, indices, k, std::cout));
}

// "3 runs" / "6 runs in 2 array tasks of up to 3 (packed)" / "... (packed, 2 side by side)".
std::string runs_text(const JobScript& js) {
  if (js.pack <= 1) return std::to_string(js.runs) + " runs";
  return std::to_string(js.runs) + " runs in " + std::to_string(js.count) + " array task(s) of up to " + std::to_string(js.pack) +
         (js.width > 1 ? " (packed, " + std::to_string(js.width) + " side by side)" : " (packed)");
}

// One line per run of a submitted script, "  task 0: index 3 <run_id> (lr=0.1 workers=2)", the
// first 20 (then how many more, and where they are listed).
void print_runs_of(const Campaign& campaign, const JobScript& js) {
  constexpr int64_t kShown = 20;
  int64_t shown = 0;
  const auto tasks = read_index_file(js.index_file);
  for (size_t t = 0; t < tasks.size(); ++t)
    for (int64_t i : tasks[t])
      if (shown++ < kShown)
        std::cout << "  task " << t << ": index " << i << " " << run_label(campaign, campaign.runs.at(static_cast<size_t>(i))) << "\n";
  if (shown > kShown) std::cout << "  ... and " << shown - kShown << " more (" << js.index_file << ")\n";
}

// Slurm / PBS: writes the array scripts and submits them (or not, with --dry-run).
int submit_to_scheduler(const Campaign& campaign, const std::vector<ShapeGroup>& groups, const SubmitOptions& o) {
  const int k = o.throttle > 0 ? o.throttle : campaign.site.throttle;
  const auto scripts = write_job_scripts(campaign, o.scheduler, groups, k, o.tag, o.pack);
  for (const auto& js : scripts) {
    if (o.dry_run) {
      std::cout << (o.scheduler == "slurm" ? "sbatch --parsable " : "qsub ") << js.script << "    # " << runs_text(js) << ", "
                << js.shape << "\n";
    } else {
      SubmissionRecord rec;
      rec.scheduler = o.scheduler;
      rec.job_id = submit_job_script(js);
      rec.script = js.script;
      rec.index_file = js.index_file;
      rec.count = js.count;
      record_submissions(campaign.dir, {rec});  // record each at once: a later refusal keeps the earlier ids
      std::cout << "submitted " << js.script << " as job " << rec.job_id << " (" << runs_text(js) << ", " << js.shape << ")\n";
    }
    print_runs_of(campaign, js);
  }
  if (o.dry_run)
    std::cout << "dry run: " << scripts.size() << " scripts written to " << campaign_jobs_dir(campaign.dir) << ", nothing submitted\n";
  return kExitOk;
}

// The campaign's state, the scheduler asked; what could not be asked in its notes, which go to
// stderr too with `command` ("submit": "trainscale sweep submit: note: ..."; null: not printed).
CampaignStatus current_status(const Campaign& campaign, const char* command) {
  std::vector<std::string> notes;
  CampaignStatus st = campaign_status(campaign, query_scheduler(campaign, &notes));
  if (command)
    for (const auto& n : notes) std::cerr << "trainscale sweep " << command << ": note: " << n << "\n";
  st.notes = std::move(notes);
  return st;
}

// Submits `indices` of `campaign`; shared by submit and resubmit. Every shape is checked against
// the node first (exit 2 before anything is written or submitted).
int submit_indices(const Campaign& campaign, const std::vector<int64_t>& indices, const SubmitOptions& o) {
  if (indices.empty()) {
    std::cout << "campaign " << campaign.name << ": nothing to submit\n";
    return kExitOk;
  }
  const auto groups = group_by_shape(campaign, indices);
  if (o.scheduler == "simulate" && campaign.site.scheduler != "simulate")
    throw ConfigError("--scheduler simulate: the campaign's site (" + campaign.site.path +
                      ") has no `simulate:` entry; expand the sweep with a site of `scheduler: simulate` (docs/sweeps.md)");
  if (o.scheduler != "simulate") check_shapes(campaign, groups, o.scheduler);
  if (o.scheduler == "local" || o.scheduler == "simulate") return run_here(campaign, indices, groups, o);
  return submit_to_scheduler(campaign, groups, o);
}

// --scheduler (else `fallback`), --throttle, --pack and --dry-run of submit and resubmit. --pack K,
// else the site's `pack` for Slurm and PBS; 1 for the local executor, which refuses an explicit
// K > 1 (it runs no allocations).
SubmitOptions submit_options(const po::variables_map& vm, const Campaign& campaign, const std::string& fallback,
                             const std::string& tag) {
  SubmitOptions o;
  o.scheduler = vm.count("scheduler") ? vm["scheduler"].as<std::string>() : fallback;
  if (o.scheduler != "local" && o.scheduler != "slurm" && o.scheduler != "pbs" && o.scheduler != "simulate")
    throw ConfigError("--scheduler: '" + o.scheduler + "' is not accepted; accepted: local, slurm, pbs, simulate");
  o.throttle = vm.count("throttle") ? vm["throttle"].as<int>() : 0;
  if (o.throttle < 0) throw ConfigError("--throttle: expected an integer >= 1");
  const bool allocations = o.scheduler == "slurm" || o.scheduler == "pbs";
  o.pack = vm.count("pack") ? vm["pack"].as<int>() : allocations ? campaign.site.pack : 1;
  pack_indices({}, o.pack);  // the range check
  if (o.pack > 1 && !allocations)
    throw ConfigError("--pack " + std::to_string(o.pack) + ": packing runs into one allocation needs --scheduler slurm or pbs; the " +
                      o.scheduler + " executor starts each run by itself (use --throttle for runs at a time)");
  o.dry_run = vm.count("dry-run") > 0;
  o.tag = tag;
  return o;
}

int sweep_submit(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale sweep submit CAMPAIGN_DIR [--scheduler local|slurm|pbs|simulate] [--throttle K] [--pack K] [--dry-run]\n\n"
      "Submits the runs of a campaign that are not done (a DONE marker and a complete run file),\n"
      "running or queued. Every resource shape is first checked against the site's node (this\n"
      "machine for local): a shape that can never be scheduled is refused, nothing submitted.\n"
      "slurm/pbs: one job-array script per resource shape (split over the site's max array size)\n"
      "in CAMPAIGN_DIR/jobs/, submitted with sbatch --parsable / qsub; job ids go to\n"
      "jobs/submissions.yaml; each submitted run is listed by index, run id and swept values.\n"
      "--pack K (or the site's `pack`): each array task runs K runs one after another in its\n"
      "allocation (walltime K x the runs'), or, with the site's pack_side_by_side, W at once where\n"
      "a node (up to pack_nodes nodes) holds W runs (walltime ceil(K/W) x the runs'; docs/sweeps.md\n"
      "\"Packed allocations\"); each run keeps its own markers and run file, a failed run does not stop\n"
      "the others, a preempted task resumes its unfinished runs when requeued.\n"
      "local: runs them on this machine K at a time through the site's launcher, one progress\n"
      "line per finished run (index, run id and swept values); each task holds runs/<run_id>.lock,\n"
      "so a second submit never runs a task twice. Ctrl-C / SIGTERM: the running tasks get SIGUSR1\n"
      "(checkpoint and stop: PREEMPTED), what is left after the site's signal_seconds (60) or a\n"
      "second Ctrl-C is killed (FAILED \"interrupted\"). simulate: like local, with trainscale-sim\n"
      "per run on the site's simulated cluster (docs/sweeps.md \"Simulated campaigns\").\n"
      "The scheduler defaults to the campaign site's (local without a site).\n"
      "Exit codes: 0 ok, 1 some local runs failed or the scheduler refused, 2 usage/config error\n"
      "(a shape that does not fit included), 4 local: interrupted or a run preempted.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("campaign", po::value<std::string>(), "campaign directory (positional)")
      ("scheduler", po::value<std::string>(), "local | slurm | pbs | simulate")
      ("throttle", po::value<int>(), "runs at a time (array %K / max_run_subjobs; local executor: parallel runs)")
      ("pack", po::value<int>(), "slurm/pbs: runs per array task in one allocation, one after another, or side by side as a node holds them with the site's pack_side_by_side (1..1000; default: the site's pack, else 1)")
      ("dry-run", "write the scripts (slurm/pbs) or print the launch commands (local); submit nothing");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "campaign");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("campaign")) throw ConfigError("a campaign directory is required: trainscale sweep submit CAMPAIGN_DIR");
  const Campaign campaign = load_campaign(vm["campaign"].as<std::string>());
  const SubmitOptions o = submit_options(vm, campaign, campaign.site.scheduler, "");
  const CampaignStatus st = current_status(campaign, "submit");
  std::vector<int64_t> todo;
  int64_t already = 0, elsewhere = 0, unsupported = 0;
  for (const auto& r : st.runs) {
    if (r.state == RunState::done || r.state == RunState::diverged) ++already;
    else if (r.state == RunState::running || r.state == RunState::pending) ++elsewhere;
    else if (r.state == RunState::unsupported) ++unsupported;
    else todo.push_back(r.index);
  }
  if (already > 0) std::cout << "campaign " << campaign.name << ": " << already << " runs already done, skipped\n";
  if (unsupported > 0)
    std::cout << "campaign " << campaign.name << ": " << unsupported << " runs unsupported (trainscale sweep status "
              << campaign.dir << " says why), skipped\n";
  if (elsewhere > 0)
    std::cout << "campaign " << campaign.name << ": " << elsewhere << " runs running or queued (trainscale sweep status "
              << campaign.dir << "), skipped\n";
  return submit_indices(campaign, todo, o);
}

int sweep_status(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale sweep status CAMPAIGN_DIR [--format text|json]\n\n"
      "Counts the campaign's runs: total, done, diverged, failed (with reasons), preempted,\n"
      "running, pending (asked from the scheduler when the campaign was submitted to one, with\n"
      "its reason: squeue %r, qstat comment; the runs of a packed array task one at a time: the\n"
      "one it runs is running, the ones after it pending), missing (the text form counts runs no\n"
      "submission holds as \"not submitted\") and unsupported (what this build, machine or\n"
      "GPU generation cannot run: marked by sweep expand or by the task, with the reason). A DONE\n"
      "marker counts only when its run file opens, has a complete /summary and is this run's (its\n"
      "run_id and config_id); otherwise the run is failed, saying why, or missing when the file was\n"
      "deleted (as the analysis says).\n"
      "json: one object with exactly the keys total, done, diverged, failed, preempted, running,\n"
      "pending, pending_reasons, missing (not submitted ones included), unsupported; failed,\n"
      "preempted, unsupported and pending_reasons are lists of {index, run_id, reason}, the\n"
      "others are counts.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("campaign", po::value<std::string>(), "campaign directory (positional)")
      ("format", po::value<std::string>()->default_value("text"), "text | json");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "campaign");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("campaign")) throw ConfigError("a campaign directory is required: trainscale sweep status CAMPAIGN_DIR");
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "json") throw ConfigError("--format: '" + format + "' is not accepted; accepted: text, json");
  const Campaign campaign = load_campaign(vm["campaign"].as<std::string>());
  const CampaignStatus st = current_status(campaign, nullptr);
  std::cout << (format == "json" ? status_json(st) : status_text(campaign, st));
  if (format == "json")  // text: the notes are in the report
    for (const auto& n : st.notes) std::cerr << "trainscale sweep status: note: " << n << "\n";
  return kExitOk;
}

int sweep_resubmit(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale sweep resubmit CAMPAIGN_DIR --failed|--preempted|--missing [--scheduler local|slurm|pbs|simulate] [--throttle K] [--pack K] [--dry-run]\n\n"
      "Resubmits exactly the runs `sweep status` calls failed (--failed; a DONE marker in front of a\n"
      "broken run file or another run's included), preempted (--preempted: they resume from their\n"
      "checkpoint; runs a stopped packed task never started included), missing (--missing: no run\n"
      "file, no marker, not queued; never submitted and a run file deleted behind DONE included), or\n"
      "any union of them,\n"
      "against the same manifest, as new array scripts jobs/resubmit<N>-*. The scheduler defaults\n"
      "to the last submission's.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("campaign", po::value<std::string>(), "campaign directory (positional)")
      ("failed", "resubmit the failed runs")
      ("preempted", "resubmit the preempted runs (not the failed ones)")
      ("missing", "resubmit the missing runs")
      ("scheduler", po::value<std::string>(), "local | slurm | pbs | simulate")
      ("throttle", po::value<int>(), "runs at a time")
      ("pack", po::value<int>(), "slurm/pbs: runs per array task (default: the site's pack, else 1)")
      ("dry-run", "write the scripts or print the commands; submit nothing");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "campaign");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("campaign")) throw ConfigError("a campaign directory is required: trainscale sweep resubmit CAMPAIGN_DIR --failed");
  if (!vm.count("failed") && !vm.count("preempted") && !vm.count("missing"))
    throw ConfigError("say what to resubmit: --failed, --preempted, --missing or several of them");
  const Campaign campaign = load_campaign(vm["campaign"].as<std::string>());
  const auto subs = read_submissions(campaign.dir);
  const SubmitOptions o = submit_options(vm, campaign, subs.empty() ? campaign.site.scheduler : subs.back().scheduler,
                                         next_resubmit_tag(campaign.dir));
  const CampaignStatus st = current_status(campaign, "resubmit");
  std::vector<int64_t> indices;
  for (const auto& r : st.runs)
    if ((vm.count("failed") && r.state == RunState::failed) || (vm.count("preempted") && r.state == RunState::preempted) ||
        (vm.count("missing") && r.state == RunState::missing))
      indices.push_back(r.index);
  std::cout << "campaign " << campaign.name << ": resubmitting " << indices.size() << " runs";
  for (size_t i = 0; i < indices.size() && i < 20; ++i) std::cout << (i ? "," : " (indices ") << indices[i];
  std::cout << (indices.empty() ? "" : indices.size() > 20 ? ",...)" : ")") << "\n";
  return submit_indices(campaign, indices, o);
}

int sweep_record_end(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale sweep record-end CAMPAIGN_DIR --index I --exit-code RC --since EPOCH_S [--log FILE]\n"
      "       trainscale sweep record-end CAMPAIGN_DIR --index I --not-started\n\n"
      "What a Slurm or PBS job script runs after its task's launcher ended with RC (not 0, 3 or 4):\n"
      "when the task recorded no outcome since EPOCH_S (a complete result, a FAILED or PREEMPTED\n"
      "marker), it writes runs/<run_id>.FAILED saying how the launcher ended and what its output\n"
      "FILE says (the rank it lost, Slurm's \"Node failure on n2\"), and removes the attempt's\n"
      "RUNNING marker, so that `sweep status` shows the task failed with that reason instead of\n"
      "running. --not-started: a run of a packed array task that was stopped (preempted) before\n"
      "the run's turn; unless it is done or already preempted, writes its PREEMPTED marker (\"not\n"
      "started: ...\"), so that it runs when the task is requeued or resubmitted with --preempted.\n"
      "--signalled: the script passed a stop signal on to this run; without it, a PREEMPTED marker\n"
      "that rank 0 wrote at a signal and no step boundary confirmed was the launcher ending the job\n"
      "after a rank died, and the run is recorded FAILED.\n"
      "Prints the reason it wrote, or nothing. Exit codes: 0 ok, 2 usage error.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("campaign", po::value<std::string>(), "campaign directory (positional)")
      ("index", po::value<int64_t>(), "manifest index of the task")
      ("exit-code", po::value<int>(), "the launcher's exit status")
      ("since", po::value<int64_t>(), "when the task started, seconds since the epoch (date +%s)")
      ("log", po::value<std::string>()->default_value(""), "the launcher's output (the job's log)")
      ("not-started", "the run never started: its packed task was stopped before its turn")
      ("signalled", "the job script passed a stop signal on to this run");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "campaign");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  const bool not_started = vm.count("not-started") > 0;
  if (not_started && (vm.count("exit-code") || vm.count("since")))
    throw ConfigError("--not-started records a run that never ran: drop --exit-code and --since");
  for (const char* key : {"campaign", "index", "exit-code", "since"})
    if (!vm.count(key) && !(not_started && (std::string(key) == "exit-code" || std::string(key) == "since")))
      throw ConfigError(std::string("--") + key + " is required: trainscale sweep record-end CAMPAIGN_DIR --index I "
                        "(--exit-code RC --since EPOCH_S [--log FILE] | --not-started)");
  const Campaign campaign = load_campaign(vm["campaign"].as<std::string>());
  const int64_t index = vm["index"].as<int64_t>();
  if (index < 0 || index >= static_cast<int64_t>(campaign.runs.size()))
    throw ConfigError("--index " + std::to_string(index) + ": the campaign has runs 0.." +
                      std::to_string(campaign.runs.size() - 1));
  const auto& run = campaign.runs[static_cast<size_t>(index)];
  if (not_started) {
    if (const std::optional<std::string> reason = record_not_started(campaign.dir, run))
      std::cout << "run " << run.run_id << " (index " << index << "): preempted: " << *reason << "\n";
    return kExitOk;
  }
  LauncherEnd end;
  end.how = "exited with code " + std::to_string(vm["exit-code"].as<int>());
  end.log_path = vm["log"].as<std::string>();
  if (!end.log_path.empty()) end.log_reference = "see " + end.log_path;
  end.signalled = vm.count("signalled") > 0;
  // file_time_type has no portable conversion from the epoch: go through "now" on both clocks.
  // Both ends are whole seconds (date +%s, time()), so the start is known to within a second:
  // one second more keeps the marker of a task that failed in its first second its own (an
  // earlier attempt's marker is older than a requeue).
  const auto ago = std::chrono::seconds(std::time(nullptr) - vm["since"].as<int64_t>() + 1);
  end.since = fs::file_time_type::clock::now() - ago;
  if (const std::optional<std::string> reason = record_launcher_end(campaign.dir, run, end))
    std::cout << "run " << run.run_id << " (index " << index << "): failed: " << *reason << "\n";
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
  if (sub == "submit") return sweep_submit(rest);
  if (sub == "status") return sweep_status(rest);
  if (sub == "resubmit") return sweep_resubmit(rest);
  if (sub == "record-end") return sweep_record_end(rest);
  throw ConfigError("unknown sweep subcommand '" + sub + "'; available: expand, submit, status, resubmit, record-end");
}

}  // namespace ts
