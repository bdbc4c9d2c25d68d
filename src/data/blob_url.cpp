// Blob storage URLs (see blob_url.h).
#include "data/blob_url.h"

#include <cctype>

#include "core/error.h"

namespace ts {
namespace {

// `text` with any user information before '@' masked: it may hold a password.
std::string masked(const std::string& text) {
  const size_t start = text.find("://"), at = text.find('@');
  if (start == std::string::npos || at == std::string::npos || at < start) return text;
  return text.substr(0, start + 3) + "***" + text.substr(at);
}

[[noreturn]] void refuse(const std::string& key, const std::string& text, const std::string& why) {
  throw ConfigError(key + " '" + masked(text) + "' is not a blob storage URL (" + why +
                    "); accepted: http://HOST[:PORT]/PREFIX, https://HOST[:PORT]/PREFIX or s3://BUCKET/PREFIX "
                    "(credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, never from the URL)");
}

int parse_port(const std::string& key, const std::string& text, const std::string& digits) {
  if (digits.empty() || digits.size() > 5) refuse(key, text, "the port must be 1 to 65535");
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) refuse(key, text, "the port must be a number");
  const int port = std::stoi(digits);
  if (port < 1 || port > 65535) refuse(key, text, "the port must be 1 to 65535");
  return port;
}

}  // namespace

bool is_blob_url(std::string_view text) {
  return text.starts_with("http://") || text.starts_with("https://") || text.starts_with("s3://");
}

BlobUrl parse_blob_url(const std::string& text, const std::string& key) {
  BlobUrl url;
  const size_t colon = text.find("://");
  if (colon == std::string::npos) refuse(key, text, "no scheme");
  url.scheme = text.substr(0, colon);
  if (url.scheme != "http" && url.scheme != "https" && url.scheme != "s3")
    refuse(key, text, "scheme '" + url.scheme + "'");
  const std::string rest = text.substr(colon + 3);
  if (rest.find_first_of("?#") != std::string::npos) refuse(key, text, "it has a query or fragment");
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) refuse(key, text, "it holds user information before '@'");
  if (url.scheme == "s3") {
    if (authority.empty()) refuse(key, text, "no bucket");
    url.host = authority;
    return url;
  }
  url.port = url.scheme == "https" ? 443 : 80;
  const size_t port_colon = authority.rfind(':');
  if (port_colon != std::string::npos && authority.find(']') == std::string::npos) {
    url.port = parse_port(key, text, authority.substr(port_colon + 1));
    authority.resize(port_colon);
  }
  if (authority.empty()) refuse(key, text, "no host");
  url.host = authority;
  return url;
}

std::string url_authority(const BlobUrl& url) {
  const bool default_port = (url.scheme == "http" && url.port == 80) || (url.scheme == "https" && url.port == 443);
  return default_port || url.port == 0 ? url.host : url.host + ":" + std::to_string(url.port);
}

std::string uri_encode(std::string_view text, bool keep_slash) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string out;
  for (char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace ts
