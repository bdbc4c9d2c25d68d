// core/memory_limits: the process's memory (/proc/self/status), the heap in use (mallinfo2),
// the limits found (RLIMIT_AS set here for real, TRAINSCALE_MEMORY_LIMIT) and the size texts.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/memory_limits.h"
#include "sanitizers.h"

using namespace ts;

namespace {

const MemoryLimit* find_limit(const std::vector<MemoryLimit>& limits, const std::string& prefix) {
  for (const MemoryLimit& l : limits)
    if (l.source.rfind(prefix, 0) == 0) return &l;
  return nullptr;
}

}  // namespace

TEST(MemoryLimits, SizesParseAndPrint) {
  EXPECT_EQ(parse_byte_size("1024"), 1024);
  EXPECT_EQ(parse_byte_size("8G"), int64_t{8} << 30);
  EXPECT_EQ(parse_byte_size("512MiB"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("1.5k"), 1536);
  EXPECT_EQ(parse_byte_size("lots"), std::nullopt);
  EXPECT_EQ(parse_byte_size("12X"), std::nullopt);
  EXPECT_EQ(parse_byte_size("-1G"), std::nullopt);
  EXPECT_EQ(bytes_text(900), "900 B");
  EXPECT_EQ(bytes_text(int64_t{3} << 29), "1.5 GiB");
}

TEST(MemoryLimits, TheProcessAndItsHeapAreMeasured) {
  if (ts::testing_support::kUnderSanitizer) GTEST_SKIP() << ts::testing_support::kUnderSanitizerReason;
  const ProcessMemory before = process_memory();
  EXPECT_GT(before.rss, 0);
  EXPECT_GE(before.peak_rss, before.rss);
  EXPECT_GE(before.address_space, before.rss);
  const int64_t heap = heap_bytes_in_use();
  std::vector<char> block(int64_t{64} << 20, 1);  // touched: resident
  EXPECT_GE(heap_bytes_in_use() - heap, int64_t{64} << 20);
  EXPECT_GE(process_memory().peak_rss - before.rss, int64_t{60} << 20);
  EXPECT_EQ(block.back(), 1);
}

TEST(MemoryLimits, AnAddressSpaceLimitIsFound) {
  if (ts::testing_support::kUnderSanitizer) GTEST_SKIP() << ts::testing_support::kUnderSanitizerReason;
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &saved), 0);
  struct rlimit lowered = saved;
  lowered.rlim_cur = rlim_t{64} << 30;
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < lowered.rlim_cur) lowered.rlim_cur = saved.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &lowered), 0);
  const auto limits = memory_limits();
  ::setrlimit(RLIMIT_AS, &saved);
  const MemoryLimit* as = find_limit(limits, "RLIMIT_AS");
  ASSERT_NE(as, nullptr);
  EXPECT_EQ(as->bytes, static_cast<int64_t>(lowered.rlim_cur));
  EXPECT_EQ(as->scope, MemoryLimit::Scope::process_address_space);
}

TEST(MemoryLimits, TheEnvironmentOverrideIsANodeLimit) {
  ::setenv("TRAINSCALE_MEMORY_LIMIT", "3G", 1);
  const auto limits = memory_limits();
  const MemoryLimit* set = find_limit(limits, "TRAINSCALE_MEMORY_LIMIT");
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->bytes, int64_t{3} << 30);
  EXPECT_EQ(set->scope, MemoryLimit::Scope::node);
  ::setenv("TRAINSCALE_MEMORY_LIMIT", "lots", 1);
  EXPECT_THROW(memory_limits(), ConfigError);
  ::unsetenv("TRAINSCALE_MEMORY_LIMIT");
  EXPECT_EQ(find_limit(memory_limits(), "TRAINSCALE_MEMORY_LIMIT"), nullptr);
}
