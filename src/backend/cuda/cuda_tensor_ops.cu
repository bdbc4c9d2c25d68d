// The CUDA backend's element-wise tensor ops on own kernels (cuda_ops.h): add / add+ReLU, channel
// concatenation and dropout. Each input and output may be f32, f16 or bf16 (the kernels read and
// write any of them, with the math in f32), so an op converts types on the fly instead of
// through extra buffers. Layouts (cuda_layout.h): add runs in a's layout and concat in dst's
// (plain or NHWC; in NHWC the channel blocks are the innermost dim), dropout in plain order (its
// mask is in logical order); an input in another layout goes through a port (cuda_dtype_port.h).
// Kernels are grid-stride loops over the stored elements.
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype_port.h"
#include "backend/cuda/cuda_element.cuh"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// Throws ConfigError unless `t` is a plain or NHWC tensor of f32, f16 or bf16.
void require_activation(const TensorDesc& t, const std::string& where) {
  if (!is_cuda_layout(t) || !(t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16))
    throw ConfigError(where + ": tensor " + t.str() +
                      " is not f32, f16 or bf16 in plain (NCHW) or the CUDA backend's 4-D NHWC layout");
}

// ---- add ------------------------------------------------------------------------------------
// dst = a + b [max(., 0)] over n values; dst may alias a (Add layers accumulate in place).
__global__ void add_kernel(const void* a, DType a_type, const void* b, DType b_type, void* dst, DType dst_type,
                           int64_t n, bool relu) {
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const float sum = load_as_float(a, a_type, i) + load_as_float(b, b_type, i);
    store_from_float(dst, dst_type, i, relu ? fmaxf(sum, 0.0f) : sum);
  }
}

class CudaAddOp final : public AddOp {
 public:
  CudaAddOp(CudaContext& ctx, const TensorDesc& a, const TensorDesc& b, bool relu)
      : ctx_(ctx), b_(b), relu_(relu) {
    dst_ = a;
    const std::string where = std::string(relu ? "add_relu" : "add") + " of " + a.str() + " and " + b.str();
    require_activation(a, where);
    require_activation(b, where);
    if (a.dims != b.dims)
      throw ConfigError(where + ": the inputs' dims differ; an add needs equal shapes (data types may differ)");
    b_in_ = InPort(b, layout_desc(b.dims, b.dtype, a.layout), where + " b in a's layout");
  }

  // a, b (n values) -> dst (a's desc)
  void forward(const Tensor& a, const Tensor& b, const Tensor& dst) override {
    const int64_t n = dst_.numel();
    const void* b_data = b_in_.get(b.data, ctx_.stream);
    add_kernel<<<grid_blocks(n), kThreadsPerBlock, 0, ctx_.stream>>>(a.data, dst_.dtype, b_data, b_.dtype, dst.data,
                                                                    dst_.dtype, n, relu_);
    TS_CUDA_CHECK(cudaGetLastError());
  }

 private:
  CudaContext& ctx_;
  TensorDesc b_;
  bool relu_;
  InPort b_in_;  // b in a's layout (b's type), when b's layout differs
};

// ---- concat ---------------------------------------------------------------------------------
// One input's block of channels inside the output: input (mb, channels, inner) <-> output
// (mb, total_channels, inner) at channel `offset`. to_output: input -> output (forward), else the
// output's block -> input (backward).
__global__ void concat_copy_kernel(const void* from, DType from_type, void* to, DType to_type, int64_t mb,
                                   int64_t channels, int64_t inner, int64_t total_channels, int64_t offset,
                                   bool to_output) {
  const int64_t per_sample = channels * inner, n = mb * per_sample;
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const int64_t sample = i / per_sample, within = i % per_sample;
    const int64_t j = (sample * total_channels + offset) * inner + within;  // the output's index
    if (to_output)
      store_from_float(to, to_type, j, load_as_float(from, from_type, i));
    else
      store_from_float(to, to_type, i, load_as_float(from, from_type, j));
  }
}

