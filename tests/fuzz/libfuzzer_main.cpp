// libFuzzer's entry point for one fuzz target: built once per entry of fuzz_targets.h with
// TS_FUZZ_ENTRY naming it (tests/fuzz/CMakeLists.txt). ConfigError and RuntimeError are caught
// inside the entry; whatever escapes aborts, and libFuzzer keeps the input as a crash.
#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  TS_FUZZ_ENTRY(data, size);
  return 0;
}
