// The CUDA backend's element-wise tensor ops on own kernels (cuda_ops.h): add / add+ReLU, channel
// concatenation and dropout. Every tensor is plain; each input and output may be f32, f16 or bf16
// (the kernels read and write any of them, with the math in f32), so an op converts on the fly
// instead of through extra buffers. Kernels are grid-stride loops over the logical elements.
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_element.cuh"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// Throws ConfigError unless `t` is a plain tensor of f32, f16 or bf16.
void require_plain_activation(const TensorDesc& t, const std::string& where) {
  if (!t.is_plain() || !(t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16))
    throw ConfigError(where + ": tensor " + t.str() +
                      " is not plain f32, f16 or bf16 (the CUDA backend's activations are plain NCHW)");
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
      : ctx_(ctx), a_(a), b_(b), relu_(relu) {
    const std::string where = std::string(relu ? "add_relu" : "add") + " of " + a.str() + " and " + b.str();
    require_plain_activation(a, where);
    require_plain_activation(b, where);
    if (a.dims != b.dims)
      throw ConfigError(where + ": the inputs' dims differ; an add needs equal shapes (data types may differ)");
  }

  const TensorDesc& dst_desc() const override { return a_; }

  // a, b (n values) -> dst (a's desc)
  void forward(const Tensor& a, const Tensor& b, const Tensor& dst) override {
    const int64_t n = a_.numel();
    add_kernel<<<grid_blocks(n), kThreadsPerBlock, 0, ctx_.stream>>>(a.data, a_.dtype, b.data, b_.dtype, dst.data,
                                                                    a_.dtype, n, relu_);
    TS_CUDA_CHECK(cudaGetLastError());
  }

 private:
  CudaContext& ctx_;
  TensorDesc a_, b_;
  bool relu_;
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
    if (srcs.empty()) throw ConfigError(where + ": needs at least one input");
    const Shape& first = srcs[0].dims;
    if (first.rank() < 2) throw ConfigError(where + ": input " + srcs[0].str() + " has no channel dim (dims[1])");
    int64_t channels = 0;
    for (const TensorDesc& s : srcs) {
      require_plain_activation(s, where);
      bool same = s.dims.rank() == first.rank() && s.dims[0] == first[0];
      for (int d = 2; same && d < first.rank(); ++d) same = s.dims[d] == first[d];
      if (!same)
        throw ConfigError(where + ": input " + s.str() + " differs from " + srcs[0].str() +
                          " in a dim other than the channels (dims[1])");
      channels += s.dims[1];
    }
    mb_ = first[0];
    for (int d = 2; d < first.rank(); ++d) inner_ *= first[d];
    Shape dims = first;
    dims[1] = channels;
    if (dst.is_any()) {
      dst_ = TensorDesc::plain(dims, ctx.act_dtype());
    } else {
      require_plain_activation(dst, where);
      if (dst.dims != dims) throw ConfigError(where + ": output " + dst.str() + " is not " + dims.str());
      dst_ = dst;
    }
  }

  const TensorDesc& dst_desc() const override { return dst_; }

  // srcs[i] (mb, c_i, ...) -> dst (mb, sum c_i, ...)
  void forward(const std::vector<Tensor>& srcs, const Tensor& dst) override {
    TS_CHECK(srcs.size() == srcs_.size(), "concat forward: " + std::to_string(srcs.size()) + " inputs, planned " +
                                              std::to_string(srcs_.size()));
    int64_t offset = 0;
    for (size_t i = 0; i < srcs.size(); ++i) {
      copy(srcs[i].data, srcs_[i].dtype, dst.data, dst_.dtype, srcs_[i].dims[1], offset, true);
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
      if (diff_srcs[i].data)
        copy(diff_dst.data, dst_.dtype, diff_srcs[i].data, srcs_[i].dtype, srcs_[i].dims[1], offset, false);
      offset += srcs_[i].dims[1];
    }
  }

 private:
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
  TensorDesc dst_;
  int64_t mb_ = 0, inner_ = 1;  // inner: the product of the dims after the channels
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
      : ctx_(ctx), src_(src), dst_(TensorDesc::plain(src.dims, ctx.act_dtype())) {
    require_plain_activation(src, "dropout on " + src.str());
  }

  const TensorDesc& dst_desc() const override { return dst_; }

  // src (n) -> dst (n, plain in the activation type)
  void forward(const uint8_t* mask, float scale, const Tensor& src, const Tensor& dst) override {
    apply(mask, scale, src.data, src_.dtype, dst.data, dst_.dtype);
  }

  // diff_dst (dst's desc) -> diff_src (src's desc)
  void backward(const uint8_t* mask, float scale, const Tensor& diff_dst, const Tensor& diff_src) override {
    apply(mask, scale, diff_dst.data, dst_.dtype, diff_src.data, src_.dtype);
  }

 private:
  void apply(const uint8_t* mask, float scale, const void* in, DType in_type, void* out, DType out_type) const {
    const int64_t n = src_.numel();
    if (n == 0) return;
    dropout_kernel<<<grid_blocks(n), kThreadsPerBlock, 0, ctx_.stream>>>(mask, scale, in, in_type, out, out_type, n);
    TS_CUDA_CHECK(cudaGetLastError());
  }

  CudaContext& ctx_;
  TensorDesc src_, dst_;
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
