// The input side of a training step on a device the host cannot address (cuda): batch k+1's
// images copy to the device on the backend's staging queue while step k computes, from the
// loader's page-locked batch slots (train/data_setup.cpp gives the loader allocate_host memory).
//   step k: [labels of batch k -> page-locked copy] queue forward k (its input: the staged
//           images) and the copy of its loss to the host | wait for the staged copy of k,
//           loader.next() = batch k+1 (frees k's slot), stage k+1's images | (the trainer)
//           queue backward k, then read the loss (Net::loss: waits for forward k only), or
//           leave it for later (loss_reads: log).
// So the loader's wait and the copy overlap forward k on the device, and backward k is queued
// before the host first waits in the step. Labels/targets are copied into two page-locked
// buffers used in turn: the device reads one while the host fills the other, and before the
// host refills one it waits for the forward that read it (two steps back: a mark, not the queue).
// The copy of k+1's images waits on the device for forward k-1 to have read its buffer before
// (InputStaging::release_staged), so the host never has to.
#pragma once

#include <array>

#include "backend/backend.h"
#include "backend/input_staging.h"
#include "backend/queue_marks.h"
#include "data/loader.h"
#include "nn/net.h"

namespace ts {

class StagedInput {
 public:
  StagedInput(Net& net, Loader& loader);
  // Stages the first batch when none is, and re-plans the net when the staged batch has another
  // size (a share that changed); the seconds spent getting data. forward calls it too.
  double prepare();
  // Queues forward of the current batch (staging it first on the first call) and the copy of
  // its loss, then fetches and stages the next batch; Net::loss() reads the loss, before the
  // next call. `data_wait`: seconds the host spent getting data (the loader's next batch, the
  // wait for the staging copy before, queuing the copy).
  void forward_queued(Mode mode, double& data_wait);

 private:
  void fetch_and_stage();
  double timed_fetch_and_stage();  // seconds
  const int32_t* pinned_labels();
  const float* pinned_targets();

  Net& net_;
  Loader& loader_;
  InputStaging* const staging_;  // the net's backend's, null where it copies at once
  QueueMarks* const marks_;      // null: nothing to wait for
  Batch batch_;          // the batch whose images are staged (valid until the next loader.next)
  bool ready_ = false;
  int turn_ = 0;         // which of the two label/target buffers this step uses
  std::array<DeviceBuffer, 2> labels_, targets_;  // page-locked host memory
  std::array<int64_t, 2> read_by_{0, 0};  // the mark after the forward that read each turn's buffers
};

}  // namespace ts
