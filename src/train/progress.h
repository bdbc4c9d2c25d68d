// train-internal: the lines rank 0 prints while a run goes on (people read them; the run file
// holds the numbers).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>

#include "config/run_config.h"
#include "train/recording.h"
#include "train/run_setup.h"

namespace ts {

// The first line: model, data, workers x batch, steps, backend, dist settings.
void log_run_start(std::ostream& log, const std::string& run_id, const RunConfig& run, const RunSetup& setup, int world);
// A warning (docs/reliability.md "Warnings"): rank 0 (`root`) prints "warning: <text>" and
// keeps it for the run file (RunRecording::warnings); the other ranks do nothing.
void warn(std::ostream& log, RunRecording& rec, bool root, const std::string& text);
// "" or the warning that lr_schedule.warmup_epochs is longer than the run (its LR never
// reaches its peak; `last_lr`: the LR of the last step).
std::string warmup_warning(const ResolvedConfig& config, const RunPlan& plan, double last_lr);
// Every log_every steps: step, epoch, loss, lr, img/s of the last 50 steps, ETA.
void log_progress(std::ostream& log, const RunRecording& rec, const RunPlan& plan, double loss, bool exchanged);
void log_eval(std::ostream& log, int64_t step, double epoch, double loss, double accuracy, double train_clock);
// The last lines: status, throughput, accuracy, time to target, the run file, and the final
// parameters' SHA-256 (summary/params_sha256: a resumed run is checkable without reading HDF5).
void log_summary(std::ostream& log, const RunRecording& rec, const std::map<std::string, double>& summary,
                 double target_accuracy, const std::string& run_file, const std::string& params_sha256);

}  // namespace ts
