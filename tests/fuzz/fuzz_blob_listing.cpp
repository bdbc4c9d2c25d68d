// The blob-listing fuzz target (see fuzz_targets.h): what an S3 server or nginx sends as a
// directory listing, through the parsers BlobStorage::list uses.
#include <string>
#include <vector>

#include "core/error.h"
#include "data/blob_listing.h"
#include "fuzz_targets.h"

namespace ts::fuzz {

void blob_listing(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<StorageEntry> entries;
  try {
    if (data[0] % 2 == 0) {
      entries = parse_s3_list_page(text, "d/", "s3://fuzz/d").entries;
    } else {
      entries = parse_autoindex_json(text, "http://fuzz/d");
    }
  } catch (const RuntimeError&) {
    return;
  }
  for (const auto& e : entries)
    if (e.name.empty() || e.name.find('/') != std::string::npos || e.size < 0)
      throw InvariantError("a listing entry '" + e.name + "' that is empty, holds '/' or has a negative size");
}

}  // namespace ts::fuzz
