// A capability of the exchange strategies with peers outside the step protocol (async_ps: its
// servers; hogwild: the other replicas' threads). The trainer asks the strategy for it once at
// set-up (RunSetup::outside_peers).
#pragma once

namespace ts {

class OutsidePeers {
 public:
  virtual ~OutsidePeers() = default;
  // After the last step (or a stop: divergence, preemption), once per rank: tells the peers this
  // rank is gone (a second call does nothing).
  virtual void leave() = 0;
};

}  // namespace ts
