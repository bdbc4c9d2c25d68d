// The planned cuDNN convolution (cuda_ops.h): src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw) f32,
// bia (oc) f32 -> dst (mb,oc,oh,ow), computed in the run's activation type t = act_dtype().
// Algorithms and math modes are chosen once at plan time (cuda_conv_algos.h) and recorded as
// one plan note; the op's workspace comes from the context's shared block. Weights are
// converted to t at each forward (they change every step) and reused by the backward that
// follows; the bias and its fused ReLU are one own kernel after cuDNN (the bias stays f32);
// weight and bias gradients are written as f32.
//
// Layout (cuda_layout.h): ungrouped convolutions of tf32/fp16/bf16 runs compute in NHWC, with
// the filter in cuDNN's NHWC order KRSC (oc,kh,kw,ic): the f32 (oc,ic,kh,kw) weights are
// transposed into an op-owned KRSC buffer at forward and the KRSC weight gradient transposed back
// into the caller's f32 (oc,ic,kh,kw). Grouped and depthwise convolutions stay NCHW (cuDNN's
// legacy API does not promise NHWC kernels for them), and so does a conv for which cuDNN has no
// NHWC algorithm within the workspace limit; inputs in the other layout are converted at the
// op's edge by its ports.
#include <chrono>
#include <optional>
#include <cstdio>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_conv_algos.h"
#include "backend/cuda/cuda_conv_graph.h"
#include "backend/cuda/cuda_dnn_kernels.h"
#include "backend/cuda/cuda_dtype_port.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

Shape conv_src_dims(const ConvDesc& d) { return Shape{d.mb, d.ic, d.ih, d.iw}; }
Shape conv_dst_dims(const ConvDesc& d) { return Shape{d.mb, d.oc, d.oh(), d.ow()}; }

// The descriptor's own consistency (parse() checks the same for text; a struct may be built by
// hand) and the src desc against it.
void check_conv(const ConvDesc& d, const TensorDesc& src) {
  const std::string name = d.str();
  if (d.mb < 1 || d.ic < 1 || d.oc < 1 || d.kh < 1 || d.kw < 1 || d.sh < 1 || d.sw < 1 || d.ph < 0 || d.pw < 0 ||
      d.groups < 1 || d.ic % d.groups || d.oc % d.groups || d.oh() < 1 || d.ow() < 1)
    throw ConfigError("cuda backend: cannot plan " + name +
                      ": sizes and strides must be positive, padding non-negative, ic and oc divisible by the "
                      "groups and the output non-empty");
  check_activation_desc(src, "conv " + name + " src");
  if (src.dims != conv_src_dims(d))
    throw ConfigError("cuda backend: conv " + name + ": src " + src.str() + " is not " + conv_src_dims(d).str());
}

