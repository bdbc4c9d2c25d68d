// train-internal: the options of other modules' parts (data/'s DataOptions, dist/'s
// ExchangeOptions) from the resolved config. set_up_run packs each phase's own options struct
// (train/loop.h LoopOptions, train/data_setup.h RunDataOptions, train/share_balancer.h
// ShareOptions, train/hogwild_crew.h ReplicaOptions) from the config once; those phases never
// see the config.
#pragma once

#include "config/run_config.h"
#include "data/datasets.h"
#include "dist/exchange_strategy.h"
#include "train/input_preparation.h"

namespace ts {

// The exchange options of the run's dist settings (bucket_mb -> floats per bucket).
ExchangeOptions exchange_options_of(const DistConfig& dist);
// The data options of the run's dataset.* keys, reading where `prepared` says (synthetic data
// shaped for the model).
DataOptions data_options_of(const RunConfig& run, const InputPreparation& prepared);

}  // namespace ts
