// The fully connected op of the CUDA backend (cuda_ops.h) on cuBLASLt: three matmuls planned once
// (cuda_lt_matmul.h), the bias in the forward's epilogue and the bias gradient in the weight
// gradient's epilogue where cuBLASLt has them for the data types, own kernels where not.
//
// Row-major tensors in cuBLAS's column-major terms: cuBLAS reads a row-major (r, c) matrix as the
// column-major (c, r) matrix, its transpose. With X = src (mb, ic), W = wei (oc, ic), Y = dst
// (mb, oc), all row-major (a (mb, c, h, w) src is (mb, ic) with ic = c*h*w):
//   forward          Y = X W^T + b  ->  Y^T (oc,mb) = W (oc,ic) x X^T (ic,mb)
//                    m = oc, n = mb, k = ic; A = W stored as (ic,oc), transposed; B = X^T (ic,mb);
//                    the bias is one value per row of Y^T (epilogue BIAS);
//   backward data   dX = dY W       ->  dX^T (ic,mb) = W^T (ic,oc) x dY^T (oc,mb)
//                    m = ic, n = mb, k = oc; A = W^T (ic,oc); B = dY^T (oc,mb); no transposes;
//   backward weights dW = dY^T X    ->  dW^T (ic,oc) = X^T (ic,mb) x dY (mb,oc)
//                    m = ic, n = oc, k = mb; A = X^T (ic,mb); B = dY^T stored (oc,mb), transposed;
//                    db = sum over k of op(B), one value per column of dW^T (epilogue BGRADB).
//
// Precisions: fp32 computes in f32 (CUBLAS_COMPUTE_32F: no TF32), tf32 in CUBLAS_COMPUTE_32F_FAST_TF32,
// fp16 / bf16 with 16-bit A and B and f32 accumulation. Inputs in another data type than the
// compute type (an f32 image in an fp16 run; the f32 master weights) are converted into op-owned
// buffers, which backward reuses (ops.h: its forward's tensors are unchanged). Outputs are written
// in their own data type by the matmul when cuBLASLt can (f16/bf16 A/B with f32 D: the weight
// gradient), else staged in the compute type and converted.
//
// A 4-D src in the NHWC layout (cuda_layout.h; a conv stack's output in tf32/fp16/bf16 runs) is
// flattened in the logical (c,h,w) order: it is transposed into the plain src_c_ buffer at
// forward, and diff_src is staged plain and transposed back into src's NHWC desc.
#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_fc_kernels.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_lt_matmul.h"
#include "backend/cuda/cuda_device_memory.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// cuBLASLt's workspace per matmul: its documented recommendation for Hopper (32 MiB), within the
// backend's limit per op.
constexpr size_t kLtWorkspaceBytes = size_t{32} << 20;

