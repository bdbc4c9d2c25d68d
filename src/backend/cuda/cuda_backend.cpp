// The CUDA backend (see cuda_backend.h): device selection, the stream and library handles,
// device facts, memory and copies, and the immediate ops on the f32 parameter arena. Planned
// ops live in their own files (cuda_ops.h); this file only forwards to them.
#include "backend/cuda/cuda_backend.h"

#include "backend/gpu_generation.h"

#include <nccl.h>

#include <cstring>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "core/error.h"

namespace ts {
namespace {

// "13.0" from the driver/runtime's 1000 * major + 10 * minor.
std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

// "9.19.0" from cuDNN 9's 10000 * major + 100 * minor + patch.
std::string cudnn_version_text(size_t v) {
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." + std::to_string(v % 100);
}

// NCCL's code is 1000 * major + 100 * minor + patch before 2.9, 10000 * major + ... since.
std::string nccl_version_text(int v) {
  const int major_unit = v >= 10000 ? 10000 : 1000;
  return std::to_string(v / major_unit) + "." + std::to_string((v % major_unit) / 100) + "." + std::to_string(v % 100);
}

std::string cublas_version_text() {
  int major = 0, minor = 0, patch = 0;
  TS_CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  TS_CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  TS_CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// Compute capability as 10 * major + minor (90 for sm_90).
int compute_capability(int device) {
  int major = 0, minor = 0;
  TS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  TS_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return 10 * major + minor;
}

// Gives back whatever the constructor created so far (also its clean-up after a failure).
// Never throws: it runs in the destructor.
void destroy_context(cuda::CudaContext& ctx, int*& nonfinite) {
  if (ctx.stream) cudaStreamSynchronize(ctx.stream);
  try {
    ctx.release_workspace();
  } catch (const std::exception&) {  // a failed device: nothing more to do
  }
  if (nonfinite) cudaFree(nonfinite);
  if (ctx.cublas_lt) cublasLtDestroy(ctx.cublas_lt);
  if (ctx.cublas) cublasDestroy(ctx.cublas);
  if (ctx.cudnn) cudnnDestroy(ctx.cudnn);
  if (ctx.stream) cudaStreamDestroy(ctx.stream);
  nonfinite = nullptr;
  ctx.cublas_lt = nullptr;
  ctx.cublas = nullptr;
  ctx.cudnn = nullptr;
  ctx.stream = nullptr;
}

}  // namespace


int CudaBackend::device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the error, say 0
    return 0;
  }
  return count;
}

CudaBackend::CudaBackend(int local_rank) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();
    int driver = 0;
    cudaDriverGetVersion(&driver);  // 0 when libcuda.so.1 cannot be loaded
    const std::string reason = driver == 0      ? "no NVIDIA driver is loaded: libcuda.so.1 was not found"
                               : e != cudaSuccess ? std::string(cudaGetErrorString(e)) + ", driver " +
                                                        cuda_version_text(driver)
                                                  : "the driver sees 0 devices";
    throw NoDeviceError("backend 'cuda': no CUDA device was found (" + reason +
                            "); run on a machine with an NVIDIA GPU or use backend: cpu",
                        reason);
  }
  ctx_.device = (local_rank < 0 ? 0 : local_rank) % count;
  try {
    TS_CUDA_CHECK(cudaSetDevice(ctx_.device));
    TS_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    TS_CUDNN_CHECK(cudnnCreate(&ctx_.cudnn));
    TS_CUDNN_CHECK(cudnnSetStream(ctx_.cudnn, ctx_.stream));
    TS_CUBLAS_CHECK(cublasCreate(&ctx_.cublas));
    TS_CUBLAS_CHECK(cublasSetStream(ctx_.cublas, ctx_.stream));
    TS_CUBLAS_CHECK(cublasLtCreate(&ctx_.cublas_lt));
    TS_CUDA_CHECK(cudaMalloc(&nonfinite_, sizeof(int)));
    TS_CUDA_CHECK(cudaStreamCreateWithFlags(&staging_stream_, cudaStreamNonBlocking));
    TS_CUDA_CHECK(cudaEventCreateWithFlags(&staged_, cudaEventDisableTiming));
    TS_CUDA_CHECK(cudaEventCreateWithFlags(&staged_released_, cudaEventDisableTiming));
    marks_ = std::make_unique<cuda::StreamMarks>();
    set_precision(Precision::fp32);
  } catch (...) {
    destroy_staging();
    destroy_context(ctx_, nonfinite_);
    throw;
  }
}

