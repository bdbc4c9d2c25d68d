// The oneDNN CPU backend: every op of the backend table planned as oneDNN 2.6 primitives (or a
// short OpenMP loop where oneDNN has nothing better: dropout, sgd, the losses' reductions), one
// engine and one stream per object, no globals. Plans choose oneDNN's blocked layouts
// (format_tag::any) and keep them between ops through the tensor descs; bf16 mixed precision;
// fused ReLUs; one user scratchpad. oneDNN stays behind a pimpl so that this header never
// includes it; backend/cpu/cpu_context.h describes the planning rules.
#pragma once

#include <memory>

#include "backend/host_memory_backend.h"

namespace ts {

namespace cpu {
struct CpuContext;
}

class CpuBackend final : public HostMemoryBackend {
 public:
  CpuBackend();
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string name() const override { return "cpu"; }
  // oneDNN's version and ISA, the CPU model, RAM and hardware threads.
  DeviceDescription describe() const override;
  bool supports(Op op, Precision precision) const override;
  void set_threads(int threads) override;  // omp_set_num_threads
  void set_precision(Precision precision) override;
  Precision precision() const override { return precision_; }

  void reorder(const Tensor& src, const Tensor& dst) override;

  TS_BACKEND_OP_OVERRIDES;

  // Reorders executed so far (tests and benchmarks count them per training step): activations
  // (a tensor changing layout or data type between ops, or at the net's edges) and weights
  // (fp32 master weights into a primitive's layout/bf16, weight gradients back to plain fp32).
  struct ReorderCounts {
    int64_t activations = 0;
    int64_t weights = 0;
  };
  ReorderCounts reorder_counts() const;

 private:
  std::unique_ptr<cpu::CpuContext> ctx_;
  Precision precision_ = Precision::fp32;
};

}  // namespace ts
