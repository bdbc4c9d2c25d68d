// The CUDA backend's activation layouts: plain (row-major NCHW, kPlainLayout) and channels-last
// NHWC (kNhwcLayout, an id this backend interns). TensorDesc.dims stay logical (mb,c,h,w) in both;
// an NHWC tensor stores (mb,h,w,c) row-major, numel x dtype size bytes (no padding).
//
// Choice (docs/architecture.md "backend/cuda"): 4-D outputs requested "any" are NHWC when the run
// computes on tensor cores (tf32, fp16, bf16), since cuDNN's tensor-core convolutions and batch
// norm run natively on NHWC and transpose NCHW internally. fp32 keeps everything plain (its
// results and tests are those of the NCHW backend). An op converts an input of another layout at
// its edge, through its ports (cuda_dtype_port.h), with convert_tensor below.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backend/backend.h"
#include "backend/tensor.h"

namespace ts::cuda {

// The NHWC id; TensorDesc::str() prints it as "L1000". Other backends' ids are refused.
constexpr LayoutId kNhwcLayout = 1000;

inline bool is_nhwc(const TensorDesc& d) { return d.layout == kNhwcLayout; }
// A layout the CUDA ops read: plain or NHWC (NHWC only for 4-D dims).
bool is_cuda_layout(const TensorDesc& d);
// (mb,c,h,w) stored channels-last in `dtype`.
TensorDesc nhwc_desc(const Shape& dims, DType dtype);
// (dims, dtype) in `layout` (kPlainLayout or kNhwcLayout; NHWC falls back to plain unless 4-D).
TensorDesc layout_desc(const Shape& dims, DType dtype, LayoutId layout);
// The layout the 4-D ops of a run at `precision` compute in: NHWC for tf32/fp16/bf16, else plain.
LayoutId preferred_layout(Precision precision, const Shape& dims);

// dst = src converted from src_desc to dst_desc (same logical dims; data types f32/f16/bf16 and
// layouts plain/NHWC in any combination). Same dtype and layout: a device copy. Only enqueues.
void convert_tensor(const void* src, const TensorDesc& src_desc, void* dst, const TensorDesc& dst_desc,
                    cudaStream_t stream);

// The (n,c,h,w) <-> (n,h,w,c) transpose with a data type conversion, over row-major arrays:
// to_nhwc: src (n,c,h,w) in src_type -> dst (n,h,w,c) in dst_type; else the inverse. Also turns
// conv weights (oc,ic/g,kh,kw) into cuDNN's NHWC filter order (oc,kh,kw,ic/g) and back.
void transpose_nchw_nhwc(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, int64_t c, int64_t h,
                         int64_t w, bool to_nhwc, cudaStream_t stream);

}  // namespace ts::cuda
