// train-internal: each phase's own options from the resolved config, packed once where the
// config is (train/trainer.cpp packs set-up's, train/run_setup.h SetupOptions, with these; the
// async_ps servers take the learning rate's). The phases never see the config: what their
// refusals name of it comes located here ("configs/x.yaml:12: key 'precision'").
#pragma once

#include "config/run_config.h"
#include "data/datasets.h"
#include "dist/exchange_strategy.h"
#include "train/input_preparation.h"
#include "train/learning_rate.h"
#include "train/run_setup.h"

namespace ts {

// The learning rate's options of lr and lr_schedule.*.
LrOptions lr_options_of(const RunConfig& run);
// The exchange options of the run's dist settings (bucket_mb -> floats per bucket), with
// async_ps's servers and staleness and compression's seed (the rest is set-up's).
ExchangeOptions exchange_options_of(const RunConfig& run);
// The data options of the run's dataset.* keys, reading where `prepared` says (synthetic data
// shaped for the model).
DataOptions data_options_of(const RunConfig& run, const InputPreparation& prepared);
// The data phase's options, reading dataset.root (set-up points them at a staged copy).
RunDataOptions run_data_options_of(const ResolvedConfig& config);
// backend, threads, precision, gpu and cuda.*, with the keys a device refusal names.
DeviceOptions device_options_of(const ResolvedConfig& config);
// The batch, the run's length (its key located), evaluations and weight averages.
PlanOptions plan_options_of(const ResolvedConfig& config);
ModelOptions model_options_of(const RunConfig& run);
MemoryOptions memory_options_of(const RunConfig& run);
// The loop's options on rank `rank` (dist.emulate_slowdown_rank slows one rank).
LoopOptions loop_options_of(const RunConfig& run, int rank);
SgdOptions sgd_options_of(const RunConfig& run);

}  // namespace ts
