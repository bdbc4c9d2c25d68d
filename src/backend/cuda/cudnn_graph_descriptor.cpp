// cuDNN backend-API descriptors (see cudnn_graph_descriptor.h).
#include "backend/cuda/cudnn_graph_descriptor.h"

#include <string>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

void check(cudnnStatus_t status, const char* what, int attribute) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw RuntimeError(std::string("cuDNN backend API: ") + what + (attribute >= 0 ? " attribute " +
                                                                      std::to_string(attribute) : std::string()) +
                     ": " + cudnnGetErrorString(status));
}

}  // namespace

GraphDescriptor::GraphDescriptor(cudnnBackendDescriptorType_t type) {
  check(cudnnBackendCreateDescriptor(type, &desc_), "creating a descriptor of type", static_cast<int>(type));
}

GraphDescriptor::~GraphDescriptor() {
  if (desc_) cudnnBackendDestroyDescriptor(desc_);
}

GraphDescriptor& GraphDescriptor::operator=(GraphDescriptor&& o) noexcept {
  if (this != &o) {
    if (desc_) cudnnBackendDestroyDescriptor(desc_);
    desc_ = std::exchange(o.desc_, nullptr);
  }
  return *this;
}

void GraphDescriptor::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                          const void* values) {
  check(cudnnBackendSetAttribute(desc_, name, type, count, values), "setting", static_cast<int>(name));
}

void GraphDescriptor::finalize() { check(cudnnBackendFinalize(desc_), "finalizing a descriptor", -1); }

cudnnStatus_t GraphDescriptor::try_finalize() { return cudnnBackendFinalize(desc_); }

int64_t GraphDescriptor::get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t capacity,
                             void* values) const {
  int64_t count = 0;
  check(cudnnBackendGetAttribute(desc_, name, type, capacity, &count, values), "reading", static_cast<int>(name));
  return count;
}

}  // namespace ts::cuda
