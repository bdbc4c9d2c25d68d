// A cuDNN backend-API descriptor (cudnn_graph.h: tensors, operations, graphs, engine configs,
// execution plans, variant packs) owned by one object: created on construction, destroyed with
// it; attributes set and read through typed helpers. Move-only. cuda_conv_graph.h builds the
// convolution graphs from it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <cudnn.h>

namespace ts::cuda {

class GraphDescriptor {
 public:
  GraphDescriptor() = default;
  explicit GraphDescriptor(cudnnBackendDescriptorType_t type);  // throws RuntimeError on failure
  ~GraphDescriptor();
  GraphDescriptor(GraphDescriptor&& o) noexcept : desc_(std::exchange(o.desc_, nullptr)) {}
  GraphDescriptor& operator=(GraphDescriptor&& o) noexcept;
  GraphDescriptor(const GraphDescriptor&) = delete;
  GraphDescriptor& operator=(const GraphDescriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  explicit operator bool() const { return desc_ != nullptr; }

  // Sets `count` values of `type` (throws RuntimeError naming the attribute on failure).
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values);
  void set_int64(cudnnBackendAttributeName_t name, int64_t value) { set(name, CUDNN_TYPE_INT64, 1, &value); }
  void set_int64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& values) {
    set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
  }
  void set_descriptor(cudnnBackendAttributeName_t name, const GraphDescriptor& d) {
    cudnnBackendDescriptor_t raw = d.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  void finalize();                  // throws RuntimeError
  cudnnStatus_t try_finalize();     // the status: a configuration an engine does not support is no error
  // Reads up to `capacity` values of `type`; the count read. Throws RuntimeError on failure.
  int64_t get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t capacity,
              void* values) const;

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

}  // namespace ts::cuda
