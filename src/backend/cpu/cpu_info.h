// Facts about the oneDNN library this build runs on, for `trainscale info` and the run file's
// `isa` attribute. Plain strings, so callers never include oneDNN headers.
#pragma once

#include <string>

namespace ts {

// The oneDNN version of the loaded library, e.g. "2.6.3".
std::string onednn_version();
// The instruction set oneDNN dispatches to on this machine, e.g. "avx512_core_bf16".
std::string onednn_isa();
// Whether that ISA has native bf16 arithmetic (avx512_core_bf16 or AMX).
bool onednn_bf16_native();

}  // namespace ts