class CudaConcatOp final : public ConcatOp {
 public:
  CudaConcatOp(CudaContext& ctx, const std::vector<TensorDesc>& srcs, const TensorDesc& dst)
      : ctx_(ctx), srcs_(srcs) {
    const std::string where = "concat of " + std::to_string(srcs.size()) + " inputs";
    const Shape dims = check_srcs(where);
    // dst: "any" takes the first input's layout in the activation type; a fixed request is honoured.
    if (dst.is_any()) {
      dst_ = layout_desc(dims, ctx.act_dtype(), srcs[0].layout);
    } else {
      require_activation(dst, where);
      if (dst.dims != dims) throw ConfigError(where + ": output " + dst.str() + " is not " + dims.str());
      dst_ = dst;
    }
    mb_ = dims[0];
    for (int d = 2; d < dims.rank(); ++d) inner_ *= dims[d];
    if (is_nhwc(dst_)) {  // (mb*h*w, c) rows: each input's block of channels is innermost
      mb_ *= inner_;
      inner_ = 1;
    }
    for (const TensorDesc& s : srcs) {  // inputs in another layout than dst's convert (type kept)
      const TensorDesc in_layout = layout_desc(s.dims, s.dtype, dst_.layout);
      src_in_.emplace_back(s, in_layout, where + " input " + s.str());
      diff_src_out_.emplace_back(in_layout, s, where + " diff of input " + s.str());
    }
  }

  // srcs[i] (mb, c_i, ...) -> dst (mb, sum c_i, ...)
  void forward(const std::vector<Tensor>& srcs, const Tensor& dst) override {
    TS_CHECK(srcs.size() == srcs_.size(), "concat forward: " + std::to_string(srcs.size()) + " inputs, planned " +
                                              std::to_string(srcs_.size()));
    int64_t offset = 0;
    for (size_t i = 0; i < srcs.size(); ++i) {
      const void* src = src_in_[i].get(srcs[i].data, ctx_.stream);
      copy(src, srcs_[i].dtype, dst.data, dst_.dtype, srcs_[i].dims[1], offset, true);
      offset += srcs_[i].dims[1];
    }
  }

