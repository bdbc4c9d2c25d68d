// Hash of a canonical configuration text (see config_id.h).
#include "config/config_id.h"

#include <cstdio>

#include "core/strings.h"

namespace ts {

std::string config_id_of(const std::string& canonical_yaml) {
  const uint64_t h = fnv1a64(canonical_yaml);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

}  // namespace ts
