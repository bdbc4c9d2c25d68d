// Hash of a canonical configuration text (see config_id.h).
#include "config/config_id.h"

#include <cstdio>

namespace ts {

std::string config_id_of(const std::string& canonical_yaml) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : canonical_yaml) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

}  // namespace ts