  // diff_dst (mb, sum c_i, ...) -> diff_srcs[i] (mb, c_i, ...) in srcs[i]'s desc; a null data
  // pointer skips that input.
  void backward(const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override {
    TS_CHECK(diff_srcs.size() == srcs_.size(), "concat backward: " + std::to_string(diff_srcs.size()) +
                                                   " gradients, planned " + std::to_string(srcs_.size()));
    int64_t offset = 0;
    for (size_t i = 0; i < diff_srcs.size(); ++i) {
      if (diff_srcs[i].data) {
        void* diff_src = diff_src_out_[i].target(diff_srcs[i].data);
        copy(diff_dst.data, dst_.dtype, diff_src, srcs_[i].dtype, srcs_[i].dims[1], offset, false);
        diff_src_out_[i].finish(diff_srcs[i].data, ctx_.stream);
      }
      offset += srcs_[i].dims[1];
    }
  }

 private:
  // The inputs agree in every dim but the channels (dims[1]); returns dst's dims.
  Shape check_srcs(const std::string& where) const {
    if (srcs_.empty()) throw ConfigError(where + ": needs at least one input");
    const Shape& first = srcs_[0].dims;
    if (first.rank() < 2) throw ConfigError(where + ": input " + srcs_[0].str() + " has no channel dim (dims[1])");
    int64_t channels = 0;
    for (const TensorDesc& s : srcs_) {
      require_activation(s, where);
      bool same = s.dims.rank() == first.rank() && s.dims[0] == first[0];
      for (int d = 2; same && d < first.rank(); ++d) same = s.dims[d] == first[d];
      if (!same)
        throw ConfigError(where + ": input " + s.str() + " differs from " + srcs_[0].str() +
                          " in a dim other than the channels (dims[1])");
      channels += s.dims[1];
    }
    Shape dims = first;
    dims[1] = channels;
    return dims;
  }

  void copy(const void* from, DType from_type, void* to, DType to_type, int64_t channels, int64_t offset,
            bool to_output) const {
    const int64_t n = mb_ * channels * inner_;
    if (n == 0) return;
    concat_copy_kernel<<<grid_blocks(n), kThreadsPerBlock, 0, ctx_.stream>>>(
        from, from_type, to, to_type, mb_, channels, inner_, dst_.dims[1], offset, to_output);
    TS_CUDA_CHECK(cudaGetLastError());
  }

  CudaContext& ctx_;
  std::vector<TensorDesc> srcs_;
  // plain: mb_ = mb, inner_ = the product of the dims after the channels; NHWC: mb_ = mb*h*w rows
  // of channels, inner_ = 1
  int64_t mb_ = 0, inner_ = 1;
  std::vector<InPort> src_in_;         // srcs[i] in dst's layout
  std::vector<OutPort> diff_src_out_;  // diff_srcs[i] from dst's layout
};

// ---- dropout --------------------------------------------------------------------------------
// dst = src * mask * scale over n values (mask bytes 0/1 in logical order).
__global__ void dropout_kernel(const uint8_t* mask, float scale, const void* src, DType src_type, void* dst,
                               DType dst_type, int64_t n) {
  for (int64_t i = grid_first(); i < n; i += grid_stride())
    store_from_float(dst, dst_type, i, mask[i] ? load_as_float(src, src_type, i) * scale : 0.0f);
}

class CudaDropoutOp final : public DropoutOp {
 public:
  CudaDropoutOp(CudaContext& ctx, const TensorDesc& src)
      : ctx_(ctx), src_(src) {
    dst_ = TensorDesc::plain(src.dims, ctx.act_dtype());
    const std::string where = "dropout on " + src.str();
    require_activation(src, where);
    // The mask is in logical order: an NHWC src is read (and its gradient written) through plain.
    const TensorDesc plain_src = TensorDesc::plain(src.dims, src.dtype);
    src_in_ = InPort(src, plain_src, where + " src in plain order");
    diff_src_out_ = OutPort(plain_src, src, where + " diff_src in plain order");
  }

  // src (n) -> dst (n, plain in the activation type)
  void forward(const uint8_t* mask, float scale, const Tensor& src, const Tensor& dst) override {
    apply(mask, scale, src_in_.get(src.data, ctx_.stream), src_.dtype, dst.data, dst_.dtype);
  }

  // diff_dst (dst's desc) -> diff_src (src's desc)
  void backward(const uint8_t* mask, float scale, const Tensor& diff_dst, const Tensor& diff_src) override {
    apply(mask, scale, diff_dst.data, dst_.dtype, diff_src_out_.target(diff_src.data), src_.dtype);
    diff_src_out_.finish(diff_src.data, ctx_.stream);
  }

 private:
  void apply(const uint8_t* mask, float scale, const void* in, DType in_type, void* out, DType out_type) const {
    const int64_t n = src_.numel();
    if (n == 0) return;
    dropout_kernel<<<grid_blocks(n), kThreadsPerBlock, 0, ctx_.stream>>>(mask, scale, in, in_type, out, out_type, n);
    TS_CUDA_CHECK(cudaGetLastError());
  }

  CudaContext& ctx_;
  TensorDesc src_;
  InPort src_in_;         // an NHWC src in plain order
  OutPort diff_src_out_;  // the gradient back into src's layout
};

}  // namespace

std::unique_ptr<AddOp> plan_add(CudaContext& ctx, const TensorDesc& a, const TensorDesc& b, bool relu) {
  return std::make_unique<CudaAddOp>(ctx, a, b, relu);
}

std::unique_ptr<ConcatOp> plan_concat(CudaContext& ctx, const std::vector<TensorDesc>& srcs, const TensorDesc& dst) {
  return std::make_unique<CudaConcatOp>(ctx, srcs, dst);
}

std::unique_ptr<DropoutOp> plan_dropout(CudaContext& ctx, const TensorDesc& src) {
  return std::make_unique<CudaDropoutOp>(ctx, src);
}

}  // namespace ts::cuda
