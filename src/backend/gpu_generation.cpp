// GPU generations and the device-name mapping (see gpu_generation.h).
#include "backend/gpu_generation.h"

#include <cctype>
#include <utility>

namespace ts {
namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// True when `word` occurs in `text` with no letter or digit on either side ("V100-SXM2" has
// V100, "GH200" has no H200).
bool has_word(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !is_word_char(text[at - 1]);
    const size_t end = at + word.size();
    const bool right = end == text.size() || !is_word_char(text[end]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> known_gpu_generations() { return {"k80", "p40", "p100", "v100", "a100", "h100", "h200"}; }

std::vector<std::string> gpu_generation_precisions(const std::string& generation) {
  if (generation == "a100" || generation == "h100" || generation == "h200") return {"fp32", "tf32", "fp16", "bf16"};
  if (generation == "p40" || generation == "p100" || generation == "v100") return {"fp32", "fp16"};
  return {"fp32"};
}

std::string gpu_generation_of(const std::string& device_name) {
  std::string upper;
  for (char c : device_name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // Model word in the driver's name -> generation.
  static const std::pair<const char*, const char*> models[] = {
      {"K80", "k80"},   {"P40", "p40"},   {"P100", "p100"}, {"V100", "v100"}, {"V100S", "v100"},
      {"A100", "a100"}, {"A800", "a100"}, {"H100", "h100"}, {"H800", "h100"}, {"H200", "h200"}};
  for (const auto& [word, generation] : models)
    if (has_word(upper, word)) return generation;
  return "other";
}

}  // namespace ts
