// Choosing the cuDNN algorithms of one convolution, once per shape at plan time, for its three
// directions (forward, backward-data, backward-filter), and the math mode each runs with
// (ctx.algorithm_choice, cuda.algorithms):
// 1. find: cudnnFind*AlgorithmEx, the real search, timed on scratch buffers the size of the
//    op's tensors (allocated for the search and freed after it);
// 2. heuristic, and find where scratch memory cannot be had or a search fails: the _v7
//    heuristics, cuDNN's own ranking;
// 3. the zero-workspace algorithm (IMPLICIT_GEMM / ALGO_0) as the last resort.
// deterministic: the heuristics' best algorithm that cuDNN marks CUDNN_DETERMINISTIC (no
// atomics; backward ALGO_0 and ALGO_3 are not), no fallback: an error when none fits.
// Only algorithms whose workspace fits ctx.workspace_limit and whose math type the precision
// allows are taken: fp32 runs CUDNN_FMA_MATH only (true fp32, never TF32), tf32 asks for
// CUDNN_DEFAULT_MATH (TF32 tensor cores on sm_80 and later), fp16/bf16 for CUDNN_TENSOR_OP_MATH
// (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION is never taken: it may round fp32 data to fp16).
#pragma once

#include <cstddef>
#include <string>

#include <cudnn.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cudnn_descriptors.h"

namespace ts::cuda {

// One direction's choice.
struct ConvAlgo {
  int algo = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;        // bytes the algorithm needs
  const char* chosen_by = "";  // "find", "heuristic", "deterministic" or "fallback"
  float find_ms = -1;          // chosen by find: the search's time of one run (ms), else -1
};

struct ConvAlgos {
  ConvAlgo fwd, bwd_data, bwd_filter;
  size_t max_workspace() const;
};

// One convolution as cuDNN sees it: src x (mb,ic,ih,iw), wei w (oc,ic/g,kh,kw), dst y
// (mb,oc,oh,ow), all in `dtype`; one convolution descriptor per direction, since each runs with
// the math type of its own algorithm.
struct ConvProblem {
  DType dtype = DType::f32;
  int64_t x_numel = 0, w_numel = 0, y_numel = 0;
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor fwd, bwd_data, bwd_filter;
};

// Chooses the three algorithms and sets each direction's math type on its descriptor. Throws
// RuntimeError naming `what` when no algorithm of some direction fits the workspace limit.
ConvAlgos choose_conv_algos(CudaContext& ctx, ConvProblem& problem, const std::string& what);

// The math type a precision asks cuDNN for, and whether it accepts an algorithm's math type.
cudnnMathType_t conv_math(Precision precision);
bool conv_math_allowed(Precision precision, cudnnMathType_t math);

// "IMPLICIT_PRECOMP_GEMM", "ALGO_1", ... and "fma", "tensor_op", ... for plan notes.
std::string fwd_algo_name(int algo);
std::string bwd_data_algo_name(int algo);
std::string bwd_filter_algo_name(int algo);
const char* math_name(cudnnMathType_t math);

}  // namespace ts::cuda
