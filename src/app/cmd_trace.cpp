// `trainscale trace RUN.h5 -o trace.json`: the run's per-rank phases as a Chrome trace for
// Perfetto (ui.perfetto.dev) or chrome://tracing (metrics/trace_events.h says how the phases are placed).
#include <boost/program_options.hpp>

#include <iostream>
#include <optional>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/error.h"
#include "core/file_io.h"
#include "metrics/run_file_view.h"
#include "metrics/trace_events.h"

namespace po = boost::program_options;

namespace ts {
namespace {

const char* kTraceUsage =
    "usage: trainscale trace RUN.h5 -o TRACE.json\n\n"
    "Writes the run's per-rank phases (data_wait, forward, backward, comm_wait, optimizer on each rank's\n"
    "training thread; comm and its parts on its communication thread; each bucket's exchange on its buckets\n"
    "thread, from /bucket_timing; evaluations as instants) as Chrome trace events (JSON) that Perfetto\n"
    "(ui.perfetto.dev) and chrome://tracing open: one process per rank. Durations are the run file's /timing\n"
    "values; their starts are placed in the step's order (the file holds durations only); the buckets' starts\n"
    "are recorded (docs/interoperability.md \"Timelines\"). A file without /bucket_timing (older, or hogwild,\n"
    "nccl) gives a trace without buckets, and says so. Exit codes: 0 ok, 1 the file cannot be read or the\n"
    "trace cannot be written, 2 usage error.\n";

}  // namespace

int command_trace(const std::vector<std::string>& args) {
  po::options_description opts(std::string(kTraceUsage) + "\noptions");
  opts.add_options()("help,h", "show this help")("file", po::value<std::string>(), "the run file (RUN.h5)")
      ("output,o", po::value<std::string>(), "the trace file to write (JSON; '-' for standard output)");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts, "file");
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("file") || !vm.count("output"))
    throw ConfigError("a run file and -o TRACE.json are required: trainscale trace RUN.h5 -o TRACE.json");
  const RunFileView run = read_run_file_view(vm["file"].as<std::string>());
  const std::string json = chrome_trace_json(run);
  const std::string out = vm["output"].as<std::string>();
  if (out == "-") {
    std::cout << json;
    std::cerr << "trace: buckets: " << buckets_note(run) << "\n";
    return kExitOk;
  }
  write_file_atomically(out, json);
  std::cout << "trace: " << out << " (open it in ui.perfetto.dev or chrome://tracing)\n"
            << "trace: buckets: " << buckets_note(run) << "\n";
  return kExitOk;
}

}  // namespace ts
