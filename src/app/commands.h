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
int bench_io_command(const std::vector<std::string>& args);  // app/cmd_bench_io.cpp (bench io)
int bench_checkpoint_command(const std::vector<std::string>& args);  // app/cmd_bench_checkpoint.cpp
int command_predict(const std::vector<std::string>& args);    // app/cmd_predict.cpp
int command_calibrate(const std::vector<std::string>& args);  // app/cmd_calibrate.cpp
int command_data(const std::vector<std::string>& args);       // app/cmd_data.cpp
int command_show(const std::vector<std::string>& args);       // app/cmd_show.cpp
int command_trace(const std::vector<std::string>& args);      // app/cmd_trace.cpp
int command_make_synthetic_jpeg(const std::vector<std::string>& args);  // `data make-synthetic-jpeg`

}  // namespace ts
