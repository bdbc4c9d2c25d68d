// Receive buffers in ordinary host memory (see scratch_memory.h).
#include "dist/scratch_memory.h"

namespace ts {

void* scratch_allocate(size_t bytes) { return ::operator new(bytes, std::align_val_t{64}); }

void scratch_release(void* p, size_t /*bytes*/) noexcept { ::operator delete(p, std::align_val_t{64}); }

}  // namespace ts
