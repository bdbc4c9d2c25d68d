// Command-line options of every subcommand of `trainscale` and `trainscale-sim` (Boost
// program_options): one parse that handles --help and one reader for repeatable options, so
// each command only declares its options and checks what it requires.
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <string>
#include <vector>

namespace ts {

// Parses `args` against `opts`; `positional` names the option that a bare argument fills (at
// most one), or is null. With --help (-h) prints `opts` to stdout and returns nothing: the
// command then returns kExitOk. Unknown options and bad values throw boost's errors, which
// run_command_reporting_errors turns into exit 2.
std::optional<boost::program_options::variables_map> parse_command_options(
    const std::vector<std::string>& args, const boost::program_options::options_description& opts,
    const char* positional = nullptr);

// Every value of a repeatable string option (`--set`, `--cluster-set`), in order; empty when
// it was not given.
std::vector<std::string> option_strings(const boost::program_options::variables_map& vm, const char* name);

}  // namespace ts
