// Captured work (cuda: CUDA graphs): the backend records the ops queued between begin_capture and
// end_capture (without running them) and replays the recording on its queue: one launch instead
// of one per op. Ops queued while capturing must not wait for the device, copy from pageable host
// memory or allocate. Backends without it cannot record (cuda.graphs needs backend: cuda). Asked
// for once (capability<GraphCapture>, backend.h).
#pragma once

namespace ts {

class GraphCapture {
 public:
  virtual ~GraphCapture() = default;
  virtual void begin_capture() = 0;
  virtual int end_capture() = 0;  // the recording's id
  virtual void replay(int capture) = 0;
  // Frees a recording (an id never returned, such as -1, is ignored).
  virtual void release_capture(int capture) = 0;
};

}  // namespace ts