std::string mebibytes(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fMiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

// One direction of a legacy choice: "IMPLICIT_PRECOMP_GEMM(tensor_op,find,0.412ms)", the time
// the search measured for it when it searched.
std::string legacy_note(const std::string& algo, const ConvAlgo& c) {
  char time[32] = "";
  if (c.find_ms >= 0) std::snprintf(time, sizeof time, ",%.3fms", static_cast<double>(c.find_ms));
  return algo + "(" + math_name(c.math) + "," + c.chosen_by + time + ")";
}

// "conv:mb..._g1 f16 nhwc: fwd=IMPLICIT_PRECOMP_GEMM(tensor_op,find,0.412ms)
//  bwd_data=ALGO_1(tensor_op,find,0.388ms) bwd_filter=ALGO_1(tensor_op,heuristic) ws=12.0MiB
//  limit=512.0MiB planned_in=35.2ms", or with cuda.conv_api: graph
//  "fwd=ENGINE_12(graph,find,0.401ms) ...", and " graph_refused=<why>" where it fell back to the
// legacy calls. bench/gpu_peer.py sums the searched times to weigh the convolutions against the step.
std::string conv_plan_note(const ConvDesc& d, DType t, bool nhwc, const std::string (&directions)[3],
                           size_t workspace, size_t limit, double plan_ms, const std::string& graph_refused) {
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1fms", plan_ms);
  return d.str() + " " + dtype_name(t) + (nhwc ? " nhwc" : " nchw") + ": fwd=" + directions[0] +
         " bwd_data=" + directions[1] + " bwd_filter=" + directions[2] + " ws=" + mebibytes(workspace) +
         " limit=" + mebibytes(limit) + " planned_in=" + ms +
         (graph_refused.empty() ? std::string() : " graph_refused=" + graph_refused);
}

class CudaConvOp final : public ConvOp {
 public:
  CudaConvOp(CudaContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), name_(d.str()), t_(ctx.act_dtype()) {
    const auto start = std::chrono::steady_clock::now();
    check_conv(d, src);
    nhwc_ = d.groups == 1 && preferred_layout(ctx.precision, src.dims) == kNhwcLayout;
    // dst is checked before cuDNN is asked anything
    dst_ = output_desc(dst, conv_dst_dims(d), t_, "conv " + name_, nhwc_ ? kNhwcLayout : kPlainLayout);
    choose_layout_and_algos();  // may fall back to NCHW
    const LayoutId layout = nhwc_ ? kNhwcLayout : kPlainLayout;
    if (dst.is_any()) dst_ = layout_desc(conv_dst_dims(d), t_, layout);
    const size_t workspace = graphs_ ? graphs_->max_workspace() : algos_.max_workspace();
    ctx.reserve_workspace(workspace);
    const int64_t n_wei = d.weight_count();
    const std::string what = "conv " + name_;
    const TensorDesc x = layout_desc(src.dims, t_, layout), y = layout_desc(conv_dst_dims(d), t_, layout);
    src_in_ = InPort(src, x, what + " src");
    dst_out_ = OutPort(y, dst_, what + " dst");
    diff_dst_in_ = InPort(dst_, y, what + " diff_dst");
    diff_src_out_ = OutPort(x, src, what + " diff_src");
    if (nhwc_) {
      wei_krsc_ = DeviceMemory(static_cast<size_t>(n_wei) * dtype_bytes(t_), what + " weights (oc,kh,kw,ic)");
      diff_wei_krsc_ = DeviceMemory(static_cast<size_t>(n_wei) * dtype_bytes(t_), what + " diff_wei (oc,kh,kw,ic)");
    } else {
      wei_in_ = InPort(DType::f32, t_, n_wei, what + " weights");
      diff_wei_out_ = OutPort(t_, DType::f32, n_wei, what + " diff_wei");
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const std::string directions[3] = {
        graphs_ ? graphs_->fwd.note() : legacy_note(fwd_algo_name(algos_.fwd.algo), algos_.fwd),
        graphs_ ? graphs_->bwd_data.note() : legacy_note(bwd_data_algo_name(algos_.bwd_data.algo), algos_.bwd_data),
        graphs_ ? graphs_->bwd_filter.note()
                : legacy_note(bwd_filter_algo_name(algos_.bwd_filter.algo), algos_.bwd_filter)};
    ctx.plan_notes.push_back(
        conv_plan_note(d, t_, nhwc_, directions, workspace, ctx.workspace_limit, ms, graph_refused_));
  }

  // src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) -> dst (mb,oc,oh,ow) [relu'd when d.relu]
  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    TS_CHECK(!d_.bias || bia, "conv forward: " + name_ + " has a bias but bia is null");
    const cudaStream_t stream = ctx_.stream;
    const void* x = src_in_.get(src.data, stream);
    const void* w = weights(wei, false);
    void* y = dst_out_.target(dst.data);
    const float one = 1.0f, zero = 0.0f;
    if (graphs_)
      graphs_->fwd.execute(ctx_.cudnn, const_cast<void*>(x), const_cast<void*>(w), y, workspace(graphs_->fwd.workspace()));
    else
      TS_CUDNN_CHECK(cudnnConvolutionForward(ctx_.cudnn, &one, problem_.x.get(), x, problem_.w.get(), w,
                                             problem_.fwd.get(), static_cast<cudnnConvolutionFwdAlgo_t>(algos_.fwd.algo),
                                             workspace(algos_.fwd.workspace), algos_.fwd.workspace, &zero,
                                             problem_.y.get(), y));
    bias_relu_forward(y, t_, d_.bias ? bia : nullptr, d_.mb, d_.oc, d_.oh() * d_.ow(), d_.relu, nhwc_, stream);
    dst_out_.finish(dst.data, stream);
  }

  // diff_wei and diff_bia (f32) from the forward's src, then diff_src unless it has no data.
  // A fused ReLU's backward ran before (in the ReLU layer), so diff_dst is the conv's own.
  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    TS_CHECK(!d_.bias || diff_bia, "conv backward: " + name_ + " has a bias but diff_bia is null");
    const cudaStream_t stream = ctx_.stream;
    const void* x = src_in_.get_reused(src.data, stream);
    const void* dy = diff_dst_in_.get(diff_dst.data, stream);
    void* dw = nhwc_ ? diff_wei_krsc_.get() : diff_wei_out_.target(diff_wei);
    const float one = 1.0f, zero = 0.0f;
    if (graphs_)
      graphs_->bwd_filter.execute(ctx_.cudnn, const_cast<void*>(x), dw, const_cast<void*>(dy),
                                  workspace(graphs_->bwd_filter.workspace()));
    else
      TS_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          ctx_.cudnn, &one, problem_.x.get(), x, problem_.y.get(), dy, problem_.bwd_filter.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algos_.bwd_filter.algo), workspace(algos_.bwd_filter.workspace),
          algos_.bwd_filter.workspace, &zero, problem_.w.get(), dw));
    finish_diff_wei(diff_wei);
    if (d_.bias) bias_backward(dy, t_, d_.mb, d_.oc, d_.oh() * d_.ow(), nhwc_, diff_bia, stream);
    if (!diff_src) return;
    const void* w = weights(wei, true);
    void* dx = diff_src_out_.target(diff_src.data);
    if (graphs_)
      graphs_->bwd_data.execute(ctx_.cudnn, dx, const_cast<void*>(w), const_cast<void*>(dy),
                                workspace(graphs_->bwd_data.workspace()));
    else
      TS_CUDNN_CHECK(cudnnConvolutionBackwardData(
          ctx_.cudnn, &one, problem_.w.get(), w, problem_.y.get(), dy, problem_.bwd_data.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algos_.bwd_data.algo), workspace(algos_.bwd_data.workspace),
          algos_.bwd_data.workspace, &zero, problem_.x.get(), dx));
    diff_src_out_.finish(diff_src.data, stream);
  }

 private:
  // cuDNN's view: x (mb,ic,ih,iw), w (oc,ic/g,kh,kw), y (mb,oc,oh,ow) in t, accumulating in f32
  // (f16/bf16 data with f32 compute: cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configurations).
  void describe_problem() {
    const ConvDesc& d = d_;
    problem_.dtype = t_;
    problem_.x_numel = d.mb * d.ic * d.ih * d.iw;
    problem_.w_numel = d.weight_count();
    problem_.y_numel = d.mb * d.oc * d.oh() * d.ow();
    problem_.x = TensorDescriptor(t_, d.mb, d.ic, d.ih, d.iw, nhwc_);
    problem_.y = TensorDescriptor(t_, d.mb, d.oc, d.oh(), d.ow(), nhwc_);
    problem_.w = FilterDescriptor(t_, d.oc, d.ic / d.groups, d.kh, d.kw, nhwc_);
    const cudnnMathType_t math = conv_math(ctx_.precision);
    problem_.fwd = ConvolutionDescriptor(d.ph, d.pw, d.sh, d.sw, d.groups, CUDNN_DATA_FLOAT, math);
    problem_.bwd_data = ConvolutionDescriptor(d.ph, d.pw, d.sh, d.sw, d.groups, CUDNN_DATA_FLOAT, math);
    problem_.bwd_filter = ConvolutionDescriptor(d.ph, d.pw, d.sh, d.sw, d.groups, CUDNN_DATA_FLOAT, math);
    int n = 0, c = 0, h = 0, w = 0;  // cuDNN's output size must be ConvDesc's
    TS_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(problem_.fwd.get(), problem_.x.get(), problem_.w.get(), &n,
                                                         &c, &h, &w));
    TS_CHECK(n == d.mb && c == d.oc && h == d.oh() && w == d.ow(),
             "conv " + name_ + ": cuDNN computes an output of (" + std::to_string(n) + "," + std::to_string(c) + "," +
                 std::to_string(h) + "," + std::to_string(w) + "), not " + conv_dst_dims(d).str());
  }

  // cuDNN's problem and algorithms in the preferred layout; when cuDNN has no algorithm for NHWC
  // within the workspace limit, NCHW instead (the ports convert at the edges). cuda.conv_api:
  // graph takes the graph API's engines in the preferred layout where every direction has one.
  void choose_layout_and_algos() {
    const std::string what = "conv " + name_;
    if (ctx_.conv_api == ConvApi::graph) {
      describe_problem();  // checks cuDNN's output size
      graphs_ = choose_conv_graphs(ctx_, ConvGeometry{d_, t_, nhwc_}, graph_refused_);
      if (graphs_) return;
    }
    if (nhwc_) {
      try {
        describe_problem();
        algos_ = choose_conv_algos(ctx_, problem_, what);
        return;
      } catch (const RuntimeError&) {
        nhwc_ = false;
      }
    }
    describe_problem();
    algos_ = choose_conv_algos(ctx_, problem_, what);
  }

  // The weights (oc,ic/g,kh,kw) f32 in t, in the filter order of the layout; `reuse`: the
  // backward after a forward reads what that forward converted (ops.h: wei unchanged since).
  const void* weights(const float* wei, bool reuse) {
    if (!nhwc_) return reuse ? wei_in_.get_reused(wei, ctx_.stream) : wei_in_.get(wei, ctx_.stream);
    if (reuse && wei_krsc_of_ == wei) return wei_krsc_.get();
    transpose_nchw_nhwc(wei, DType::f32, wei_krsc_.get(), t_, d_.oc, d_.ic / d_.groups, d_.kh, d_.kw, true,
                        ctx_.stream);
    wei_krsc_of_ = wei;
    return wei_krsc_.get();
  }

  // The weight gradient cuDNN wrote (in t, the layout's filter order) into f32 (oc,ic/g,kh,kw).
  void finish_diff_wei(float* diff_wei) {
    if (!nhwc_) {
      diff_wei_out_.finish(diff_wei, ctx_.stream);
      return;
    }
    transpose_nchw_nhwc(diff_wei_krsc_.get(), t_, diff_wei, DType::f32, d_.oc, d_.ic / d_.groups, d_.kh, d_.kw, false,
                        ctx_.stream);
  }

  // The shared workspace for one algorithm or engine (reserved at plan time; fetched at every
  // call since a later plan may have grown it).
  void* workspace(size_t bytes) const {
    if (bytes == 0) return nullptr;
    TS_CHECK(ctx_.workspace_bytes() >= bytes,
             "conv " + name_ + ": the CUDA workspace (" + std::to_string(ctx_.workspace_bytes()) +
                 " bytes) is smaller than the " + std::to_string(bytes) + " bytes reserved at plan time");
    return ctx_.workspace();
  }

  CudaContext& ctx_;
  ConvDesc d_;
  std::string name_;  // the descriptor, for messages
  DType t_;           // the type cuDNN computes in (act_dtype() at plan time)
  bool nhwc_ = false;  // cuDNN computes in NHWC (filter KRSC), else NCHW (filter KCRS)
  ConvProblem problem_;
  ConvAlgos algos_;                    // the legacy calls' choice, unless graphs_
  std::optional<ConvGraphs> graphs_;   // cuda.conv_api: graph, where every direction has an engine
  std::string graph_refused_;          // why graph fell back to the legacy calls ("" otherwise)
  InPort src_in_, wei_in_, diff_dst_in_;
  OutPort dst_out_, diff_src_out_, diff_wei_out_;
  DeviceMemory wei_krsc_, diff_wei_krsc_;  // NHWC only: (oc,kh,kw,ic) in t
  const float* wei_krsc_of_ = nullptr;     // the weights wei_krsc_ holds a transpose of
};

}  // namespace

std::unique_ptr<ConvOp> plan_conv(CudaContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return std::make_unique<CudaConvOp>(ctx, d, src, dst);
}

}  // namespace ts::cuda
