// The floating-point environment of the threads that compute (docs/config.md `flush_denormals`).
// Denormal floats (magnitudes below 1.2e-38) cost x86 cores a microcode assist of about a
// hundred cycles per operation. Training makes them: the SGD momentum of a weight whose
// gradient is zero (a dead ReLU unit) decays by the momentum factor every step and falls below
// 1.2e-38 after about 800 steps at 0.9, from where every update of it is that slow. Flushing
// them to zero (MXCSR's FTZ and DAZ bits, as TensorFlow and XLA do for their compute threads)
// keeps the step time flat; it changes results only where a value would have been denormal.
// The setting is per thread; threads started afterwards inherit it from their creator.
#pragma once

namespace ts {

// Sets (or clears) flush-to-zero and denormals-are-zero for the calling thread and for the
// threads of the OpenMP pool (which oneDNN and the CPU kernels run on). No-op where the CPU
// has no such control (then denormals_flushed() stays false).
void set_denormals_flushed(bool flush);
// Whether the calling thread flushes denormals now.
bool denormals_flushed();

}  // namespace ts
