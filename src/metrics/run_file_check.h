// A cheap check that a run file is a complete result (docs/reliability.md "Campaign state"):
// it opens as HDF5, says it is a trainscale run file and has a complete /summary (every summary
// attribute the writer always sets); it also reads the root `run_id` and `config_id`, so that
// campaign state can check that the file is the run its name says (a file copied over another
// run's name is not that run's result). Campaign state uses it so that a DONE marker counts only
// when the file behind it is whole: a garbage, truncated or deleted run file is not a result.
// Reads a few attributes, never the data sets.
#pragma once

#include <string>
#include <vector>

namespace ts {

// The /summary attributes every run file has (docs/hdf5-schema.md "/summary"), `diverged`
// included: what a complete run file must have. Defined in run_file.cpp, next to the writer's
// list, so the two cannot drift apart.
const std::vector<std::string>& run_file_summary_keys();

enum class RunFileState { complete, missing, unreadable, incomplete };
const char* run_file_state_name(RunFileState state);  // "complete" | "missing" | "unreadable" | "incomplete"

struct RunFileCheck {
  RunFileState state = RunFileState::missing;
  std::string detail;  // why it is not complete (HDF5's message, the missing object); "" when complete
  // The root attributes `run_id` and `config_id` of a complete file ("" when absent or not strings).
  std::string run_id{}, config_id{};  // {}: the {state, detail} returns leave them empty without a warning
};

// Never throws for a bad file: what is wrong with it is the answer.
RunFileCheck check_run_file(const std::string& path);

}  // namespace ts