CudaBackend::~CudaBackend() {
  for (cudaGraphExec_t g : captures_)
    if (g) cudaGraphExecDestroy(g);
  destroy_staging();
  destroy_context(ctx_, nonfinite_);
}

void CudaBackend::destroy_staging() {  // never throws: the destructor calls it
  if (staging_stream_) cudaStreamSynchronize(staging_stream_);
  if (staged_) cudaEventDestroy(staged_);
  if (staged_released_) cudaEventDestroy(staged_released_);
  if (staging_stream_) cudaStreamDestroy(staging_stream_);
  marks_.reset();
  staged_ = nullptr;
  staged_released_ = nullptr;
  staging_stream_ = nullptr;
}

DeviceDescription CudaBackend::describe() const {
  cudaDeviceProp prop{};
  TS_CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx_.device));
  int driver = 0, runtime = 0, nccl = 0;
  TS_CUDA_CHECK(cudaDriverGetVersion(&driver));
  TS_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  const std::string nccl_text = ncclGetVersion(&nccl) == ncclSuccess ? nccl_version_text(nccl) : "unknown";
  DeviceDescription d;
  d.backend = "cuda";
  d.device = "cuda:" + std::to_string(ctx_.device);
  d.name = prop.name;
  d.isa = "sm_" + std::to_string(10 * prop.major + prop.minor);
  d.generation = gpu_generation_of(d.name);  // the one name -> generation map (backend/gpu_generation.h)
  d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  d.compute_units = prop.multiProcessorCount;
  d.bf16_native = prop.major >= 8;
  d.host_accessible = false;
  d.collectives = {"nccl"};
  d.libraries = {{"cuda_driver", cuda_version_text(driver)},
                 {"cuda_runtime", cuda_version_text(runtime)},
                 {"cudnn", cudnn_version_text(cudnnGetVersion())},
                 {"cublas", cublas_version_text()},
                 {"nccl", nccl_text}};
  return d;
}

bool CudaBackend::supports(Op op, Precision precision) const {
  const int cc = compute_capability(ctx_.device);
  switch (precision) {
    case Precision::fp32: return true;
    case Precision::fp16: return cc >= 70;  // tensor cores from Volta on
    case Precision::tf32:
    case Precision::bf16: return cc >= 80;  // Ampere on
  }
  return false;
}

void CudaBackend::set_precision(Precision precision) {
  if (!supports(Op::conv, precision))
    throw ConfigError("backend 'cuda': precision '" + std::string(precision_name(precision)) + "' is not supported on " +
                      "cuda:" + std::to_string(ctx_.device) + " (compute capability sm_" +
                      std::to_string(compute_capability(ctx_.device)) +
                      "; fp16 needs sm_70 or newer, tf32 and bf16 sm_80 or newer); use precision: fp32");
  // fp32 stays true fp32: CUBLAS_DEFAULT_MATH never lowers the precision of f32 routines (TF32 and
  // the BF16x9 emulation are opt-in math modes); tf32 opts in to TF32 tensor cores. The fp16 and
  // bf16 ops choose their compute types per call.
  TS_CUBLAS_CHECK(cublasSetMathMode(ctx_.cublas,
                                    precision == Precision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  ctx_.precision = precision;
}

// ---- memory and the queue ------------------------------------------------------------------

DeviceMemoryUse CudaBackend::device_memory() const {
  TS_CUDA_CHECK(cudaSetDevice(ctx_.device));  // the current device is per host thread
  size_t free_bytes = 0, total_bytes = 0;
  TS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  DeviceMemoryUse m;
  m.free = static_cast<int64_t>(free_bytes);
  m.total = static_cast<int64_t>(total_bytes);
  m.used = m.total - m.free;
  m.devices = device_count();
  return m;
}

DeviceBuffer CudaBackend::allocate(size_t bytes) {
  if (bytes == 0) return DeviceBuffer(this, nullptr, 0, false);
  void* data = nullptr;
  const cudaError_t e = cudaMalloc(&data, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw RuntimeError("backend 'cuda': out of device memory on cuda:" + std::to_string(ctx_.device) + ": " +
                       std::to_string(bytes) + " bytes requested, " + std::to_string(free_bytes) + " of " +
                       std::to_string(total_bytes) + " bytes free; use a smaller batch or model");
  }
  TS_CUDA_CHECK(e);
  DeviceBuffer buffer(this, data, bytes, false);  // frees the memory if zeroing throws
  TS_CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, ctx_.stream));
  TS_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  return buffer;
}

