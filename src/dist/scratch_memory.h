// dist-internal: memory for receive buffers (a communicator's scratch, the parameter server's
// gather buffer), from one pair of functions so that a build can swap them: trainscale-sim links
// dist/smpi/shared_scratch_memory.cpp instead, where large buffers are SMPI shared memory that
// all simulated ranks of the process share (a thousand ranks cannot each hold their own copy of
// a 100 MB bucket; docs/model.md "Simulation").
#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace ts {

// At least `bytes` bytes, 64-byte aligned; std::bad_alloc when there is no memory.
void* scratch_allocate(size_t bytes);
// Gives back what scratch_allocate(bytes) returned.
void scratch_release(void* p, size_t bytes) noexcept;

// A std::vector allocator over scratch_allocate. Elements it constructs without a value are
// default-initialised: a receive buffer needs no zeros, and writing them would touch every page.
template <class T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  template <class U>
  ScratchAllocator(const ScratchAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(scratch_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { scratch_release(p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  bool operator==(const ScratchAllocator<U>&) const noexcept {
    return true;
  }
};

using ScratchFloats = std::vector<float, ScratchAllocator<float>>;

}  // namespace ts
