// Layout ids, descs and the NCHW <-> NHWC transpose-and-convert kernel of the CUDA backend
// (cuda_layout.h). The kernel is a grid-stride loop over the destination's elements, reading
// the source at the transposed index: it runs at the edges of ops (the input image, the fc after
// a conv stack, the f32 weights of a conv per forward), not per layer.
#include "backend/cuda/cuda_layout.h"

#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_element.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// dst[i] for i over (n,h,w,c) when to_nhwc (src (n,c,h,w)), or over (n,c,h,w) (src (n,h,w,c)).
__global__ void transpose_kernel(const void* src, DType src_type, void* dst, DType dst_type, int64_t c, int64_t hw,
                                 int64_t total, bool to_nhwc) {
  for (int64_t i = grid_first(); i < total; i += grid_stride()) {
    int64_t from = 0;
    if (to_nhwc) {  // i = ((b * hw) + s) * c + k  <-  (b * c + k) * hw + s
      const int64_t k = i % c, s = (i / c) % hw, b = i / (c * hw);
      from = (b * c + k) * hw + s;
    } else {  // i = (b * c + k) * hw + s  <-  (b * hw + s) * c + k
      const int64_t s = i % hw, k = (i / hw) % c, b = i / (c * hw);
      from = (b * hw + s) * c + k;
    }
    store_from_float(dst, dst_type, i, load_as_float(src, src_type, from));
  }
}

}  // namespace

bool is_cuda_layout(const TensorDesc& d) { return d.is_plain() || (is_nhwc(d) && d.dims.rank() == 4); }

TensorDesc nhwc_desc(const Shape& dims, DType dtype) {
  TensorDesc d = TensorDesc::plain(dims, dtype);
  d.layout = kNhwcLayout;
  return d;
}

TensorDesc layout_desc(const Shape& dims, DType dtype, LayoutId layout) {
  return layout == kNhwcLayout && dims.rank() == 4 ? nhwc_desc(dims, dtype) : TensorDesc::plain(dims, dtype);
}

LayoutId preferred_layout(Precision precision, const Shape& dims) {
  return precision != Precision::fp32 && dims.rank() == 4 ? kNhwcLayout : kPlainLayout;
}

void transpose_nchw_nhwc(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, int64_t c, int64_t h,
                         int64_t w, bool to_nhwc, cudaStream_t stream) {
  const int64_t total = n * c * h * w;
  if (total == 0) return;
  transpose_kernel<<<grid_blocks(total), kThreadsPerBlock, 0, stream>>>(src, src_type, dst, dst_type, c, h * w, total,
                                                                        to_nhwc);
  TS_CUDA_CHECK(cudaGetLastError());
}

void convert_tensor(const void* src, const TensorDesc& src_desc, void* dst, const TensorDesc& dst_desc,
                    cudaStream_t stream) {
  const bool same_layout = is_nhwc(src_desc) == is_nhwc(dst_desc);
  TS_CHECK(is_cuda_layout(src_desc) && is_cuda_layout(dst_desc) && src_desc.numel() == dst_desc.numel() &&
               (same_layout || src_desc.dims == dst_desc.dims),
           "cuda convert_tensor: cannot convert " + src_desc.str() + " to " + dst_desc.str() +
               " (plain or 4-D NHWC; a transpose needs equal dims)");
  if (same_layout) {
    convert(src, src_desc.dtype, dst, dst_desc.dtype, src_desc.numel(), stream);
    return;
  }
  const Shape& s = src_desc.dims;
  transpose_nchw_nhwc(src, src_desc.dtype, dst, dst_desc.dtype, s[0], s[1], s[2], s[3], is_nhwc(dst_desc), stream);
}

}  // namespace ts::cuda
