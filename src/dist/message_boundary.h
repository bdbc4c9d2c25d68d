// A capability of the exchange strategies whose workers never wait for each other between steps
// (async_ps, dist/async_ps_worker.h): they agree on a preemption or a time-based checkpoint by
// messages instead of a collective (train/step_boundary.h, dist/boundary_arbiter.h). The trainer
// asks the strategy for it once at set-up (RunSetup::message_boundary).
#pragma once

#include "dist/boundary_arbiter.h"

namespace ts {

class MessageBoundary {
 public:
  virtual ~MessageBoundary() = default;
  // The request rides on this rank's next exchange.
  virtual void request_boundary(const BoundaryRequest& request) = 0;
  // The latest agreement this rank heard of.
  virtual BoundaryAgreement agreed_boundary() const = 0;
};

}  // namespace ts
