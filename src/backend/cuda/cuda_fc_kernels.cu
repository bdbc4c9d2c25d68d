// The fully connected op's bias kernels (see cuda_fc_kernels.h).
#include "backend/cuda/cuda_fc_kernels.h"

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_element.cuh"

namespace ts::cuda {
namespace {

// dst (rows, cols) += bias per column, grid-stride over all elements.
__global__ void add_bias_rows_kernel(void* dst, DType type, const float* bias, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t i = grid_first(); i < n; i += grid_stride())
    store_from_float(dst, type, i, load_as_float(dst, type, i) + bias[i % cols]);
}

// A block of (32, 8) threads sums 32 columns: thread (x, y) adds rows y, y + 8, ... of column
// blockIdx.x * 32 + x (consecutive x read consecutive addresses), then the 8 partial sums of a
// column are added in shared memory in a fixed order.
constexpr int kColumnsPerBlock = 32, kRowLanes = 8;

__global__ void bias_gradient_kernel(const void* diff_dst, DType type, int64_t rows, int64_t cols, float* diff_bias) {
  __shared__ float partial[kRowLanes][kColumnsPerBlock];
  const int64_t col = int64_t(blockIdx.x) * kColumnsPerBlock + threadIdx.x;
  float sum = 0.0f;
  if (col < cols)
    for (int64_t row = threadIdx.y; row < rows; row += kRowLanes) sum += load_as_float(diff_dst, type, row * cols + col);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols) return;
  float total = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) total += partial[lane][threadIdx.x];
  diff_bias[col] = total;
}

}  // namespace

void add_bias_rows(void* dst, DType type, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  add_bias_rows_kernel<<<grid_blocks(rows * cols), kThreadsPerBlock, 0, stream>>>(dst, type, bias, rows, cols);
  TS_CUDA_CHECK(cudaGetLastError());
}

void bias_gradient(const void* diff_dst, DType type, int64_t rows, int64_t cols, float* diff_bias,
                   cudaStream_t stream) {
  if (cols == 0) return;
  const unsigned blocks = static_cast<unsigned>((cols + kColumnsPerBlock - 1) / kColumnsPerBlock);
  bias_gradient_kernel<<<blocks, dim3(kColumnsPerBlock, kRowLanes), 0, stream>>>(diff_dst, type, rows, cols, diff_bias);
  TS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
