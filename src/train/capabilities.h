// What this binary, this MPI world and this device can or cannot honour of a valid run config.
// The config module accepts every name the project knows (so a sweep expands anywhere); these
// checks run when the run starts and throw ConfigError naming the key, its source (cfg.locate)
// and what is accepted here. Combinations of values are not here: config/rules.h (the rows of
// scope `run` are checked first, here).
#pragma once

#include <optional>
#include <string>

#include "backend/backend.h"
#include "config/run_config.h"

namespace ts {

// The run-scope rows of config/rules.h, then world size vs `workers`, the backend built in,
// mpi_flavor vs the linked MPI library, dataset.storage, the all-reduce algorithm built in, and
// overlap's MPI threading. (The device's answers are checked when set-up has built the
// backend: train/device_check.h.)
void check_run_capabilities(const ResolvedConfig& config, int world_size);
// "" when a checkpoint of `run` restores it (exactly, where the run itself is deterministic:
// async_ps with dist.staleness > 0 is not); otherwise why not (checkpoint.* and
// --resume are refused with it: backend cuda unless cuda.algorithms is deterministic, since
// cuDNN algorithms found by benchmarking may differ in a new process and some use atomics, so a
// resumed run would not be bit-identical; hogwild, whose replicas race).
std::string checkpoint_refusal(const RunConfig& run);

// Why this point of a campaign cannot run (docs/sweeps.md "Run states"), or nullopt: a
// precision its `gpu` generation lacks (always); with `this_machine` (the site runs the campaign
// here), also a backend this binary lacks or has no device for, and a precision a backend
// cannot compute in on this machine (bf16 without AVX-512). `sweep expand` marks such points
// UNSUPPORTED; the same facts found when a task starts raise UnsupportedError.
std::optional<std::string> unsupported_reason(const ResolvedConfig& config, bool this_machine);

}  // namespace ts
