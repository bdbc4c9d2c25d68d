// The planned ops of the CUDA backend, one file per op family (see cuda_context.h for the
// conventions they share). CudaBackend::plan_* forwards to these.
#pragma once

#include <memory>
#include <vector>

#include "backend/cuda/cuda_context.h"
#include "backend/ops.h"

namespace ts::cuda {

// cuda_conv.cpp (cuDNN: algorithms chosen once per shape at plan time, recorded in plan_notes)
std::unique_ptr<ConvOp> plan_conv(CudaContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst);
// cuda_pool.cpp (cuDNN)
std::unique_ptr<PoolOp> plan_pool(CudaContext& ctx, const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst);
// cuda_batchnorm.cpp (cuDNN, spatial mode)
std::unique_ptr<BatchNormOp> plan_batchnorm(CudaContext& ctx, const BnDesc& d, const TensorDesc& src,
                                            const TensorDesc& dst);
// cuda_eltwise.cpp (cuDNN activations, own kernels where cuDNN has none)
std::unique_ptr<EltwiseOp> plan_eltwise(CudaContext& ctx, const EltwiseDesc& d, const TensorDesc& src,
                                        const TensorDesc& dst);
// cuda_fc.cpp (cuBLASLt with bias/ReLU epilogues where they fit)
std::unique_ptr<FcOp> plan_fc(CudaContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst);
// cuda_tensor_ops.cu (own kernels)
std::unique_ptr<AddOp> plan_add(CudaContext& ctx, const TensorDesc& a, const TensorDesc& b, bool relu);
std::unique_ptr<ConcatOp> plan_concat(CudaContext& ctx, const std::vector<TensorDesc>& srcs, const TensorDesc& dst);
std::unique_ptr<DropoutOp> plan_dropout(CudaContext& ctx, const TensorDesc& src);
// cuda_losses.cu (own kernels)
std::unique_ptr<SoftmaxXentOp> plan_softmax_xent(CudaContext& ctx, const TensorDesc& logits);
std::unique_ptr<MseOp> plan_mse(CudaContext& ctx, const TensorDesc& pred);

}  // namespace ts::cuda
