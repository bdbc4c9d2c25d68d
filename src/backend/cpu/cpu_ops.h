// backend/cpu internals: the planned oneDNN ops (one family per file: cpu_conv.cpp, cpu_fc.cpp,
// cpu_pool.cpp, cpu_batchnorm.cpp, cpu_eltwise.cpp, cpu_tensor_ops.cpp, cpu_losses.cpp), created
// by CpuBackend::plan_*. Each op keeps a reference to its backend's CpuContext, so a planned op
// must not outlive the backend that planned it.
#pragma once

#include <memory>
#include <vector>

#include "backend/cpu/cpu_context.h"

namespace ts::cpu {

std::unique_ptr<ConvOp> plan_conv(CpuContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst);
std::unique_ptr<FcOp> plan_fc(CpuContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst);
std::unique_ptr<PoolOp> plan_pool(CpuContext& ctx, const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst);
std::unique_ptr<BatchNormOp> plan_batchnorm(CpuContext& ctx, const BnDesc& d, const TensorDesc& src,
                                            const TensorDesc& dst);
std::unique_ptr<EltwiseOp> plan_eltwise(CpuContext& ctx, const EltwiseDesc& d, const TensorDesc& src,
                                        const TensorDesc& dst);
std::unique_ptr<AddOp> plan_add(CpuContext& ctx, const TensorDesc& a, const TensorDesc& b, bool relu);
std::unique_ptr<ConcatOp> plan_concat(CpuContext& ctx, const std::vector<TensorDesc>& srcs, const TensorDesc& dst);
std::unique_ptr<DropoutOp> plan_dropout(CpuContext& ctx, const TensorDesc& src);
std::unique_ptr<SoftmaxXentOp> plan_softmax_xent(CpuContext& ctx, const TensorDesc& logits);
std::unique_ptr<MseOp> plan_mse(CpuContext& ctx, const TensorDesc& pred);

// The desc an op's output takes: the request, or (any) what the primitive produces.
inline TensorDesc output_desc(CpuContext& ctx, const TensorDesc& request, const memory::desc& produced) {
  return request.is_any() ? ctx.tensor_desc(produced) : request;
}

}  // namespace ts::cpu
