// Choosing cuDNN convolution algorithms at plan time (cuda_conv_algos.h).
#include "backend/cuda/cuda_conv_algos.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype_port.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// Buffers the size of the op's tensors (zeroed: no NaN or denormal patterns skew the timings)
// and the search's workspace.
struct FindScratch {
  DeviceMemory x, w, y, workspace;
};

// Null when the device has too little free memory: the heuristics choose instead.
std::optional<FindScratch> allocate_find_scratch(CudaContext& ctx, const ConvProblem& p) {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    cudaGetLastError();
    return std::nullopt;
  }
  const size_t element = dtype_bytes(p.dtype);
  const size_t tensors = static_cast<size_t>(p.x_numel + p.w_numel + p.y_numel) * element;
  if (tensors >= free_bytes) return std::nullopt;
  // Half of what is left at most: the run's own tensors come later and must still fit.
  const size_t workspace = std::min(ctx.workspace_limit, (free_bytes - tensors) / 2);
  try {
    FindScratch s{DeviceMemory(static_cast<size_t>(p.x_numel) * element, "the algorithm search (src)"),
                  DeviceMemory(static_cast<size_t>(p.w_numel) * element, "the algorithm search (weights)"),
                  DeviceMemory(static_cast<size_t>(p.y_numel) * element, "the algorithm search (dst)"),
                  DeviceMemory(workspace, "the algorithm search (workspace)")};
    for (const DeviceMemory* m : {&s.x, &s.w, &s.y})
      if (m->bytes()) TS_CUDA_CHECK(cudaMemsetAsync(m->get(), 0, m->bytes(), ctx.stream));
    return s;
  } catch (const RuntimeError&) {
    return std::nullopt;  // out of memory: heuristics instead
  }
}

// One direction's cuDNN entry points, bound to its tensors. Perf is the direction's
// cudnnConvolution*AlgoPerf_t (all three have algo, status, memory, mathType).
template <typename Perf>
struct Direction {
  const char* name;
  int zero_workspace_algo;
  ConvolutionDescriptor* conv;
  std::function<cudnnStatus_t(int* count)> max_count;
  std::function<cudnnStatus_t(int requested, int* returned, Perf* perfs, FindScratch& s)> find;
  std::function<cudnnStatus_t(int requested, int* returned, Perf* perfs)> heuristic;
  std::function<cudnnStatus_t(int algo, size_t* bytes)> workspace_of;
};

// The first of `perfs` (best first) that ran, whose math the precision allows, that is
// deterministic where that is asked for, and whose workspace (asked again with its math type
// set: the execution's own requirement) fits.
template <typename Perf>
std::optional<ConvAlgo> first_fitting(const Direction<Perf>& d, const Perf* perfs, int count, Precision precision,
                                      size_t limit, bool deterministic_only, const char* chosen_by) {
  for (int i = 0; i < count; ++i) {
    const Perf& perf = perfs[i];
    if (perf.status != CUDNN_STATUS_SUCCESS || !conv_math_allowed(precision, perf.mathType)) continue;
    if (deterministic_only && perf.determinism != CUDNN_DETERMINISTIC) continue;
    d.conv->set_math(perf.mathType);
    size_t bytes = 0;
    if (d.workspace_of(static_cast<int>(perf.algo), &bytes) != CUDNN_STATUS_SUCCESS || bytes > limit) continue;
    const bool timed = std::string(chosen_by) == "find";
    return ConvAlgo{static_cast<int>(perf.algo), perf.mathType, bytes, chosen_by, timed ? perf.time : -1.0f};
  }
  return std::nullopt;
}

template <typename Perf>
ConvAlgo choose(const Direction<Perf>& d, CudaContext& ctx, std::optional<FindScratch>& scratch,
                const std::string& what) {
  const Precision precision = ctx.precision;
  const size_t limit = ctx.workspace_limit;
  int capacity = 0;
  TS_CUDNN_CHECK(d.max_count(&capacity));
  std::vector<Perf> perfs(static_cast<size_t>(std::max(capacity, 1)));
  int returned = 0;
  const bool deterministic = ctx.algorithm_choice == AlgorithmChoice::deterministic;
  d.conv->set_math(conv_math(precision));
  if (scratch && d.find(capacity, &returned, perfs.data(), *scratch) == CUDNN_STATUS_SUCCESS)
    if (auto a = first_fitting(d, perfs.data(), returned, precision, limit, false, "find")) return *a;
  d.conv->set_math(conv_math(precision));
  returned = 0;
  if (d.heuristic(capacity, &returned, perfs.data()) == CUDNN_STATUS_SUCCESS)
    if (auto a = first_fitting(d, perfs.data(), returned, precision, limit, deterministic,
                               deterministic ? "deterministic" : "heuristic"))
      return *a;
  if (deterministic)
    throw RuntimeError("cuda backend: no deterministic cuDNN " + std::string(d.name) + " algorithm for " + what +
                       " runs at " + precision_name(precision) + " within the workspace limit of " +
                       std::to_string(limit) + " bytes; raise cuda.workspace_mb or set cuda.algorithms to heuristic "
                       "or find (then a resumed run may differ in its last bits)");
  const cudnnMathType_t math = conv_math(precision);
  d.conv->set_math(math);
  size_t bytes = 0;
  if (d.workspace_of(d.zero_workspace_algo, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= limit)
    return ConvAlgo{d.zero_workspace_algo, math, bytes, "fallback"};
  throw RuntimeError("cuda backend: no cuDNN " + std::string(d.name) + " algorithm for " + what + " runs at " +
                     precision_name(precision) + " within the workspace limit of " + std::to_string(limit) +
                     " bytes; raise the CUDA workspace limit or use another precision");
}

Direction<cudnnConvolutionFwdAlgoPerf_t> forward_direction(CudaContext& ctx, ConvProblem& p) {
  cudnnHandle_t h = ctx.cudnn;
  return {"forward", CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &p.fwd,
          [h](int* count) { return cudnnGetConvolutionForwardAlgorithmMaxCount(h, count); },
          [h, &p](int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perfs, FindScratch& s) {
            return cudnnFindConvolutionForwardAlgorithmEx(h, p.x.get(), s.x.get(), p.w.get(), s.w.get(), p.fwd.get(),
                                                          p.y.get(), s.y.get(), requested, returned, perfs,
                                                          s.workspace.get(), s.workspace.bytes());
          },
          [h, &p](int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* perfs) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.get(), p.w.get(), p.fwd.get(), p.y.get(), requested,
                                                          returned, perfs);
          },
          [h, &p](int algo, size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(h, p.x.get(), p.w.get(), p.fwd.get(), p.y.get(),
                                                           static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
          }};
}

