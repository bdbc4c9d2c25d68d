// URLs of blob storage (dataset.storage: blob): `http://HOST[:PORT]/PATH`, `https://...` (plain
// HTTP(S) objects read with Range GETs) and `s3://BUCKET/KEY` (the S3 API on an endpoint). Parsed
// here once so that the storage, the signer and the tests agree on hosts, ports and encodings.
#pragma once

#include <string>
#include <string_view>

namespace ts {

struct BlobUrl {
  std::string scheme;  // "http", "https" or "s3"
  std::string host;    // http(s): the server's host name; s3: the bucket
  int port = 0;        // http(s): the port (80/443 when not written); s3: 0
  std::string path;    // after the host: "/a/b" or "" (http(s): percent-encoded as written; s3: the key, decoded)
};

// Parses `text`; throws ConfigError naming the text and the accepted forms for anything else
// (no scheme, another scheme, an empty host or bucket, a bad port, a '?' query or '#' fragment,
// or user:password@ in it: credentials come from the environment, never from a URL).
// `key` is the config key the text came from, for the message.
BlobUrl parse_blob_url(const std::string& text, const std::string& key = "dataset.root");

// True if `text` starts with http://, https:// or s3:// (a path of blob storage).
bool is_blob_url(std::string_view text);

// "host" or "host:port" (the default port of the scheme left out), for Host headers.
std::string url_authority(const BlobUrl& url);

// RFC 3986 percent-encoding as SigV4 wants it: A-Z a-z 0-9 - . _ ~ stay, every other byte is
// %XX (upper-case hex); '/' stays when keep_slash (object keys in paths).
std::string uri_encode(std::string_view text, bool keep_slash);

}  // namespace ts
