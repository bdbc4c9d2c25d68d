// The subcommands of trainscale-sim. Each returns a process exit code (core/error.h) or throws
// ConfigError / RuntimeError, which main() turns into messages and exit codes.
#pragma once

#include <string>
#include <vector>

namespace ts::sim {

int command_run(const std::vector<std::string>& args);    // sim/cmd_run.cpp
int command_bench(const std::vector<std::string>& args);  // sim/cmd_bench.cpp

}  // namespace ts::sim
