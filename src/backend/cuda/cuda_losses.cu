// The CUDA backend's losses on own kernels (cuda_ops.h): softmax cross-entropy and mean-squared
// error. Inputs may be f32, f16 or bf16 (math in f32); the loss stays in device memory (forward
// never synchronises the host) and is reduced in a fixed order, so it is bitwise reproducible:
// one block per softmax row, then one block for the mean over rows; MSE sums into a fixed number
// of per-block partials, then one block adds them.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_element.cuh"
#include "backend/cuda/cuda_device_memory.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

constexpr int kMeanThreads = 1024;  // the one block that reduces per-row or per-block sums
constexpr unsigned kMaxPartials = 1024;

void require_plain_activation(const TensorDesc& t, const std::string& where) {
  if (!t.is_plain() || !(t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16))
    throw ConfigError(where + ": tensor " + t.str() + " is not plain f32, f16 or bf16");
}

// out[0] = sum(values[0..n)) / divisor, by one block of kMeanThreads.
__global__ void mean_kernel(const float* values, int64_t n, float divisor, float* out) {
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += values[i];
  sum = block_reduce(sum, SumOp{}, 0.0f);
  if (threadIdx.x == 0) out[0] = sum / divisor;
}

// ---- softmax cross-entropy ------------------------------------------------------------------
// Block n handles row n of logits (mb, classes): probs = exp(z - max) / sum, and
// row_loss[n] = max + log(sum) - z[label] (the log-sum-exp form stays finite where a probability
// underflows to 0).
__global__ void softmax_xent_rows_kernel(const void* logits, DType type, const int32_t* labels, int64_t classes,
                                         float* probs, float* row_loss) {
  const int64_t base = int64_t(blockIdx.x) * classes;
  float zmax = -INFINITY;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) zmax = fmaxf(zmax, load_as_float(logits, type, base + k));
  zmax = block_reduce(zmax, MaxOp{}, -INFINITY);
  float sum = 0.0f;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) {
    const float e = expf(load_as_float(logits, type, base + k) - zmax);
    probs[base + k] = e;
    sum += e;
  }
  sum = block_reduce(sum, SumOp{}, 0.0f);
  const float inv_sum = 1.0f / sum;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) probs[base + k] *= inv_sum;
  if (threadIdx.x == 0) row_loss[blockIdx.x] = zmax + logf(sum) - load_as_float(logits, type, base + labels[blockIdx.x]);
}

// numerator x the loss scale (factor x *device_factor when given) / divisor, rounded as the
// host backends round it: the same gradients whether the host or the device knows the scale.
__device__ __forceinline__ float gradient_scale(float numerator, LossGradScale s, float divisor) {
  const float factor = s.device_factor ? __fmul_rn(s.factor, *s.device_factor) : s.factor;
  return __fdiv_rn(__fmul_rn(numerator, factor), divisor);
}

// diff = (probs - onehot(labels)) * scale over (mb, classes), scale = loss_scale / mb.
__global__ void softmax_xent_backward_kernel(const float* probs, const int32_t* labels, int64_t mb, int64_t classes,
                                             LossGradScale loss_scale, void* diff, DType diff_type) {
  const float scale = gradient_scale(1.0f, loss_scale, static_cast<float>(mb));
  const int64_t n = mb * classes;
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const int64_t row = i / classes, k = i % classes;
    const float onehot = k == labels[row] ? 1.0f : 0.0f;
    store_from_float(diff, diff_type, i, (probs[i] - onehot) * scale);
  }
}

class CudaSoftmaxXentOp final : public SoftmaxXentOp {
 public:
  CudaSoftmaxXentOp(CudaContext& ctx, const TensorDesc& logits) : ctx_(ctx), logits_(logits) {
    const std::string where = "softmax cross-entropy on " + logits.str();
    require_plain_activation(logits, where);
    if (logits.dims.rank() < 1 || logits.dims[0] < 1 || logits.numel() < logits.dims[0])
      throw ConfigError(where + ": logits must be (mb, classes) with mb >= 1 and classes >= 1");
    mb_ = logits.dims[0];
    classes_ = logits.numel() / mb_;
    // Threads per row: a warp pair for a handful of classes, more for wide rows (ImageNet's 1000
    // classes take 4 passes of 256; a 100k-class row 98 passes of 1024).
    threads_ = classes_ <= 64 ? 64 : classes_ <= 4096 ? 256 : 1024;
    row_loss_ = DeviceMemory(size_t(mb_) * sizeof(float), "softmax cross-entropy row losses");
  }

  // logits (mb, classes), labels (mb) int32 -> probs (mb, classes) f32, loss[0] = mean -log p[label]
  void forward(const Tensor& logits, const int32_t* labels, float* probs, float* loss) override {
    softmax_xent_rows_kernel<<<static_cast<unsigned>(mb_), threads_, 0, ctx_.stream>>>(
        logits.data, logits_.dtype, labels, classes_, probs, row_loss_.as<float>());
    TS_CUDA_CHECK(cudaGetLastError());
    mean_kernel<<<1, kMeanThreads, 0, ctx_.stream>>>(row_loss_.as<float>(), mb_, static_cast<float>(mb_), loss);
    TS_CUDA_CHECK(cudaGetLastError());
  }

