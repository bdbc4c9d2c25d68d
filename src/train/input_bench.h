// `trainscale bench io`: the training input pipeline alone (sample source + loader threads over
// the configured format x storage, no model), timed for a number of batches per repeat, with
// the page cache dropped (cold) and then warmed (warm) before each (docs/data.md "Measuring the
// input pipeline"). One process, no MPI: what one rank's loader can deliver.
#pragma once

#include <cstdint>
#include <ostream>

#include "config/run_config.h"
#include "metrics/io_bench_file.h"

namespace ts {

struct InputBenchOptions {
  int repeats = 3;       // each repeat times a cold and a warm pass
  int64_t batches = 50;  // batches per timed pass
};

// Stages (dataset.stage) once, then runs the repeats; prints one line per pass to `log`.
// RuntimeError naming the file for unreadable data; ConfigError for impossible options.
IoBenchResult bench_input(const ResolvedConfig& config, const InputBenchOptions& options, std::ostream& log);

}  // namespace ts
