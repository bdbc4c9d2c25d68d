// train-internal: what a run builds its model with (nn/models.h build_model): the model, the
// real one and the memory check's probes alike.
#pragma once

#include <cstdint>
#include <string>

namespace ts {

struct ModelOptions {
  std::string name = "lenet";  // a name of the model registry
  uint64_t seed = 1;           // the initial weights' (and dropout's) stream
  double dropout = 0;
};

}  // namespace ts