DeviceBuffer CudaBackend::allocate_host(size_t bytes) {
  if (bytes == 0) return DeviceBuffer(this, nullptr, 0, true);
  void* data = nullptr;
  TS_CUDA_CHECK(cudaMallocHost(&data, bytes));
  std::memset(data, 0, bytes);
  return DeviceBuffer(this, data, bytes, true);
}

void CudaBackend::release(void* data, size_t bytes, bool host) {
  // Called from DeviceBuffer's destructor: errors are not thrown (the device may already have failed).
  if (host)
    cudaFreeHost(data);
  else
    cudaFree(data);
}

// From pageable memory cudaMemcpyAsync returns once the source is staged, so the caller may reuse
// it at once. From pinned memory (allocate_host) the copy is truly asynchronous: the caller keeps
// the source unchanged until the stream has passed the copy (synchronize()).
void CudaBackend::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  TS_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, ctx_.stream));
}

void CudaBackend::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  TS_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, ctx_.stream));
  TS_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
}

void CudaBackend::copy(void* device_dst, const void* device_src, size_t bytes) {
  if (bytes == 0 || device_dst == device_src) return;
  TS_CUDA_CHECK(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, ctx_.stream));
}

void CudaBackend::fill_zero(void* device_dst, size_t bytes) {
  if (bytes == 0) return;
  TS_CUDA_CHECK(cudaMemsetAsync(device_dst, 0, bytes, ctx_.stream));
}

void CudaBackend::synchronize() { TS_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream)); }

// The copy waits (on the device) for the compute work that release_staged named: the last
// reads of what it overwrites. An event never recorded is passed at once.
void CudaBackend::stage_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  TS_CUDA_CHECK(cudaStreamWaitEvent(staging_stream_, staged_released_, 0));
  TS_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, staging_stream_));
  TS_CUDA_CHECK(cudaEventRecord(staged_, staging_stream_));
}

void CudaBackend::wait_for_staged() { TS_CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream, staged_, 0)); }

void CudaBackend::staged_copies_done() { TS_CUDA_CHECK(cudaEventSynchronize(staged_)); }

void CudaBackend::release_staged() { TS_CUDA_CHECK(cudaEventRecord(staged_released_, ctx_.stream)); }

// host_dst must be pinned (allocate_host): from pageable memory the copy would wait for the stream.
void CudaBackend::queue_copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  TS_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, ctx_.stream));
}

int64_t CudaBackend::mark() { return marks_->record(ctx_.stream); }

// Any thread may wait (an exchange's communication thread reads the loss): it names the device.
void CudaBackend::wait_for_mark(int64_t mark) { marks_->wait(mark, ctx_.device); }

void CudaBackend::begin_capture() {
  // Relaxed: the libraries may query or allocate on this thread while work is recorded.
  TS_CUDA_CHECK(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeRelaxed));
}

