// Receive buffers of simulated ranks (see dist/scratch_memory.h, dist/smpi/simulation.h): small
// ones are private host memory, large ones (1 MiB and more) the process's one SMPI shared block,
// so a thousand simulated ranks with 100 MB buckets cost the host one mapping, not 100 GB.
// SMPI skips copies into shared memory and the modelled reductions never read it.
#include <smpi/smpi.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "dist/scratch_memory.h"
#include "dist/smpi/simulation.h"

namespace ts {
namespace {

constexpr size_t kSharedFrom = size_t{1} << 20;
constexpr std::align_val_t kAlign{64};

std::mutex blocks_mutex;
std::vector<std::pair<size_t, void*>> blocks;  // (bytes, block), growing; never unmapped

}  // namespace

void* simulated_shared_block(size_t bytes) {
  std::lock_guard<std::mutex> lock(blocks_mutex);
  if (!blocks.empty() && blocks.back().first >= bytes) return blocks.back().second;
  const size_t size = std::max(bytes, blocks.empty() ? kSharedFrom : 2 * blocks.back().first);
  void* block = SMPI_SHARED_MALLOC(size);  // page-aligned
  if (block == nullptr) throw std::bad_alloc();
  blocks.emplace_back(size, block);
  return block;
}

void* scratch_allocate(size_t bytes) {
  if (bytes < kSharedFrom) return ::operator new(bytes, kAlign);
  return simulated_shared_block(bytes);
}

void scratch_release(void* p, size_t bytes) noexcept {
  if (bytes < kSharedFrom) ::operator delete(p, kAlign);
}

}  // namespace ts
