// One cuBLASLt matmul planned once and run many times (the fully connected op, cuda_fc.cpp, plans
// three): the operation descriptor, the matrix layouts and the algorithm from cuBLASLt's heuristic
// are fixed at plan time. In cuBLAS's column-major terms it computes
//   D (m,n) = op(A) (m,k) x op(B) (k,n)   [+ epilogue],
// with C = D and beta = 0 (D is overwritten), alpha = 1, scale type f32.
//
// Pointer alignment: cuBLASLt's fastest kernels need 16-byte aligned matrices, but a weight slice
// of the parameter arena may sit at any 4-byte offset. Planning therefore asks the heuristic twice
// (all matrices 16-byte aligned; matrices only element aligned) and run() takes the first choice
// when every pointer it gets is 16-byte aligned, the second otherwise: a cheap test, no re-planning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <cublasLt.h>

#include "backend/cuda/cuda_context.h"

namespace ts::cuda {

struct LtMatmulSpec {
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  int64_t m = 1, n = 1, k = 1;  // D (m,n); A stored (m,k) or, transposed, (k,m); B (k,n) or (n,k)
  DType ab = DType::f32;        // data type of A and B
  DType d = DType::f32;         // data type of C and D, and of the epilogue's vector
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  // CUBLASLT_EPILOGUE_DEFAULT, _BIAS (D += vector per row: m values read) or _BGRADB (vector = the
  // sum of op(B) over k: n values written).
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  // The epilogue's vector, fixed at plan time (the heuristic reads its alignment): an op-owned
  // buffer of `d` values.
  void* epilogue_vector = nullptr;
};

class LtMatmul {
 public:
  LtMatmul();
  ~LtMatmul();
  LtMatmul(LtMatmul&&) noexcept;
  LtMatmul& operator=(LtMatmul&&) noexcept;

  // Plans `spec` with at most `max_workspace` bytes of workspace and reserves that workspace in
  // ctx. Returns false, planning nothing, when cuBLASLt has no algorithm for the combination of
  // types and epilogue (the caller then takes another way). Other library failures throw.
  bool plan(CudaContext& ctx, const LtMatmulSpec& spec, size_t max_workspace);
  // Why the latest plan() found no algorithm (cuBLASLt's status), for error messages.
  const std::string& why_not() const;
  // D = op(A) op(B) [epilogue], enqueued on ctx.stream. Throws RuntimeError when a pointer is not
  // 16-byte aligned and no element-aligned algorithm exists.
  void run(CudaContext& ctx, const void* a, const void* b, void* d) const;
  // Workspace of the chosen algorithms (the larger of the two), bytes.
  size_t workspace_bytes() const;
  // "algo 21 ws 0 B / unaligned algo 6 ws 0 B" (cuBLASLt's algorithm ids), for plan notes.
  std::string describe() const;

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
  std::string why_not_;
};

}  // namespace ts::cuda
