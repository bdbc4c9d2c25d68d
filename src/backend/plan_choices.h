// How a backend with a choice among its libraries' algorithms (cuda: cuDNN, cuBLASLt) chooses
// for the ops planned from now on, and what it chose (recorded in the run file). Backends
// without a choice (cpu: oneDNN picks one implementation per shape and ISA; ref) compute
// deterministically, hold no workspace and have none. Asked for once (capability<PlanChoices>).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ts {

class PlanChoices {
 public:
  virtual ~PlanChoices() = default;
  // The most device memory one planned op may use as workspace (bytes): algorithms that need
  // more are not chosen.
  virtual void set_workspace_limit(size_t bytes) = 0;
  // How ops choose their algorithms (AlgorithmChoice, backend.h).
  virtual void set_algorithm_choice(AlgorithmChoice choice) = 0;
  // Which API convolutions use, and (graph) whether engines that reduce in the activations'
  // reduced precision may be chosen.
  virtual void set_conv_api(ConvApi api, bool reduced_precision_reduction) = 0;
  // One line per planned op that chose something (algorithm, math mode, workspace), in plan order.
  virtual std::vector<std::string> plan_notes() const = 0;
  // Keeps the first `keep` notes: plans made for a throwaway net (the device memory probe) are
  // not the run's.
  virtual void drop_plan_notes(size_t keep) = 0;
  // Device memory held as op workspace (bytes); bounded by the workspace limit.
  virtual size_t workspace_bytes() const = 0;
};

}  // namespace ts
