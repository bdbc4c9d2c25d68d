// dist-internal: the error-feedback memory of a compressed gradient exchange (Seide et al. 2014;
// Karimireddy et al. 2019, "EF-SGD"). What a rank's compressed bucket did not carry this step
// is added to its gradient the next step: e <- (g + e) - decode(compress(g + e)). One flat
// memory mirrors the gradient arena, so each bucket's memory is a range of it (zeros at start).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ts {

class ErrorFeedback {
 public:
  explicit ErrorFeedback(int64_t param_count) : memory_(static_cast<size_t>(param_count), 0.0f) {}
  // data[i] += memory[offset + i] for i < count: the gradient plus what earlier steps held back.
  void add_memory(int64_t offset, float* data, int64_t count) const;
  // memory[offset + i] = input[i] - sent[i]: what this step's compression left out.
  void keep_residual(int64_t offset, const float* input, const float* sent, int64_t count);
  const std::vector<float>& memory() const { return memory_; }
  // A resumed run's memory (checkpoints): RuntimeError when it is not the arena's length.
  void restore(const float* memory, int64_t count);

 private:
  std::vector<float> memory_;
};

}  // namespace ts
