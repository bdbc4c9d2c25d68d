// The subcommands of the `trainscale` driver. Each returns a process exit code (core/error.h)
// or throws ConfigError / RuntimeError, which main() turns into messages and exit codes.
#pragma once

#include <string>
#include <vector>

namespace ts {

int command_run(const std::vector<std::string>& args);
int command_info(const std::vector<std::string>& args);
int command_sweep(const std::vector<std::string>& args);  // app/cmd_sweep.cpp
int command_bench(const std::vector<std::string>& args);  // app/cmd_bench.cpp
int command_predict(const std::vector<std::string>& args);    // app/cmd_predict.cpp
int command_calibrate(const std::vector<std::string>& args);  // app/cmd_calibrate.cpp
int command_make_synthetic_jpeg(const std::vector<std::string>& args);  // `data make-synthetic-jpeg`
// Commands of the contract that later work implements: a clear usage error until then.
int command_not_built(const std::string& name, const std::vector<std::string>& args);


}  // namespace ts