int CudaBackend::end_capture() {
  cudaGraph_t graph = nullptr;
  TS_CUDA_CHECK(cudaStreamEndCapture(ctx_.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  TS_CUDA_CHECK(e);
  captures_.push_back(exec);
  return static_cast<int>(captures_.size()) - 1;
}

void CudaBackend::replay(int capture) {
  TS_CHECK(capture >= 0 && static_cast<size_t>(capture) < captures_.size() && captures_[capture],
           "CudaBackend::replay: no recording " + std::to_string(capture));
  TS_CUDA_CHECK(cudaGraphLaunch(captures_[static_cast<size_t>(capture)], ctx_.stream));
}

void CudaBackend::release_capture(int capture) {
  if (capture < 0 || static_cast<size_t>(capture) >= captures_.size() || !captures_[capture]) return;
  TS_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // a launch of it may still run
  TS_CUDA_CHECK(cudaGraphExecDestroy(captures_[static_cast<size_t>(capture)]));
  captures_[static_cast<size_t>(capture)] = nullptr;
}

// Plain and NHWC (cuda_layout.h) tensors of f32/f16/bf16, in any combination; on the device.
void CudaBackend::reorder(const Tensor& src, const Tensor& dst) {
  const auto float_type = [](DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; };
  if (!cuda::is_cuda_layout(src.desc) || !cuda::is_cuda_layout(dst.desc) || src.desc.dims != dst.desc.dims ||
      !float_type(src.desc.dtype) || !float_type(dst.desc.dtype))
    throw ConfigError("backend 'cuda': reorder converts f32/f16/bf16 tensors of the same dims between the plain and "
                      "the 4-D NHWC (L" + std::to_string(cuda::kNhwcLayout) + ") layouts only; got " +
                      src.desc.str() + " -> " + dst.desc.str());
  cuda::convert_tensor(src.data, src.desc, dst.data, dst.desc, ctx_.stream);
}

// ---- planning: one file per op family (cuda_ops.h) ----------------------------------------

std::unique_ptr<ConvOp> CudaBackend::plan_conv(const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cuda::plan_conv(ctx_, d, src, dst);
}
std::unique_ptr<PoolOp> CudaBackend::plan_pool(const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cuda::plan_pool(ctx_, d, src, dst);
}
std::unique_ptr<FcOp> CudaBackend::plan_fc(const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return cuda::plan_fc(ctx_, d, src, dst);
}
std::unique_ptr<BatchNormOp> CudaBackend::plan_batchnorm(const BnDesc& d, const TensorDesc& src,
                                                         const TensorDesc& dst) {
  return cuda::plan_batchnorm(ctx_, d, src, dst);
}
std::unique_ptr<EltwiseOp> CudaBackend::plan_eltwise(const EltwiseDesc& d, const TensorDesc& src,
                                                     const TensorDesc& dst) {
  return cuda::plan_eltwise(ctx_, d, src, dst);
}
std::unique_ptr<AddOp> CudaBackend::plan_add(const TensorDesc& a, const TensorDesc& b, bool relu) {
  return cuda::plan_add(ctx_, a, b, relu);
}
std::unique_ptr<ConcatOp> CudaBackend::plan_concat(const std::vector<TensorDesc>& srcs, const TensorDesc& dst) {
  return cuda::plan_concat(ctx_, srcs, dst);
}
std::unique_ptr<DropoutOp> CudaBackend::plan_dropout(const TensorDesc& src) { return cuda::plan_dropout(ctx_, src); }
std::unique_ptr<SoftmaxXentOp> CudaBackend::plan_softmax_xent(const TensorDesc& logits) {
  return cuda::plan_softmax_xent(ctx_, logits);
}
std::unique_ptr<MseOp> CudaBackend::plan_mse(const TensorDesc& pred) { return cuda::plan_mse(ctx_, pred); }

// ---- immediate ops on the f32 arena --------------------------------------------------------

void CudaBackend::sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov, float* weights,
                           const float* grads, float* velocity) {
  cuda::sgd_step(n, lr, momentum, weight_decay, nesterov, weights, grads, velocity, ctx_.stream);
}

void CudaBackend::axpby(int64_t n, float a, const float* x, float b, float* y) {
  cuda::axpby(n, a, x, b, y, ctx_.stream);
}

// Scales every value (also after a non-finite one, as the CPU backends do) and reports whether
// all were finite before scaling; waits for the flag (one host synchronisation).
bool CudaBackend::scale_check_finite(int64_t n, float a, float* x) {
  TS_CUDA_CHECK(cudaMemsetAsync(nonfinite_, 0, sizeof(int), ctx_.stream));
  cuda::scale_check_finite(n, a, x, nonfinite_, ctx_.stream);
  int nonfinite = 0;
  TS_CUDA_CHECK(cudaMemcpyAsync(&nonfinite, nonfinite_, sizeof(int), cudaMemcpyDeviceToHost, ctx_.stream));
  TS_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  return nonfinite == 0;
}

void CudaBackend::unscale_check(int64_t n, LossScaleState* state, float* x) {
  cuda::unscale_check(n, state, x, ctx_.stream);
}

void CudaBackend::sgd_step_if_finite(const LossScaleState* state, int64_t n, float lr, float momentum,
                                     float weight_decay, bool nesterov, float* weights, const float* grads,
                                     float* velocity) {
  cuda::sgd_step(n, lr, momentum, weight_decay, nesterov, weights, grads, velocity, ctx_.stream, &state->nonfinite);
}

void CudaBackend::update_loss_scale(LossScaleState* state, const LossScaleRule& rule) {
  cuda::update_loss_scale(state, rule, ctx_.stream);
}

}  // namespace ts
