// Overlapped input staging for devices the host cannot address (see staged_input.h).
#include "train/staged_input.h"

#include <cstring>

#include "core/error.h"
#include "core/timer.h"

namespace ts {

StagedInput::StagedInput(Net& net, Loader& loader)
    : net_(net),
      loader_(loader),
      staging_(capability<InputStaging>(net.backend())),
      marks_(capability<QueueMarks>(net.backend())) {}

void StagedInput::fetch_and_stage() {
  if (staging_) staging_->staged_copies_done();  // the slot of the batch before may be refilled from now on
  loader_.next(batch_);
  net_.stage_input(batch_.images, batch_.size);
  ready_ = true;
}

const int32_t* StagedInput::pinned_labels() {
  if (!batch_.labels) return nullptr;
  const size_t bytes = static_cast<size_t>(batch_.size) * sizeof(int32_t);
  DeviceBuffer& buf = labels_[turn_];
  if (buf.bytes() < bytes) buf = net_.backend().allocate_host(bytes);
  std::memcpy(buf.data(), batch_.labels, bytes);
  return static_cast<const int32_t*>(buf.data());
}

const float* StagedInput::pinned_targets() {
  if (!batch_.targets) return nullptr;
  const Shape out = net_.output_shape();
  const size_t bytes = static_cast<size_t>(batch_.size * out.numel()) * sizeof(float);
  DeviceBuffer& buf = targets_[turn_];
  if (buf.bytes() < bytes) buf = net_.backend().allocate_host(bytes);
  std::memcpy(buf.data(), batch_.targets, bytes);
  return buf.f32();
}

double StagedInput::prepare() {
  const double data_wait = ready_ ? 0.0 : timed_fetch_and_stage();
  // A share that changed (dist.partition measured/adaptive): the net is re-planned for the
  // staged batch, whose images were staged at their own size.
  if (batch_.size != net_.batch()) net_.set_batch(batch_.size);
  return data_wait;
}

void StagedInput::forward_queued(Mode mode, double& data_wait) {
  data_wait = prepare();
  // The device reads labels/targets when the loss runs: this turn's buffers were read by the
  // forward two steps back, which the device has passed unless the host is that far ahead.
  if (marks_) marks_->wait_for_mark(read_by_[turn_]);
  const int32_t* labels = pinned_labels();
  const float* targets = pinned_targets();
  net_.forward_queued(nullptr, labels, targets, mode);
  if (marks_) read_by_[turn_] = marks_->mark();
  turn_ ^= 1;
  data_wait += timed_fetch_and_stage();  // overlaps forward on the device
}

double StagedInput::timed_fetch_and_stage() {
  const double t0 = now_seconds();
  fetch_and_stage();
  return now_seconds() - t0;
}

}  // namespace ts
