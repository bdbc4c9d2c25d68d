// `trainscale bench`: collective benchmarks (bench allreduce).
#include "app/commands.h"

namespace ts {

int command_bench(const std::vector<std::string>& args) { return command_not_built("bench", args); }

}  // namespace ts
