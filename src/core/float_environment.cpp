// Flush-to-zero and denormals-are-zero (see float_environment.h).
#include "core/float_environment.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace ts {
namespace {

#if defined(__x86_64__) || defined(__i386__)
constexpr unsigned kFlushBits = 0x8040;  // MXCSR FTZ (bit 15) | DAZ (bit 6)

void set_this_thread(bool flush) {
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(flush ? (csr | kFlushBits) : (csr & ~kFlushBits));
}
#else
void set_this_thread(bool) {}
#endif

}  // namespace

void set_denormals_flushed(bool flush) {
  set_this_thread(flush);
  // Every thread of the pool runs the region once (a static schedule of one iteration each).
#pragma omp parallel
  set_this_thread(flush);
}

bool denormals_flushed() {
#if defined(__x86_64__) || defined(__i386__)
  return (_mm_getcsr() & kFlushBits) == kFlushBits;
#else
  return false;
#endif
}

}  // namespace ts
