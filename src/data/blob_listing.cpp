// Listing parsers of blob storage (see blob_listing.h).
#include "data/blob_listing.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include "core/error.h"

namespace ts {
namespace {

// The XML entities S3 escapes in keys and tokens.
std::string xml_unescape(const std::string& text) {
  static const std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const auto* e = std::find_if(std::begin(kEntities), std::end(kEntities),
                                 [&](const auto& entity) { return std::string_view(text).substr(i).starts_with(entity.first); });
    const bool escaped = e != std::end(kEntities);
    out += escaped ? e->second : text[i];
    i += escaped ? e->first.size() : 1;
  }
  return out;
}

// The text of the first <tag>...</tag> inside [from, to) of xml into `text`; false if there is none.
bool xml_element(const std::string& xml, const std::string& tag, size_t from, size_t to, std::string& text) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t start = xml.find(open, from);
  if (start == std::string::npos || start >= to) return false;
  const size_t end = xml.find(close, start);
  if (end == std::string::npos || end > to) return false;
  text = xml_unescape(xml.substr(start + open.size(), end - start - open.size()));
  return true;
}

// Each <tag>...</tag> block's [begin, end) in xml.
std::vector<std::pair<size_t, size_t>> xml_blocks(const std::string& xml, const std::string& tag) {
  std::vector<std::pair<size_t, size_t>> blocks;
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    const size_t end = xml.find(close, at);
    if (end == std::string::npos) break;
    blocks.emplace_back(at, end + close.size());
    at = end + close.size();
  }
  return blocks;
}

[[noreturn]] void bad_listing(const std::string& where, const std::string& why) {
  throw RuntimeError("blob storage: listing " + where + ": " + why);
}

// An object's <Size>: decimal digits only (S3 sends a byte count), so a negative, signed,
// fractional or garbled size is a bad listing rather than a number strtoll half-read.
int64_t object_size(const std::string& text, const std::string& where, const std::string& key) {
  const bool digits = !text.empty() && text.size() <= 18 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!digits) bad_listing(where, "object '" + key + "' has size '" + text.substr(0, 40) + "', not a byte count (decimal digits)");
  return std::strtoll(text.c_str(), nullptr, 10);
}

}  // namespace

S3ListPage parse_s3_list_page(const std::string& xml, const std::string& prefix, const std::string& where) {
  if (xml.find("<ListBucketResult") == std::string::npos)
    bad_listing(where, "the server's answer is not an S3 ListObjectsV2 result (no <ListBucketResult>)");
  S3ListPage page;
  std::string text;
  page.truncated = xml_element(xml, "IsTruncated", 0, xml.size(), text) && text == "true";
  if (page.truncated && !xml_element(xml, "NextContinuationToken", 0, xml.size(), page.next_token))
    bad_listing(where, "a truncated page without a NextContinuationToken");
  for (const auto& [begin, end] : xml_blocks(xml, "Contents")) {
    std::string key, size;
    if (!xml_element(xml, "Key", begin, end, key)) bad_listing(where, "an object without a <Key>");
    if (key.compare(0, prefix.size(), prefix) != 0) bad_listing(where, "key '" + key + "' lies outside the prefix");
    StorageEntry entry{key.substr(prefix.size()), false, 0};
    if (entry.name.empty()) continue;  // the directory's own marker object ("prefix/")
    if (entry.name.find('/') != std::string::npos)
      bad_listing(where, "key '" + key + "' lies below a sub-prefix (the server ignored delimiter '/')");
    if (xml_element(xml, "Size", begin, end, size)) entry.size = object_size(size, where, key);
    page.entries.push_back(entry);
  }
  for (const auto& [begin, end] : xml_blocks(xml, "CommonPrefixes")) {
    std::string sub;
    if (!xml_element(xml, "Prefix", begin, end, sub) || sub.compare(0, prefix.size(), prefix) != 0)
      bad_listing(where, "a common prefix outside the listed prefix");
    std::string name = sub.substr(prefix.size());
    if (!name.empty() && name.back() == '/') name.pop_back();
    if (name.find('/') != std::string::npos) bad_listing(where, "common prefix '" + sub + "' is more than one level deep");
    if (!name.empty()) page.entries.push_back({name, true, 0});
  }
  return page;
}

namespace {

// A JSON reader for the flat array of flat objects nginx writes; anything else is refused.
class AutoindexReader {
 public:
  AutoindexReader(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  std::vector<StorageEntry> entries() {
    std::vector<StorageEntry> out;
    expect('[');
    if (peek() == ']') return finish(out);
    for (;;) {
      StorageEntry entry;
      std::string type;
      read_object(entry, type);
      if (type == "file" || type == "directory") {
        entry.directory = type == "directory";
        if (entry.name.empty() || entry.name.find('/') != std::string::npos) fail("an entry with a bad name");
        out.push_back(entry);
      }
      if (peek() == ']') return finish(out);
      expect(',');
    }
  }

 private:
  std::vector<StorageEntry> finish(std::vector<StorageEntry>& out) {
    expect(']');
    if (peek() != '\0') fail("text after the listing");
    return out;
  }

  void read_object(StorageEntry& entry, std::string& type) {
    expect('{');
    if (peek() == '}') return expect('}');
    for (;;) {
      const std::string key = read_string();
      expect(':');
      if (peek() == '"') {
        const std::string value = read_string();
        if (key == "name") entry.name = value;
        if (key == "type") type = value;
      } else {
        const int64_t value = read_integer();
        if (key == "size") entry.size = value;
      }
      if (peek() == '}') return expect('}');
      expect(',');
    }
  }

  std::string read_string() {
    expect('"');
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) break;
        c = s_[pos_++];
        if (c == 'u') fail("a \\u escape (nginx writes names as UTF-8)");
        if (c == 'n') c = '\n';
        if (c == 't') c = '\t';
      }
      out += c;
    }
    if (pos_ >= s_.size()) fail("an unterminated string");
    ++pos_;
    return out;
  }

  int64_t read_integer() {
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start || pos_ - start > 18) fail("a value that is neither a string nor a size");
    return std::strtoll(s_.substr(start, pos_ - start).c_str(), nullptr, 10);
  }

  char peek() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }

  [[noreturn]] void fail(const std::string& why) {
    bad_listing(where_, "not an nginx autoindex JSON listing (" + why + ")");
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<StorageEntry> parse_autoindex_json(const std::string& json, const std::string& where) {
  return AutoindexReader(json, where).entries();
}

}  // namespace ts
