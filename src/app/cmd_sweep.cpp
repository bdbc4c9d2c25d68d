// `trainscale sweep`: experiment campaigns (expand, submit, status, resubmit).
#include "app/commands.h"

namespace ts {

int command_sweep(const std::vector<std::string>& args) { return command_not_built("sweep", args); }

}  // namespace ts
