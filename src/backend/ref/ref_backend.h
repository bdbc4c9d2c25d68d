// The reference backend: the naive kernels of ref_kernels.h behind the backend table, on plain
// fp32 tensors in host memory. It is the test oracle's backend, never the fast path: fp32 only,
// one thread, every tensor plain (row-major NCHW), planning only checks the descs.
#pragma once

#include "backend/host_memory_backend.h"

namespace ts {

class RefBackend : public HostMemoryBackend {  // not final: tests derive device-like backends
 public:
  std::string name() const override { return "ref"; }
  DeviceDescription describe() const override;
  bool supports(Op op, Precision precision) const override;
  void set_threads(int threads) override {}  // always one thread
  void set_precision(Precision precision) override;  // fp32 only: the oracle
  Precision precision() const override { return Precision::fp32; }

  void reorder(const Tensor& src, const Tensor& dst) override;  // plain f32 to plain f32: a copy

  TS_BACKEND_OP_OVERRIDES;
};

}  // namespace ts