bool is_activation_type(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// How a matmul was planned: D written directly in the tensor's type or staged in the compute type,
// and whether its epilogue (bias, bias gradient) runs in cuBLASLt.
struct GemmChoice {
  DType d = DType::f32;
  bool epilogue = false;
};

class CudaFcOp final : public FcOp {
 public:
  CudaFcOp(CudaContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), src_(src), compute_(ctx.act_dtype()) {
    check_descs(dst);
    const size_t cbytes = dtype_bytes(compute_);
    if (src_.dtype != compute_ || is_nhwc(src_))
      src_c_ = DeviceMemory(size_t(d_.mb * d_.ic) * cbytes, "fc src in the compute type");
    if (compute_ != DType::f32) wei_c_ = DeviceMemory(size_t(d_.oc * d_.ic) * cbytes, "fc weights in the compute type");
    if (dst_.dtype != compute_)
      diff_dst_c_ = DeviceMemory(size_t(d_.mb * d_.oc) * cbytes, "fc diff_dst in the compute type");
    if (d_.bias) {  // epilogue vectors: oc values of at most 4 bytes, fixed at plan time
      bias_c_ = DeviceMemory(size_t(d_.oc) * sizeof(float), "fc bias vector");
      diff_bia_c_ = DeviceMemory(size_t(d_.oc) * sizeof(float), "fc bias gradient");
    }
    plan_matmuls();
    if (fwd_.d != dst_.dtype) dst_stage_ = DeviceMemory(size_t(d_.mb * d_.oc) * cbytes, "fc dst staging");
    if (bwd_weights_.d != DType::f32)
      diff_wei_stage_ = DeviceMemory(size_t(d_.oc * d_.ic) * cbytes, "fc weight-gradient staging");
    if (bwd_data_.d != src_.dtype || is_nhwc(src_))
      diff_src_stage_ = DeviceMemory(size_t(d_.mb * d_.ic) * dtype_bytes(bwd_data_.d), "fc diff_src staging");
    ctx_.plan_notes.push_back(note());
  }

  // src (mb, ic), wei (oc, ic), bia (oc) or null -> dst (mb, oc)
  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    TS_CHECK(!d_.bias || bia, "fc forward: " + d_.str() + " has a bias but bia is null");
    check_tensor(src, src_, "src");
    check_tensor(dst, dst_, "dst");
    const void* x = convert_src(src);
    const void* w = convert_weights(wei);
    if (d_.bias && fwd_.epilogue) convert(bia, DType::f32, bias_c_.get(), fwd_.d, d_.oc, ctx_.stream);
    void* y = dst_stage_ ? dst_stage_.get() : dst.data;
    fwd_lt_.run(ctx_, w, x, y);
    if (d_.bias && !fwd_.epilogue) add_bias_rows(y, fwd_.d, bia, d_.mb, d_.oc, ctx_.stream);
    if (dst_stage_) convert(y, fwd_.d, dst.data, dst_.dtype, d_.mb * d_.oc, ctx_.stream);
    forwarded_ = true;
  }

  // diff_dst (mb, oc) -> diff_wei (oc, ic) f32, diff_bia (oc) f32 and, if it has data, diff_src
  // (mb, ic), from the latest forward's converted src and weights.
  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    TS_CHECK(!d_.bias || diff_bia, "fc backward: " + d_.str() + " has a bias but diff_bia is null");
    check_tensor(src, src_, "src");
    check_tensor(diff_dst, dst_, "diff_dst");
    if (!forwarded_) {  // nothing converted yet: convert now (a backward without a forward)
      convert_src(src);
      convert_weights(wei);
    }
    const void* x = src_c_ ? src_c_.get() : src.data;
    const void* dy = diff_dst.data;
    if (diff_dst_c_) {
      convert(diff_dst.data, dst_.dtype, diff_dst_c_.get(), compute_, d_.mb * d_.oc, ctx_.stream);
      dy = diff_dst_c_.get();
    }
    void* dw = diff_wei_stage_ ? diff_wei_stage_.get() : diff_wei;
    bwd_weights_lt_.run(ctx_, x, dy, dw);
    if (diff_wei_stage_) convert(dw, bwd_weights_.d, diff_wei, DType::f32, d_.oc * d_.ic, ctx_.stream);
    if (d_.bias && bwd_weights_.epilogue)
      convert(diff_bia_c_.get(), bwd_weights_.d, diff_bia, DType::f32, d_.oc, ctx_.stream);
    else if (d_.bias)
      bias_gradient(diff_dst.data, dst_.dtype, d_.mb, d_.oc, diff_bia, ctx_.stream);
    if (!diff_src) return;
    check_tensor(diff_src, src_, "diff_src");
    const void* w = wei_c_ ? wei_c_.get() : wei;
    void* dx = diff_src_stage_ ? diff_src_stage_.get() : diff_src.data;
    bwd_data_lt_.run(ctx_, w, dy, dx);
    if (diff_src_stage_)
      convert_tensor(dx, TensorDesc::plain(src_.dims, bwd_data_.d), diff_src.data, src_, ctx_.stream);
  }

 private:
  // src must hold (mb, ic) values of an activation type, plain or 4-D NHWC; dst (mb, oc) is planned plain in
  // the activation type when requested as "any", else as requested.
  void check_descs(const TensorDesc& dst) {
    const std::string where = "fc " + d_.str() + ": ";
    if (!is_cuda_layout(src_) || !is_activation_type(src_.dtype) || src_.dims.rank() < 2 || src_.dims[0] != d_.mb ||
        src_.numel() != d_.mb * d_.ic)
      throw ConfigError(where + "input " + src_.str() + " is not (mb, ic) = (" + std::to_string(d_.mb) + "," +
                        std::to_string(d_.ic) + ") values of f32, f16 or bf16 (or (mb, c, h, w) with c*h*w = ic)");
    if (dst.is_any()) {
      dst_ = TensorDesc::plain(Shape{d_.mb, d_.oc}, ctx_.act_dtype());
      return;
    }
    if (!dst.is_plain() || !is_activation_type(dst.dtype) || dst.numel() != d_.mb * d_.oc ||
        dst.dims.rank() < 1 || dst.dims[0] != d_.mb)
      throw ConfigError(where + "output " + dst.str() + " is not plain (mb, oc) = (" + std::to_string(d_.mb) + "," +
                        std::to_string(d_.oc) + ") values of f32, f16 or bf16; request it so or as any");
    dst_ = dst;
  }

  void check_tensor(const Tensor& t, const TensorDesc& planned, const char* what) const {
    TS_CHECK(t.data && t.desc.dtype == planned.dtype && t.desc.numel() == planned.numel(),
             "fc " + d_.str() + ": " + what + " " + t.desc.str() + " is not the planned " + planned.str());
  }

  // The src plain in the compute type (converted into src_c_ when its type or layout differs).
  const void* convert_src(const Tensor& src) {
    if (!src_c_) return src.data;
    convert_tensor(src.data, src_, src_c_.get(), TensorDesc::plain(src_.dims, compute_), ctx_.stream);
    return src_c_.get();
  }

  // The f32 master weights in the compute type (converted into wei_c_ for fp16/bf16).
  const void* convert_weights(const float* wei) {
    if (!wei_c_) return wei;
    convert(wei, DType::f32, wei_c_.get(), compute_, d_.oc * d_.ic, ctx_.stream);
    return wei_c_.get();
  }

  void plan_matmuls() {
    const cublasComputeType_t math =
        ctx_.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    LtMatmulSpec fwd{CUBLAS_OP_T, CUBLAS_OP_N, d_.oc, d_.mb, d_.ic, compute_, dst_.dtype, math,
                     CUBLASLT_EPILOGUE_BIAS, bias_c_.get()};
    fwd_ = plan_gemm(fwd_lt_, fwd, d_.bias, "forward");
    LtMatmulSpec weights{CUBLAS_OP_N, CUBLAS_OP_T, d_.ic, d_.oc, d_.mb, compute_, DType::f32, math,
                         CUBLASLT_EPILOGUE_BGRADB, diff_bia_c_.get()};
    bwd_weights_ = plan_gemm(bwd_weights_lt_, weights, d_.bias, "backward weights");
    LtMatmulSpec data{CUBLAS_OP_N, CUBLAS_OP_N, d_.ic, d_.mb, d_.oc, compute_, src_.dtype, math,
                      CUBLASLT_EPILOGUE_DEFAULT, nullptr};
    bwd_data_ = plan_gemm(bwd_data_lt_, data, false, "backward data");
  }

  // Plans `mm` for the first combination cuBLASLt has an algorithm for: D in spec.d (the
  // tensor's type) before D in the compute type (staged, converted after), and with spec's
  // epilogue (when `want_epilogue`) before without it (own kernel after).
  GemmChoice plan_gemm(LtMatmul& mm, LtMatmulSpec spec, bool want_epilogue, const char* what) {
    const size_t max_workspace = std::min(ctx_.workspace_limit, kLtWorkspaceBytes);
    std::vector<DType> d_types{spec.d};
    if (spec.d != compute_) d_types.push_back(compute_);
    const cublasLtEpilogue_t epilogue = spec.epilogue;
    for (DType d : d_types)
      for (bool with_epilogue : {true, false}) {
        if (with_epilogue && !want_epilogue) continue;
        spec.d = d;
        spec.epilogue = with_epilogue ? epilogue : CUBLASLT_EPILOGUE_DEFAULT;
        if (mm.plan(ctx_, spec, max_workspace)) return GemmChoice{d, with_epilogue};
      }
    throw ConfigError("fc " + d_.str() + ": cuBLASLt has no algorithm for the " + what + " matmul at precision " +
                      precision_name(ctx_.precision) + " (A/B " + dtype_name(compute_) + ", D " +
                      dtype_name(d_types.front()) + " or " + dtype_name(compute_) +
                      ", workspace <= " + std::to_string(max_workspace) + " B; " + mm.why_not() +
                      "); try precision fp32");
  }

  // One line for the plan notes: shapes, types and what each matmul chose.
  std::string note() const {
    auto gemm = [&](const char* name, const LtMatmul& mm, const GemmChoice& c, const char* epilogue) {
      std::string s = std::string(name) + " " + mm.describe() + " D " + dtype_name(c.d);
      if (epilogue)
        s += c.epilogue ? std::string(", ") + epilogue + " epilogue" : std::string(", own ") + epilogue + " kernel";
      return s;
    };
    return d_.str() + " src " + src_.str() + " dst " + dst_.str() + " " + precision_name(ctx_.precision) +
           " (A/B " + dtype_name(compute_) + ", f32 accumulate): " +
           gemm("forward", fwd_lt_, fwd_, d_.bias ? "bias" : nullptr) + "; " +
           gemm("backward weights", bwd_weights_lt_, bwd_weights_, d_.bias ? "bias-gradient" : nullptr) + "; " +
           gemm("backward data", bwd_data_lt_, bwd_data_, nullptr) + "; workspace " +
           std::to_string(std::max({fwd_lt_.workspace_bytes(), bwd_weights_lt_.workspace_bytes(),
                                    bwd_data_lt_.workspace_bytes()})) + " B";
  }

  CudaContext& ctx_;
  FcDesc d_;
  TensorDesc src_;
  DType compute_;  // A/B type of every matmul: the run's activation type
  LtMatmul fwd_lt_, bwd_weights_lt_, bwd_data_lt_;
  GemmChoice fwd_, bwd_weights_, bwd_data_;
  DeviceMemory src_c_;       // src plain in compute_ (mb, ic), when src is not
  DeviceMemory wei_c_;       // weights in compute_ (oc, ic), for fp16/bf16
  DeviceMemory bias_c_;      // bias in the forward's D type (oc): the BIAS epilogue's vector
  DeviceMemory dst_stage_;   // forward D in compute_ (mb, oc), when dst's type cannot be written
  DeviceMemory diff_dst_c_;  // diff_dst in compute_ (mb, oc), when dst is not in compute_
  DeviceMemory diff_wei_stage_, diff_bia_c_, diff_src_stage_;  // the backward's counterparts
  bool forwarded_ = false;  // src_c_ and wei_c_ hold the latest forward's conversions
};

}  // namespace

std::unique_ptr<FcOp> plan_fc(CudaContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  if (d.mb < 1 || d.ic < 1 || d.oc < 1)
    throw ConfigError("fc " + d.str() + ": mb, ic and oc must be positive");
  return std::make_unique<CudaFcOp>(ctx, d, src, dst);
}

}  // namespace ts::cuda
