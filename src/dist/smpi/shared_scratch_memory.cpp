// Receive buffers of simulated ranks (see dist/scratch_memory.h, dist/smpi/simulation.h): every one
// is the process's one block of SMPI shared memory, so a thousand simulated ranks with 100 MB
// buckets cost the host one mapping, not 100 GB, and SMPI copies no message into them (it skips
// copies into shared memory); the modelled reductions never read them.
#include <smpi/smpi.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "dist/scratch_memory.h"
#include "dist/smpi/simulation.h"

namespace ts {
namespace {

constexpr size_t kFirstBlock = size_t{1} << 20;

std::mutex blocks_mutex;
std::vector<std::pair<size_t, void*>> blocks;  // (bytes, block), growing; never unmapped

}  // namespace

void* simulated_shared_block(size_t bytes) {
  std::lock_guard<std::mutex> lock(blocks_mutex);
  if (!blocks.empty() && blocks.back().first >= bytes) return blocks.back().second;
  const size_t size = std::max(bytes, blocks.empty() ? kFirstBlock : 2 * blocks.back().first);
  void* block = SMPI_SHARED_MALLOC(size);  // page-aligned
  if (block == nullptr) throw std::bad_alloc();
  blocks.emplace_back(size, block);
  return block;
}

void* scratch_allocate(size_t bytes) { return simulated_shared_block(bytes); }

void scratch_release(void*, size_t) noexcept {}  // the block stays mapped until the process ends

}  // namespace ts
