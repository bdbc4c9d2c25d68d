// A cuBLASLt matmul planned once (see cuda_lt_matmul.h): descriptors and layouts are created at
// plan time, the algorithm comes from cublasLtMatmulAlgoGetHeuristic for two alignment cases, and
// run() only enqueues cublasLtMatmul.
#include "backend/cuda/cuda_lt_matmul.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// What cuBLASLt's tensor-core kernels need of a matrix pointer; cudaMalloc gives 256.
constexpr uintptr_t kFastAlignment = 16;

bool is_aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// One algorithm the heuristic chose, for one assumption about pointer alignment.
struct Choice {
  bool found = false;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  int32_t id = -1;  // cuBLASLt's algorithm id, for the plan notes

  std::string str() const {
    return found ? "algo " + std::to_string(id) + " ws " + std::to_string(workspace) + " B" : "none";
  }
};

template <class T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  TS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
}

template <class T>
void set_preference(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
  TS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value, sizeof(value)));
}

// A column-major (rows, cols) matrix of `type`, leading dimension rows.
cublasLtMatrixLayout_t make_layout(DType type, int64_t rows, int64_t cols) {
  cublasLtMatrixLayout_t layout = nullptr;
  TS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, cuda_dtype(type), static_cast<uint64_t>(rows),
                                             static_cast<uint64_t>(cols), rows));
  return layout;
}

}  // namespace

struct LtMatmul::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  Choice fast;  // every matrix 16-byte aligned
  Choice any;   // matrices aligned to their element size only

  ~Plan() {  // destroy calls only free host memory; nothing to report
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }

  // The heuristic's best algorithm for matrices aligned to `align_ab` (A, B) and `align_d` (C, D)
  // bytes; not found when cuBLASLt has none. The heuristic is a query: any status but success
  // means "not for this combination" (cuBLASLt answers NOT_SUPPORTED or INVALID_VALUE depending on
  // what it rejects), recorded in `why_not` for the caller's message.
  Choice choose(CudaContext& ctx, size_t max_workspace, uint32_t align_ab, uint32_t align_d, std::string& why_not) const {
    cublasLtMatmulPreference_t pref = nullptr;
    TS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    struct Guard {
      cublasLtMatmulPreference_t p;
      ~Guard() { cublasLtMatmulPreferenceDestroy(p); }
    } guard{pref};
    set_preference(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, static_cast<uint64_t>(max_workspace));
    set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_ab);
    set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_ab);
    set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
    set_preference(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t status =
        cublasLtMatmulAlgoGetHeuristic(ctx.cublas_lt, desc, a, b, d, d, pref, 1, &result, &returned);
    Choice choice;
    if (status != CUBLAS_STATUS_SUCCESS || returned < 1 || result.state != CUBLAS_STATUS_SUCCESS) {
      why_not = std::string("cublasLtMatmulAlgoGetHeuristic: ") +
                cublasGetStatusString(status != CUBLAS_STATUS_SUCCESS ? status : result.state) +
                (status == CUBLAS_STATUS_SUCCESS && returned < 1 ? " (no algorithm returned)" : "");
      return choice;
    }
    choice.found = true;
    choice.algo = result.algo;
    choice.workspace = result.workspaceSize;
    size_t written = 0;
    TS_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&choice.algo, CUBLASLT_ALGO_CONFIG_ID, &choice.id,
                                                         sizeof(choice.id), &written));
    return choice;
  }
};

LtMatmul::LtMatmul() = default;
LtMatmul::~LtMatmul() = default;
LtMatmul::LtMatmul(LtMatmul&&) noexcept = default;
LtMatmul& LtMatmul::operator=(LtMatmul&&) noexcept = default;

bool LtMatmul::plan(CudaContext& ctx, const LtMatmulSpec& s, size_t max_workspace) {
  plan_.reset();
  why_not_.clear();
  auto p = std::make_unique<Plan>();
  TS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, s.compute, CUDA_R_32F));
  set_attribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<int32_t>(s.trans_a));
  set_attribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<int32_t>(s.trans_b));
  set_attribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(s.epilogue));
  if (s.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    TS_CHECK(s.epilogue_vector, "LtMatmul::plan: epilogue " + std::to_string(s.epilogue) + " without a vector");
    // The vector's type is left at cuBLASLt's default, D's type (the bias gradient's: C's = D's).
    set_attribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, s.epilogue_vector);
  }
  // Stored shapes: op(A) is (m,k), so A is (m,k) or, transposed, (k,m); likewise B.
  const bool ta = s.trans_a != CUBLAS_OP_N, tb = s.trans_b != CUBLAS_OP_N;
  p->a = ta ? make_layout(s.ab, s.k, s.m) : make_layout(s.ab, s.m, s.k);
  p->b = tb ? make_layout(s.ab, s.n, s.k) : make_layout(s.ab, s.k, s.n);
  p->d = make_layout(s.d, s.m, s.n);

  p->fast = p->choose(ctx, max_workspace, kFastAlignment, kFastAlignment, why_not_);
  p->any = p->choose(ctx, max_workspace, static_cast<uint32_t>(dtype_bytes(s.ab)),
                     static_cast<uint32_t>(dtype_bytes(s.d)), why_not_);
  if (!p->fast.found && !p->any.found) return false;
  plan_ = std::move(p);
  ctx.reserve_workspace(workspace_bytes());
  return true;
}

const std::string& LtMatmul::why_not() const { return why_not_; }

size_t LtMatmul::workspace_bytes() const {
  if (!plan_) return 0;
  return std::max(plan_->fast.found ? plan_->fast.workspace : 0, plan_->any.found ? plan_->any.workspace : 0);
}

std::string LtMatmul::describe() const {
  if (!plan_) return "not planned";
  return plan_->fast.str() + " / unaligned " + plan_->any.str();
}

void LtMatmul::run(CudaContext& ctx, const void* a, const void* b, void* d) const {
  TS_CHECK(plan_, "LtMatmul::run before a successful plan");
  const bool aligned = is_aligned(a, kFastAlignment) && is_aligned(b, kFastAlignment) && is_aligned(d, kFastAlignment);
  const Choice& choice = aligned && plan_->fast.found ? plan_->fast : plan_->any;
  TS_CHECK(choice.found, "cuBLASLt has no algorithm for matrices that are not 16-byte aligned (A " +
                             std::to_string(reinterpret_cast<uintptr_t>(a) % kFastAlignment) + ", B " +
                             std::to_string(reinterpret_cast<uintptr_t>(b) % kFastAlignment) + ", D " +
                             std::to_string(reinterpret_cast<uintptr_t>(d) % kFastAlignment) +
                             " bytes past a 16-byte boundary): pass 16-byte aligned buffers");
  TS_CHECK(ctx.workspace_bytes() >= choice.workspace,
           "cuBLASLt needs " + std::to_string(choice.workspace) + " bytes of workspace but the context holds " +
               std::to_string(ctx.workspace_bytes()) + " (was the workspace released after planning?)");
  const float alpha = 1.0f, beta = 0.0f;
  TS_CUBLAS_CHECK(cublasLtMatmul(ctx.cublas_lt, plan_->desc, &alpha, a, plan_->a, b, plan_->b, &beta, d, plan_->d,
                                 d, plan_->d, &choice.algo, ctx.workspace(), ctx.workspace_bytes(), ctx.stream));
}

}  // namespace ts::cuda
