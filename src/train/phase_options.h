// train-internal: options structs from the resolved config that two places build (the
// learning rate's: the trainer and the async_ps servers; data/'s DataOptions) or another module
// defines (dist/'s ExchangeOptions). set_up_run packs each phase's own options struct
// (train/loop.h LoopOptions, train/data_setup.h RunDataOptions, train/share_balancer.h
// ShareOptions, train/hogwild_crew.h ReplicaOptions) from the config once; those phases never
// see the config.
#pragma once

#include "config/run_config.h"
#include "data/datasets.h"
#include "dist/exchange_strategy.h"
#include "train/input_preparation.h"
#include "train/learning_rate.h"

namespace ts {

// The learning rate's options of lr and lr_schedule.*.
LrOptions lr_options_of(const RunConfig& run);
// The exchange options of the run's dist settings (bucket_mb -> floats per bucket).
ExchangeOptions exchange_options_of(const DistConfig& dist);
// The data options of the run's dataset.* keys, reading where `prepared` says (synthetic data
// shaped for the model).
DataOptions data_options_of(const RunConfig& run, const InputPreparation& prepared);

}  // namespace ts
