// The subcommands of the `trainscale` driver. Each returns a process exit code (core/error.h)
// or throws ConfigError / RuntimeError, which main() turns into messages and exit codes.
#pragma once

#include <exception>
#include <string>
#include <vector>

namespace ts {

int command_run(const std::vector<std::string>& args);
int command_info(const std::vector<std::string>& args);
int command_sweep(const std::vector<std::string>& args);  // app/cmd_sweep.cpp
int command_bench(const std::vector<std::string>& args);  // app/cmd_bench.cpp
int bench_io_command(const std::vector<std::string>& args);  // app/cmd_bench_io.cpp (bench io)
int command_predict(const std::vector<std::string>& args);    // app/cmd_predict.cpp
int command_calibrate(const std::vector<std::string>& args);  // app/cmd_calibrate.cpp
// Commands of the contract that later work implements: a clear usage error until then.
int command_not_built(const std::string& name, const std::vector<std::string>& args);

// The message of an error that is neither a ConfigError nor a RuntimeError (app/main.cpp): an
// allocation that failed (std::bad_alloc) or a resource the system refused (std::system_error)
// say so and what to change, anything else is "internal error: ...".
std::string unexpected_error_text(const std::exception& e);

}  // namespace ts
