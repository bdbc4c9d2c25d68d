// Errors to messages and exit codes (see command_errors.h).
#include "app/command_errors.h"

#include <boost/program_options/errors.hpp>

#include <cstdlib>
#include <iostream>
#include <new>
#include <stdexcept>
#include <system_error>

#include "core/error.h"
#include "core/strings.h"

namespace ts {

std::string unexpected_error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e))
    return std::string("out of memory: an allocation failed (") + e.what() +
           "); the run needs more memory than this process may use: lower batch_per_worker, eval.batch or "
           "dataset.prefetch, or run a smaller model (docs/reliability.md \"Memory\")";
  if (dynamic_cast<const std::system_error*>(&e))
    return std::string("the system refused a resource: ") + e.what() +
           " (a thread or process limit? lower threads or dataset.loader_threads, or check ulimit -u)";
  return std::string("internal error: ") + e.what();
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    return *end == '\0' && rank >= 0 && rank < (1L << 30) ? static_cast<int>(rank) : -1;
  }
  return -1;
}

void print_rank_error(const std::string& who, int rank, const std::string& host, const std::string& text) {
  std::cerr << (who + ": rank " + std::to_string(rank) + " on " + host + ": " + text + "\n") << std::flush;
}

// Each message is built first and written in one write: under mpirun every rank shares its
// stderr, and a line written piece by piece can be torn apart by another rank's.
int run_command_reporting_errors(const std::string& program, const std::string& command,
                                 const std::function<int()>& body) {
  const std::string who = program + " " + command;
  try {
    return body();
  } catch (const ConfigError& e) {
    if (launcher_rank() <= 0) std::cerr << (who + ": configuration error: " + terminal_safe(e.what()) + "\n");
    return kExitUsage;
  } catch (const boost::program_options::error& e) {
    if (launcher_rank() <= 0) std::cerr << (who + ": usage error: " + terminal_safe(e.what()) + " (see " + who + " --help)\n");
    return kExitUsage;
  } catch (const PreemptedError& e) {
    std::cerr << (who + ": preempted: " + terminal_safe(e.what()) + "\n");
    return kExitPreempted;
  } catch (const RuntimeError& e) {
    std::cerr << (who + ": error: " + terminal_safe(e.what()) + "\n");
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << (who + ": " + terminal_safe(unexpected_error_text(e)) + "\n");
    return kExitFailed;
  }
}

int run_driver(const std::string& program, const std::string& usage, const std::string& version,
               const std::vector<DriverCommand>& commands, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << usage;
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (!version.empty() && (args[0] == "--version" || args[0] == "-V")) {
    std::cout << version;
    return kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  return run_command_reporting_errors(program, command, [&]() -> int {
    for (const auto& [name, run] : commands)
      if (command == name) return run(args);
    std::cerr << program << ": unknown command '" << command << "'\n\n" << usage;
    return kExitUsage;
  });
}

}  // namespace ts
