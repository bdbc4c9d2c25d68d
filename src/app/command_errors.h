// The one mapping from what a subcommand throws to its message and exit code (core/error.h:
// 0 ok, 1 runtime failure, 2 usage/config error, 3 diverged, 4 preempted), shared by the
// `trainscale` and `trainscale-sim` drivers so both say and return the same for the same error.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ts {

// Runs `body` (one subcommand) and returns its exit code; an exception becomes a message on
// stderr ("<program> <command>: configuration error: ...") and the code of its kind. Under an
// MPI launcher (launcher_rank() > 0) a configuration or usage error is not printed: every rank
// reads the same config and arguments and finds the same error, which rank 0 prints once.
int run_command_reporting_errors(const std::string& program, const std::string& command,
                                 const std::function<int()>& body);

// One subcommand of a driver: its name and what runs it with the arguments after the name.
using DriverCommand = std::pair<const char*, int (*)(const std::vector<std::string>&)>;

// The main() of a driver (`trainscale`, `trainscale-sim`): no command, --help, -h or help prints
// `usage` (exit 2 without a command, else 0); --version or -V prints `version` when it is not
// empty; else the first argument names one of `commands`, run through
// run_command_reporting_errors with the remaining arguments; an unknown one prints the usage, 2.
int run_driver(const std::string& program, const std::string& usage, const std::string& version,
               const std::vector<DriverCommand>& commands, int argc, char** argv);

// This process's rank as its launcher tells it before MPI starts: OMPI_COMM_WORLD_RANK (Open
// MPI), PMI_RANK (MPICH's and Intel MPI's Hydra), PMIX_RANK, MV2_COMM_WORLD_RANK (MVAPICH2),
// SLURM_PROCID (srun); -1 when none is set (not launched by one) or it is not a number.
int launcher_rank();

// "<who>: rank R on HOST: <text>" on stderr in one write: under mpirun the ranks share its
// stderr, and mpirun prints its own MPI_ABORT notice among them; a line written piece by piece
// can be torn apart.
void print_rank_error(const std::string& who, int rank, const std::string& host, const std::string& text);

// The message of an error that is neither a ConfigError nor a RuntimeError: an allocation that
// failed (std::bad_alloc) or a resource the system refused (std::system_error) say so and what
// to change, anything else is "internal error: ...".
std::string unexpected_error_text(const std::exception& e);

}  // namespace ts
