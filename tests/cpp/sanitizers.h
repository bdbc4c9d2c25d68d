// Whether this test binary is built with a sanitizer that replaces the allocator and reserves
// terabytes of shadow memory (ASan, TSan: scripts/sanitize.sh). Under one, an address-space
// limit (RLIMIT_AS) makes every later mmap fail, and mallinfo2() reports nothing, so the tests
// that rely on either skip with that reason.
#pragma once

namespace ts::testing_support {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kUnderSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kUnderSanitizer = true;
#else
inline constexpr bool kUnderSanitizer = false;
#endif
#else
inline constexpr bool kUnderSanitizer = false;
#endif

inline constexpr const char* kUnderSanitizerReason =
    "built with ASan or TSan (scripts/sanitize.sh): its shadow memory makes an address-space limit "
    "fail every mmap, and its allocator reports nothing to mallinfo2()";

}  // namespace ts::testing_support
