// `trainscale show RUN.h5 [--json|--csv]`: a run file read by a person or a script without
// writing Python: the run's identity, its /summary, the per-phase times, a per-rank table
// (phases, accelerator utilisation) and the resolved config (docs/hdf5-schema.md "Reading a run file").
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/file_io.h"
#include "metrics/mllog.h"
#include "metrics/run_file_view.h"
#include "metrics/utilisation.h"
#include "train/summary.h"

namespace po = boost::program_options;

namespace ts {
namespace {

const char* kShowUsage =
    "usage: trainscale show RUN.h5 [--json | --csv | --mllog PATH]\n\n"
    "Prints a run file: the run (id, status, model, backend, precision, ranks, hosts, MPI), its /summary, the\n"
    "seconds of each phase per step (median, p90 and mean over the steps after warm-up, each step's value the\n"
    "mean over ranks; share = the phase's part of the step time), one row per rank (its hosts, mean seconds\n"
    "per phase, accelerator utilisation au = (forward + backward + optimizer) / step, and the data-wait\n"
    "share), and the resolved config. --json prints the same as one JSON object, --csv as rows of\n"
    "section,name,rank,value (rank empty where a value is not per rank). Numbers are full precision in\n"
    "--json and --csv; NaN (not applicable) is null in JSON and empty in CSV. --mllog PATH writes the run's\n"
    "MLPerf logging stream (:::MLLOG lines, as logging.mllog does during a run; docs/interoperability.md).\n"
    "Exit codes: 0 ok, 1 the file cannot be read as a run file, 2 usage error.\n";

struct PhaseStats {
  std::string phase;
  double median = NAN, p90 = NAN, mean = NAN, share = NAN;
};

struct RankRow {
  int64_t rank = 0;
  std::string host, local_rank;
  std::vector<double> phase_means;  // in the order of the view's phases()
  double au = NAN, data_wait_share = NAN;
};

struct ShowTables {
  int64_t first_step = 0;  // the first step after warm-up
  std::vector<std::string> phases;
  std::vector<PhaseStats> phase_stats;
  std::vector<RankRow> ranks;
};

PhaseStats phase_stats(const RunFileView& v, const std::string& phase, int64_t first) {
  const std::vector<float>& t = v.timing.at(phase);
  const std::vector<float>& step = v.timing.count("step") ? v.timing.at("step") : t;
  PhaseStats p;
  p.phase = phase;
  std::vector<double> per_step;
  double sum = 0, step_sum = 0;
  for (int64_t s = first; s < v.steps; ++s) {
    double mean = 0;
    for (int64_t r = 0; r < v.ranks; ++r) {
      mean += t[static_cast<size_t>(s * v.ranks + r)];
      step_sum += step[static_cast<size_t>(s * v.ranks + r)];
    }
    sum += mean;
    per_step.push_back(mean / static_cast<double>(v.ranks));
  }
  p.median = percentile(per_step, 50);
  p.p90 = percentile(per_step, 90);
  p.mean = per_step.empty() ? NAN : sum / static_cast<double>(v.ranks) / static_cast<double>(per_step.size());
  p.share = step_sum > 0 ? sum / step_sum : NAN;
  return p;
}

ShowTables tables_of(const RunFileView& v) {
  ShowTables t;
  const double warmup = v.summary_value("warmup_steps");
  t.first_step = std::isfinite(warmup) ? std::clamp<int64_t>(static_cast<int64_t>(warmup), 0, v.steps) : 0;
  t.phases = v.phases();
  for (const std::string& p : t.phases) t.phase_stats.push_back(phase_stats(v, p, t.first_step));
  // Files written before /utilisation existed: the same figures from their phases.
  std::vector<RankUtilisation> computed;
  if (v.au.empty() && v.timing.count("step")) computed = rank_utilisation(v.timing, v.ranks, t.first_step);
  const double measured = static_cast<double>(v.steps - t.first_step);
  for (int64_t r = 0; r < v.ranks; ++r) {
    RankRow row;
    row.rank = r;
    row.host = v.rank_hosts.empty() ? "" : v.rank_hosts[static_cast<size_t>(r)];
    row.local_rank = v.local_ranks.empty() ? "" : v.local_ranks[static_cast<size_t>(r)];
    for (const std::string& p : t.phases) {
      double sum = 0;
      for (int64_t s = t.first_step; s < v.steps; ++s) sum += v.timing.at(p)[static_cast<size_t>(s * v.ranks + r)];
      row.phase_means.push_back(measured > 0 ? sum / measured : NAN);
    }
    const size_t at = static_cast<size_t>(r);
    if (!v.au.empty()) row.au = v.au[at], row.data_wait_share = v.data_wait_share[at];
    else if (!computed.empty()) row.au = computed[at].au, row.data_wait_share = computed[at].data_wait_share;
    t.ranks.push_back(std::move(row));
  }
  return t;
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return std::isnan(value) ? "-" : shortest_number_text(value);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

// A figure for people: 4 significant digits, whole numbers as they are.
std::string figure(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "-" : shortest_number_text(value);
  if (value == std::floor(value) && std::fabs(value) < 1e12) return shortest_number_text(value);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", value);
  return buf;
}

std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

void print_text_header(std::ostream& out, const RunFileView& v) {
  const auto a = [&v](const char* name) { return v.attribute(name); };
  out << "run       " << a("run_id") << "  status " << a("status") << (a("message").empty() ? "" : ": " + a("message"))
      << "\nfile      " << v.path << "\nmodel     " << v.model_name << ", " << v.model_parameters
      << " parameters; " << v.config_value("dataset.name") << "\ndevice    " << a("backend") << " " << a("precision")
      << " on " << a("device_name") << " (" << a("isa") << ")\nranks     " << v.ranks << " x " << a("threads")
      << " threads on " << a("hosts") << "; " << a("mpi_flavor") << " " << a("mpi_version") << "\ntime      "
      << a("start_time") << " .. " << a("end_time") << "; " << v.steps << " steps, " << v.eval_step.size()
      << " evaluations\nversion   trainscale " << a("version") << " (commit " << a("git_sha") << ")\n";
  for (const std::string& warning : split(a("warnings"), '\n'))
    if (!warning.empty()) out << "warning   " << warning << "\n";
}

void print_text(std::ostream& out, const RunFileView& v, const ShowTables& t) {
  print_text_header(out, v);
  out << "\nsummary\n";
  for (const auto& [name, value] : v.summary) out << "  " << padded(name, 26) << figure(value) << "\n";
  for (const auto& [name, text] : v.summary_text) out << "  " << padded(name, 26) << text << "\n";
  out << "\nseconds per step by phase (steps " << t.first_step + 1 << ".." << v.steps
      << " after warm-up; each step's value the mean over ranks)\n  " << padded("phase", 12) << padded("median", 12)
      << padded("p90", 12) << padded("mean", 12) << "share of step\n";
  for (const PhaseStats& p : t.phase_stats)
    out << "  " << padded(p.phase, 12) << padded(fixed(p.median, 6), 12) << padded(fixed(p.p90, 6), 12)
        << padded(fixed(p.mean, 6), 12) << fixed(100 * p.share, 1) << "%\n";
  out << "\nper rank (mean seconds per step after warm-up; au = (forward + backward + optimizer) / step)\n  "
      << padded("rank", 6) << padded("host", 14) << padded("local", 7);
  for (const std::string& p : t.phases) out << padded(p, 12);
  out << padded("au", 8) << "data_wait_share\n";
  for (const RankRow& r : t.ranks) {
    out << "  " << padded(std::to_string(r.rank), 6) << padded(r.host, 14) << padded(r.local_rank, 7);
    for (double m : r.phase_means) out << padded(fixed(m, 6), 12);
    out << padded(fixed(r.au, 3), 8) << fixed(r.data_wait_share, 3) << "\n";
  }
  out << "\nconfig\n";
  for (const auto& [key, value] : v.config) out << "  " << key << ": " << value << "\n";
}

// Text values as JSON strings, those named in `numeric` as JSON numbers.
std::string json_object(const std::map<std::string, std::string>& m, const std::set<std::string>& numeric = {}) {
  std::vector<std::string> items;
  for (const auto& [k, val] : m)
    items.push_back(json_quote(k) + ": " + (numeric.count(k) ? json_number(std::stod(val)) : json_quote(val)));
  return "{" + join(items) + "}";
}

void print_json(std::ostream& out, const RunFileView& v, const ShowTables& t) {
  std::vector<std::string> summary, phases, ranks;
  for (const auto& [k, val] : v.summary) summary.push_back(json_quote(k) + ": " + json_number(val));
  for (const auto& [k, val] : v.summary_text) summary.push_back(json_quote(k) + ": " + json_quote(val));
  for (const PhaseStats& p : t.phase_stats)
    phases.push_back("{\"phase\": " + json_quote(p.phase) + ", \"median\": " + json_number(p.median) +
                     ", \"p90\": " + json_number(p.p90) + ", \"mean\": " + json_number(p.mean) +
                     ", \"share\": " + json_number(p.share) + "}");
  for (const RankRow& r : t.ranks) {
    std::vector<std::string> means;
    for (size_t i = 0; i < t.phases.size(); ++i) means.push_back(json_quote(t.phases[i]) + ": " + json_number(r.phase_means[i]));
    ranks.push_back("{\"rank\": " + std::to_string(r.rank) + ", \"host\": " + json_quote(r.host) +
                    ", \"local_rank\": " + json_quote(r.local_rank) + ", \"phase_means\": {" + join(means) +
                    "}, \"au\": " + json_number(r.au) + ", \"data_wait_share\": " + json_number(r.data_wait_share) + "}");
  }
  out << "{\"file\": " << json_quote(v.path) << ",\n \"run\": " << json_object(v.attributes, v.numeric_attributes) << ",\n \"model\": {\"name\": "
      << json_quote(v.model_name) << ", \"parameters\": " << v.model_parameters
      << ", \"flops_per_sample\": " << v.model_flops_per_sample << "},\n \"steps\": " << v.steps
      << ", \"ranks\": " << v.ranks << ", \"evaluations\": " << v.eval_step.size()
      << ", \"first_measured_step\": " << t.first_step + 1 << ",\n \"summary\": {" << join(summary)
      << "},\n \"phases\": [" << join(phases) << "],\n \"per_rank\": [" << join(ranks) << "],\n \"config\": "
      << json_object(v.config) << "}\n";
}

// One CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_number(double value) { return std::isnan(value) ? "" : shortest_number_text(value); }

void print_csv(std::ostream& out, const RunFileView& v, const ShowTables& t) {
  const auto row = [&out](const std::string& section, const std::string& name, const std::string& rank,
                          const std::string& value) {
    out << section << "," << csv_field(name) << "," << rank << "," << csv_field(value) << "\n";
  };
  out << "section,name,rank,value\n";
  for (const auto& [k, val] : v.attributes) row("run", k, "", val);
  for (const auto& [k, val] : v.summary) row("summary", k, "", csv_number(val));
  for (const auto& [k, val] : v.summary_text) row("summary", k, "", val);
  for (const PhaseStats& p : t.phase_stats) {
    row("phase_median", p.phase, "", csv_number(p.median));
    row("phase_p90", p.phase, "", csv_number(p.p90));
    row("phase_mean", p.phase, "", csv_number(p.mean));
    row("phase_share", p.phase, "", csv_number(p.share));
  }
  for (const RankRow& r : t.ranks) {
    const std::string rank = std::to_string(r.rank);
    row("rank", "host", rank, r.host);
    row("rank", "local_rank", rank, r.local_rank);
    for (size_t i = 0; i < t.phases.size(); ++i) row("rank_phase_mean", t.phases[i], rank, csv_number(r.phase_means[i]));
    row("rank", "au", rank, csv_number(r.au));
    row("rank", "data_wait_share", rank, csv_number(r.data_wait_share));
  }
  for (const auto& [k, val] : v.config) row("config", k, "", val);
}

}  // namespace

int command_show(const std::vector<std::string>& args) {
  po::options_description opts(std::string(kShowUsage) + "\noptions");
  opts.add_options()("help,h", "show this help")("file", po::value<std::string>(), "the run file (RUN.h5)")
      ("json", "print one JSON object")("csv", "print rows of section,name,rank,value")
      ("mllog", po::value<std::string>(), "write the run's MLPerf logging stream (:::MLLOG lines) to this file instead");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "file");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("file")) throw ConfigError("a run file is required: trainscale show RUN.h5 [--json | --csv]");
  if (vm.count("json") && vm.count("csv")) throw ConfigError("--json and --csv exclude each other: give one of them");
  const RunFileView view = read_run_file_view(vm["file"].as<std::string>());
  if (vm.count("mllog")) {
    if (vm.count("json") || vm.count("csv")) throw ConfigError("--mllog writes a file: give it without --json or --csv");
    write_file_atomically(vm["mllog"].as<std::string>(), mllog_text(view));
    std::cout << "mllog: " << vm["mllog"].as<std::string>() << "\n";
    return kExitOk;
  }
  const ShowTables tables = tables_of(view);
  if (vm.count("json")) print_json(std::cout, view, tables);
  else if (vm.count("csv")) print_csv(std::cout, view, tables);
  else print_text(std::cout, view, tables);
  return kExitOk;
}

}  // namespace ts
