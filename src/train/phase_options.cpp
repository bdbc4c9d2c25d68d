// Each phase's options from the resolved config (see phase_options.h).
#include "train/phase_options.h"

#include <algorithm>

#include "nn/models.h"

namespace ts {

LrOptions lr_options_of(const RunConfig& r) {
  const LrScheduleConfig& c = r.lr_schedule;
  LrOptions o;
  o.lr = r.lr;
  o.linear_scaling = c.scale == LrScale::linear;
  o.base_batch = c.base_batch;
  o.schedule.kind = lr_schedule_kind_name(c.kind);
  o.schedule.warmup_epochs = c.warmup_epochs;
  o.schedule.step_epochs = c.step_epochs;
  o.schedule.gamma = c.gamma;
  o.schedule.final_lr_fraction = c.final_lr_fraction;
  return o;
}

ExchangeOptions exchange_options_of(const DistConfig& dist) {
  ExchangeOptions options;
  options.strategy = dist.strategy;
  options.algorithm = dist.allreduce;
  options.bucket_elements = std::max<int64_t>(1, static_cast<int64_t>(dist.bucket_mb * 1024.0 * 1024.0 / sizeof(float)));
  options.overlap = dist.overlap;
  options.compression = dist.compression;
  options.device_sum = dist.hetero_allreduce_device;
  return options;
}

DataOptions data_options_of(const RunConfig& r, const InputPreparation& prepared) {
  const DatasetConfig& c = r.dataset;
  const ModelInput model = model_expected_input(r.model);
  DataOptions options;
  options.name = c.name;
  options.format = c.format;
  options.root = prepared.root;
  options.storage = prepared.storage;
  options.endpoint = c.endpoint;
  options.blob_deadline_s = c.blob_deadline_s;
  options.blob_min_kib_s = c.blob_min_kib_s;
  options.seed = r.seed;
  options.synthetic_samples = c.synthetic_samples;
  options.synthetic = {model.sample, std::max<int64_t>(model.outputs, 1), 0};
  options.shuffle_buffer = c.shuffle_buffer;
  options.image_shape = model.sample;  // jpeg_dir transforms every image to the model's input
  options.test_fraction = c.test_fraction;
  return options;
}

}  // namespace ts
