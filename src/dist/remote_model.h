// A capability of the exchange strategies whose parameters and momentum live elsewhere (async_ps:
// sharded over its servers, dist/async_ps_worker.h): a checkpoint takes them from there and a
// resume gives them back (train/checkpoint.cpp, train/resume.cpp). The trainer asks the strategy
// for it once at set-up (RunSetup::remote_model); the others keep the model in the arenas.
#pragma once

#include <cstdint>
#include <vector>

namespace ts {

class RemoteModel {
 public:
  virtual ~RemoteModel() = default;
  // Collective between steps (it waits until every rank has finished the step); rank 0 gets the
  // whole parameters and momentum (param_count floats each), the others pass null.
  virtual void capture_model(std::vector<float>* params, std::vector<float>* velocity) = 0;
  // A resumed run, collective, before its first step (which follows `steps_done` finished
  // steps); every rank holds the checkpoint's values.
  virtual void restore_model(const float* params, const float* velocity, int64_t steps_done) = 0;
};

}  // namespace ts