  // diff_logits (mb, classes) in its desc's type = loss_scale * (probs - onehot(labels)) / mb
  void backward(const float* probs, const int32_t* labels, const LossGradScale& loss_scale,
                const Tensor& diff_logits) override {
    require_plain_activation(diff_logits.desc, "softmax cross-entropy backward");
    TS_CHECK(diff_logits.desc.numel() == mb_ * classes_,
             "softmax cross-entropy backward: diff_logits " + diff_logits.desc.str() + " is not " + logits_.str());
    const int64_t n = mb_ * classes_;
    softmax_xent_backward_kernel<<<grid_blocks(n), kThreadsPerBlock, 0, ctx_.stream>>>(
        probs, labels, mb_, classes_, loss_scale, diff_logits.data, diff_logits.desc.dtype);
    TS_CUDA_CHECK(cudaGetLastError());
  }

 private:
  CudaContext& ctx_;
  TensorDesc logits_;
  int64_t mb_ = 1, classes_ = 1;
  int threads_ = 256;
  DeviceMemory row_loss_;  // (mb) f32: each row's loss, averaged by mean_kernel
};

// ---- mean-squared error ---------------------------------------------------------------------
// partials[block] = sum over the block's grid-stride share of (pred - target)^2.
__global__ void squared_error_partials_kernel(const void* pred, DType type, const float* target, int64_t n,
                                              float* partials) {
  float sum = 0.0f;
  for (int64_t i = grid_first(); i < n; i += grid_stride()) {
    const float e = load_as_float(pred, type, i) - target[i];
    sum += e * e;
  }
  sum = block_reduce(sum, SumOp{}, 0.0f);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

// diff = (pred - target) * scale over n values, scale = 2 loss_scale / n.
__global__ void mse_backward_kernel(const void* pred, DType pred_type, const float* target, int64_t n,
                                    LossGradScale loss_scale, void* diff, DType diff_type) {
  const float scale = gradient_scale(2.0f, loss_scale, static_cast<float>(n));
  for (int64_t i = grid_first(); i < n; i += grid_stride())
    store_from_float(diff, diff_type, i, (load_as_float(pred, pred_type, i) - target[i]) * scale);
}

class CudaMseOp final : public MseOp {
 public:
  CudaMseOp(CudaContext& ctx, const TensorDesc& pred) : ctx_(ctx), pred_(pred), n_(pred.numel()) {
    require_plain_activation(pred, "mean-squared error on " + pred.str());
    if (n_ < 1) throw ConfigError("mean-squared error on " + pred.str() + ": needs at least one value");
    partial_blocks_ = std::min(grid_blocks(n_), kMaxPartials);  // fixed per plan: a fixed summation order
    partials_ = DeviceMemory(size_t(partial_blocks_) * sizeof(float), "mse partial sums");
  }

  // pred (n), target (n) f32 -> loss[0] = mean (pred - target)^2
  void forward(const Tensor& pred, const float* target, float* loss) override {
    squared_error_partials_kernel<<<partial_blocks_, kThreadsPerBlock, 0, ctx_.stream>>>(
        pred.data, pred_.dtype, target, n_, partials_.as<float>());
    TS_CUDA_CHECK(cudaGetLastError());
    mean_kernel<<<1, kMeanThreads, 0, ctx_.stream>>>(partials_.as<float>(), partial_blocks_,
                                                     static_cast<float>(n_), loss);
    TS_CUDA_CHECK(cudaGetLastError());
  }

  // diff_pred (n) in its desc's type = loss_scale * 2 (pred - target) / n
  void backward(const Tensor& pred, const float* target, const LossGradScale& loss_scale,
                const Tensor& diff_pred) override {
    require_plain_activation(diff_pred.desc, "mean-squared error backward");
    TS_CHECK(diff_pred.desc.numel() == n_,
             "mean-squared error backward: diff_pred " + diff_pred.desc.str() + " is not " + pred_.str());
    mse_backward_kernel<<<grid_blocks(n_), kThreadsPerBlock, 0, ctx_.stream>>>(
        pred.data, pred_.dtype, target, n_, loss_scale, diff_pred.data, diff_pred.desc.dtype);
    TS_CUDA_CHECK(cudaGetLastError());
  }

 private:
  CudaContext& ctx_;
  TensorDesc pred_;
  int64_t n_;
  unsigned partial_blocks_ = 1;
  DeviceMemory partials_;  // (partial_blocks_) f32
};

}  // namespace

std::unique_ptr<SoftmaxXentOp> plan_softmax_xent(CudaContext& ctx, const TensorDesc& logits) {
  return std::make_unique<CudaSoftmaxXentOp>(ctx, logits);
}

std::unique_ptr<MseOp> plan_mse(CudaContext& ctx, const TensorDesc& pred) {
  return std::make_unique<CudaMseOp>(ctx, pred);
}

}  // namespace ts::cuda
