// Models by name. Each builder checks that the data's per-sample shape and class count fit.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/shape.h"
#include "nn/net.h"

namespace ts {

struct ModelInput {
  Shape sample;         // (C,H,W) for images, (features) for vectors
  int64_t outputs = 10; // classes (classification) or regression outputs
};

// Names accepted by build_model, in documentation order.
std::vector<std::string> model_names();
// The input each model expects (e.g. lenet: (1,28,28), 10 classes).
ModelInput model_expected_input(const std::string& name);
// Builds and finalizes the named model. Throws ConfigError for an unknown name (listing the
// known ones) or an input that does not fit.
std::unique_ptr<Net> build_model(const std::string& name, Backend& backend, const ModelInput& input,
                                 uint64_t seed, double dropout = 0.0);
// The same model's layers set up (shapes, descriptors, parameter counts) but not finalized: no
// arenas, no initial values, no fusion. For readers of the layer table that never run the net
// (the performance model, src/perfmodel/): vgg16's 138 M parameters cost nothing here. The
// backend is only held by the net, never called.
std::unique_ptr<Net> build_model_graph(const std::string& name, Backend& backend, const ModelInput& input,
                                       double dropout = 0.0);

}  // namespace ts