// diff_src (dx, x's desc) from diff_dst (dy, y's desc) and the weights.
Direction<cudnnConvolutionBwdDataAlgoPerf_t> backward_data_direction(CudaContext& ctx, ConvProblem& p) {
  cudnnHandle_t h = ctx.cudnn;
  return {"backward-data", CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &p.bwd_data,
          [h](int* count) { return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, count); },
          [h, &p](int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perfs, FindScratch& s) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(h, p.w.get(), s.w.get(), p.y.get(), s.y.get(),
                                                               p.bwd_data.get(), p.x.get(), s.x.get(), requested,
                                                               returned, perfs, s.workspace.get(), s.workspace.bytes());
          },
          [h, &p](int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w.get(), p.y.get(), p.bwd_data.get(), p.x.get(),
                                                               requested, returned, perfs);
          },
          [h, &p](int algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w.get(), p.y.get(), p.bwd_data.get(), p.x.get(),
                                                                static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
          }};
}

// diff_wei (dw, w's desc) from src (x) and diff_dst (dy, y's desc).
Direction<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter_direction(CudaContext& ctx, ConvProblem& p) {
  cudnnHandle_t h = ctx.cudnn;
  return {"backward-filter", CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, &p.bwd_filter,
          [h](int* count) { return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, count); },
          [h, &p](int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perfs, FindScratch& s) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p.x.get(), s.x.get(), p.y.get(), s.y.get(),
                                                                 p.bwd_filter.get(), p.w.get(), s.w.get(), requested,
                                                                 returned, perfs, s.workspace.get(),
                                                                 s.workspace.bytes());
          },
          [h, &p](int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x.get(), p.y.get(), p.bwd_filter.get(),
                                                                 p.w.get(), requested, returned, perfs);
          },
          [h, &p](int algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                h, p.x.get(), p.y.get(), p.bwd_filter.get(), p.w.get(),
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
          }};
}

}  // namespace

size_t ConvAlgos::max_workspace() const {
  return std::max({fwd.workspace, bwd_data.workspace, bwd_filter.workspace});
}

ConvAlgos choose_conv_algos(CudaContext& ctx, ConvProblem& problem, const std::string& what) {
  // Only find searches (the others rank without running anything).
  std::optional<FindScratch> scratch;
  if (ctx.algorithm_choice == AlgorithmChoice::find) scratch = allocate_find_scratch(ctx, problem);
  ConvAlgos algos;
  algos.fwd = choose(forward_direction(ctx, problem), ctx, scratch, what);
  algos.bwd_data = choose(backward_data_direction(ctx, problem), ctx, scratch, what);
  algos.bwd_filter = choose(backward_filter_direction(ctx, problem), ctx, scratch, what);
  // The scratch is freed here (cudaFree waits for the searches); the op keeps no pointer to it.
  return algos;
}

cudnnMathType_t conv_math(Precision precision) {
  switch (precision) {
    case Precision::fp32: return CUDNN_FMA_MATH;
    case Precision::tf32: return CUDNN_DEFAULT_MATH;
    case Precision::fp16:
    case Precision::bf16: return CUDNN_TENSOR_OP_MATH;
  }
  return CUDNN_FMA_MATH;
}

bool conv_math_allowed(Precision precision, cudnnMathType_t math) {
  if (math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) return false;
  if (precision == Precision::fp32) return math == CUDNN_FMA_MATH;
  return true;  // tf32, fp16, bf16: tensor cores or plain FMA
}

std::string fwd_algo_name(int algo) {
  static const char* const names[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                      "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  return algo >= 0 && algo < 8 ? names[algo] : "FWD_ALGO_" + std::to_string(algo);
}

std::string bwd_data_algo_name(int algo) {
  static const char* const names[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  return algo >= 0 && algo < 6 ? names[algo] : "BWD_DATA_ALGO_" + std::to_string(algo);
}

std::string bwd_filter_algo_name(int algo) {
  static const char* const names[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                      "FFT_TILING"};
  return algo >= 0 && algo < 7 ? names[algo] : "BWD_FILTER_ALGO_" + std::to_string(algo);
}

const char* math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH: return "fma";
  }
  return "unknown";
}

}  // namespace ts::cuda
