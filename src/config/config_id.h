// Deterministic identifiers for resolved configurations (docs/sweeps.md "Ids and seeds").
#pragma once

#include <cstdint>
#include <string>

namespace ts {

// 64-bit FNV-1a of the canonical resolved YAML, as 12 lowercase hex digits.
std::string config_id_of(const std::string& canonical_yaml);

}  // namespace ts
