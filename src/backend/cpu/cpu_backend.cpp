// The oneDNN CPU backend (see cpu_backend.h): memory, the immediate ops, and planning, which
// hands each op to its family's file (cpu_ops.h).
#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <cmath>

#include "backend/cpu/cpu_context.h"
#include "backend/cpu/cpu_info.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/host_info.h"

namespace ts {

CpuBackend::CpuBackend() {
  cpu::guarded(__FILE__, __LINE__, "creating the cpu engine and stream", [&] { ctx_ = std::make_unique<cpu::CpuContext>(); });
}

CpuBackend::~CpuBackend() = default;

DeviceDescription CpuBackend::describe() const {
  DeviceDescription d;
  d.backend = "cpu";
  d.device = "cpu";
  d.name = host_cpu_model();
  d.isa = onednn_isa();
  d.generation = "none";
  d.memory_bytes = host_memory_bytes();
  d.compute_units = host_hardware_threads();
  d.bf16_native = onednn_bf16_native();
  d.libraries = {{"onednn", onednn_version()}};
  return d;
}

bool CpuBackend::supports(Op, Precision precision) const {
  // bf16: oneDNN computes it natively with avx512_bf16 (or AMX) and emulates it on plain
  // AVX-512 (avx512_core); `trainscale info` says which (bf16_native). fp16/tf32: cuda only.
  if (precision == Precision::fp32) return true;
  if (precision != Precision::bf16) return false;
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
         isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

void CpuBackend::set_precision(Precision precision) {
  if (!supports(Op::conv, precision))
    throw ConfigError(std::string("backend cpu does not compute in '") + precision_name(precision) +
                      "' on this machine; accepted: fp32" + (supports(Op::conv, Precision::bf16) ? ", bf16" : "") +
                      (precision == Precision::fp16 || precision == Precision::tf32 ? " (fp16 and tf32 need backend cuda)"
                                                                                    : " (bf16 needs a CPU with AVX-512)"));
  precision_ = precision;
  ctx_->precision = precision;
}

void CpuBackend::set_threads(int threads) {
  TS_CHECK(threads >= 1, "cpu backend: threads must be >= 1, got " + std::to_string(threads));
  omp_set_num_threads(threads);
}

CpuBackend::ReorderCounts CpuBackend::reorder_counts() const {
  return {ctx_->activation_reorders, ctx_->weight_reorders};
}

void CpuBackend::reorder(const Tensor& src, const Tensor& dst) {
  cpu::guarded(__FILE__, __LINE__, "reorder " + src.desc.str() + " -> " + dst.desc.str(), [&] {
    const dnnl::memory::desc from = ctx_->md(src.desc), to = ctx_->md(dst.desc);
    if (from == to) {
      copy(dst.data, src.data, from.get_size());
      return;
    }
    ctx_->run_reorder(ctx_->reorder_primitive(from, to), ctx_->wrap(from, src.data), ctx_->wrap(to, dst.data), false);
  });
}

// ---- planning -------------------------------------------------------------------------------
std::unique_ptr<ConvOp> CpuBackend::plan_conv(const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cpu::plan_conv(*ctx_, d, src, dst);
}
std::unique_ptr<PoolOp> CpuBackend::plan_pool(const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cpu::plan_pool(*ctx_, d, src, dst);
}
std::unique_ptr<FcOp> CpuBackend::plan_fc(const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cpu::plan_fc(*ctx_, d, src, dst);
}
std::unique_ptr<BatchNormOp> CpuBackend::plan_batchnorm(const BnDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cpu::plan_batchnorm(*ctx_, d, src, dst);
}
std::unique_ptr<EltwiseOp> CpuBackend::plan_eltwise(const EltwiseDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cpu::plan_eltwise(*ctx_, d, src, dst);
}
std::unique_ptr<AddOp> CpuBackend::plan_add(const TensorDesc& a, const TensorDesc& b, bool relu) {
  return cpu::plan_add(*ctx_, a, b, relu);
}
std::unique_ptr<ConcatOp> CpuBackend::plan_concat(const std::vector<TensorDesc>& srcs, const TensorDesc& dst) {
  return cpu::plan_concat(*ctx_, srcs, dst);
}
std::unique_ptr<DropoutOp> CpuBackend::plan_dropout(const TensorDesc& src) { return cpu::plan_dropout(*ctx_, src); }
std::unique_ptr<SoftmaxXentOp> CpuBackend::plan_softmax_xent(const TensorDesc& logits) {
  return cpu::plan_softmax_xent(*ctx_, logits);
}
std::unique_ptr<MseOp> CpuBackend::plan_mse(const TensorDesc& pred) { return cpu::plan_mse(*ctx_, pred); }

// ---- immediate ops --------------------------------------------------------------------------
void CpuBackend::sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov, float* weights,
                          const float* grads, float* velocity) {
  //   g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i] + weight_decay * weights[i];
    const float v = momentum * velocity[i] + g;
    velocity[i] = v;
    weights[i] -= lr * (nesterov ? g + momentum * v : v);
  }
}

void CpuBackend::axpby(int64_t n, float a, const float* x, float b, float* y) {
  // y = a x + b y (per-channel statistics: short, no threads)
  for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
}

bool CpuBackend::scale_check_finite(int64_t n, float a, float* x) {
  int finite = 1;
#pragma omp parallel for reduction(& : finite)
  for (int64_t i = 0; i < n; ++i) {
    finite &= std::isfinite(x[i]) ? 1 : 0;
    x[i] *= a;
  }
  return finite != 0;
}

}  // namespace ts
