#include "core/error.h"

namespace ts {

std::string source_location_string(const char* file, int line) {
  std::string path(file);
  // Keep the path relative to src/ so messages stay short.
  auto pos = path.rfind("/src/");
  if (pos != std::string::npos) path = path.substr(pos + 5);
  return path + ":" + std::to_string(line);
}

}  // namespace ts
