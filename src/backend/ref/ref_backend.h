// The reference backend: the naive kernels of ref_kernels.h behind the backend table, on plain
// fp32 tensors in host memory. It is the test oracle's backend, never the fast path: fp32 only,
// one thread, every tensor plain (row-major NCHW), planning only checks the descs.
#pragma once

#include "backend/backend.h"

namespace ts {

class RefBackend : public Backend {  // not final: tests derive device-like backends
 public:
  std::string name() const override { return "ref"; }
  DeviceDescription describe() const override;
  bool supports(Op op, Precision precision) const override;
  void set_threads(int threads) override {}  // always one thread
  void set_precision(Precision precision) override;  // fp32 only: the oracle
  Precision precision() const override { return Precision::fp32; }

  DeviceBuffer allocate(size_t bytes) override;
  DeviceBuffer allocate_host(size_t bytes) override;
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  void copy(void* device_dst, const void* device_src, size_t bytes) override;
  void fill_zero(void* device_dst, size_t bytes) override;
  void synchronize() override {}
  void reorder(const Tensor& src, const Tensor& dst) override;  // plain f32 to plain f32: a copy

  TS_BACKEND_OP_OVERRIDES;

 protected:
  void release(void* data, size_t bytes, bool host) override;
};

}  // namespace ts
