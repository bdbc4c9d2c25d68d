// Directory listings of blob storage, parsed from what the servers send: S3 ListObjectsV2 pages
// (XML, delimiter '/': objects are files, common prefixes are directories) and nginx's
// `autoindex_format json` (the one listing plain HTTP offers here). Pure parsers over text, so
// hostile or truncated listings are tested without a server.
#pragma once

#include <string>
#include <vector>

#include "data/storage.h"

namespace ts {

struct S3ListPage {
  std::vector<StorageEntry> entries;  // names relative to the listed prefix, unsorted
  bool truncated = false;             // more pages follow
  std::string next_token;             // the continuation-token of the next page
};

// One ListObjectsV2 page listed with `prefix` (ending in '/', or empty for the bucket's top).
// Throws RuntimeError naming `where` (the s3:// URL) on a document that is not such a page.
S3ListPage parse_s3_list_page(const std::string& xml, const std::string& prefix, const std::string& where);

// nginx autoindex JSON: `[{"name": ..., "type": "file"|"directory"|..., "size": N, ...}, ...]`.
// Other types (links nginx could not stat) are skipped. Throws RuntimeError naming `where` on
// anything else.
std::vector<StorageEntry> parse_autoindex_json(const std::string& json, const std::string& where);

}  // namespace ts
