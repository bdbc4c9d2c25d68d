// The node's rates for calibration.h: a GEMM through the cpu backend's fully connected op
// (oneDNN's sgemm / bf16 brgemm) and a STREAM-like triad on plain threads.
#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/descriptors.h"
#include "core/error.h"
#include "core/timer.h"
#include "perfmodel/calibration.h"

namespace ts::perf {

double measure_gemm_gflops(Precision precision, int threads, int64_t size, double budget_s) {
  std::unique_ptr<Backend> backend = make_backend("cpu");
  if (!backend->supports(Op::fc, precision)) return 0.0;
  backend->set_threads(threads);
  backend->set_precision(precision);
  const FcDesc d{size, size, size, false};
  const DType act = precision == Precision::fp32 ? DType::f32 : DType::bf16;
  const TensorDesc src_desc = TensorDesc::plain(Shape{size, size}, act);
  std::unique_ptr<FcOp> op = backend->plan_fc(d, src_desc, TensorDesc::any(Shape{size, size}));
  DeviceBuffer src = backend->allocate(src_desc.bytes);
  DeviceBuffer wei = backend->allocate(static_cast<size_t>(size * size) * sizeof(float));
  DeviceBuffer dst = backend->allocate(op->dst_desc().bytes);
  const Tensor s(src.data(), src_desc), t(dst.data(), op->dst_desc());
  op->forward(s, wei.f32(), nullptr, t);  // warm-up: first-touch, kernel generation
  backend->synchronize();
  double best = 1e30;
  const double end = now_seconds() + budget_s;
  for (int rep = 0; rep < 3 || (now_seconds() < end && rep < 1000); ++rep) {
    const double start = now_seconds();
    op->forward(s, wei.f32(), nullptr, t);
    backend->synchronize();
    best = std::min(best, now_seconds() - start);
  }
  return static_cast<double>(d.flops()) / best / 1e9;
}

double measure_triad_gbs(int threads, int64_t bytes_per_array, double budget_s) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(1024, bytes_per_array / 8));
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  const int workers = std::max(1, threads);
  auto triad = [&](double scalar) {
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w)
      pool.emplace_back([&, w] {
        const size_t lo = n * static_cast<size_t>(w) / static_cast<size_t>(workers);
        const size_t hi = n * static_cast<size_t>(w + 1) / static_cast<size_t>(workers);
        double* __restrict pa = a.data();
        const double* __restrict pb = b.data();
        const double* __restrict pc = c.data();
        for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + scalar * pc[i];
      });
    for (std::thread& t : pool) t.join();
  };
  triad(3.0);  // first touch of a
  double best = 1e30;
  const double end = now_seconds() + budget_s;
  for (int rep = 0; rep < 3 || (now_seconds() < end && rep < 1000); ++rep) {
    const double start = now_seconds();
    triad(3.0 + rep);
    best = std::min(best, now_seconds() - start);
  }
  if (a[n / 2] == 0.0) throw RuntimeError("triad: the arrays were not written");  // keeps the loop
  return 24.0 * static_cast<double>(n) / best / 1e9;
}

}  // namespace ts::perf
