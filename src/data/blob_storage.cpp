// BlobStorage and its files (see blob_storage.h).
#include "data/blob_storage.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "core/preemption_signal.h"
#include "data/blob_listing.h"
#include "data/blob_url.h"

namespace ts {
namespace {

constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::atomic<int64_t> process_retries{0};

// A storage path as a request: what is sent, and what messages name (never a signature).
struct Target {
  bool s3 = false;
  std::string url;            // sent (s3: the endpoint's path-style URL, with the query)
  std::string shown;          // named in messages and retry lines: the path as the config wrote it
  std::string host;           // s3: the Host header that is signed
  std::string canonical_uri;  // s3: the encoded path that is signed
  std::vector<std::pair<std::string, std::string>> query;  // s3: decoded, signed
};

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::string(value) : fallback;
}

// `path` (s3://BUCKET/KEY or http(s)://...) as a request; s3 `listing`: ListObjectsV2 of the bucket.
Target target_of(const BlobOptions& o, const std::string& path, bool listing = false) {
  const BlobUrl url = parse_blob_url(path);
  Target t;
  t.shown = path;
  if (url.scheme != "s3") {
    t.url = path;
    return t;
  }
  t.s3 = true;
  const std::string endpoint = o.endpoint.empty() ? "https://s3." + o.region + ".amazonaws.com" : o.endpoint;
  const BlobUrl base = parse_blob_url(endpoint, "dataset.endpoint");
  std::string base_path = base.path;
  while (!base_path.empty() && base_path.back() == '/') base_path.pop_back();
  t.host = url_authority(base);
  const std::string key = url.path.empty() ? "" : url.path.substr(1);
  t.canonical_uri = base_path + "/" + uri_encode(url.host, false) + (listing ? "" : "/" + uri_encode(key, true));
  t.url = base.scheme + "://" + t.host + t.canonical_uri;
  return t;
}

// The key prefix of an s3:// directory path: "" for the bucket, else the key ending in '/'.
std::string s3_prefix_of(const std::string& path) {
  const BlobUrl url = parse_blob_url(path);
  std::string prefix = url.path.empty() ? "" : url.path.substr(1);
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  return prefix;
}

void add_query(Target& t, std::vector<std::pair<std::string, std::string>> query) {
  t.query = std::move(query);
  std::sort(t.query.begin(), t.query.end());
  std::string text;
  for (const auto& [name, value] : t.query)
    text += (text.empty() ? "?" : "&") + uri_encode(name, false) + "=" + uri_encode(value, false);
  t.url += text;
}

// The headers of a signed S3 request, added to `request` (its other headers are not signed).
void sign_s3(HttpRequest& request, const Target& t, const BlobOptions& o) {
  const std::string date = amz_date_of(o.clock ? o.clock() : static_cast<long long>(std::time(nullptr)));
  // A PUT's body is not hashed into the signature (S3's UNSIGNED-PAYLOAD; TLS protects it in
  // transit): hashing a checkpoint-sized body would time SHA-256, not the storage.
  const std::string payload = request.method == "PUT" ? "UNSIGNED-PAYLOAD" : kEmptySha256;
  SigV4Request s{request.method, t.canonical_uri, t.query,
                 {{"host", t.host}, {"x-amz-content-sha256", payload}, {"x-amz-date", date}}, payload};
  if (!o.credentials.session_token.empty()) s.headers.emplace_back("x-amz-security-token", o.credentials.session_token);
  for (const auto& [name, value] : s.headers) request.headers.push_back(name + ": " + value);
  request.headers.push_back("Authorization: " + sigv4_authorization(s, {date, o.region, "s3"}, o.credentials));
}

// One request with retries; s3 requests are signed afresh for every attempt.
HttpResponse send(const BlobOptions& o, std::atomic<int64_t>& retries, const Target& t, const std::string& method,
                  const std::vector<std::string>& headers, char* dst = nullptr, int64_t capacity = 0,
                  const char* upload = nullptr, int64_t upload_bytes = 0) {
  HttpRequest request;
  request.method = method;
  request.url = t.url;
  request.body_dst = dst;
  request.body_capacity = capacity;
  request.upload = upload;
  request.upload_bytes = upload_bytes;
  auto prepare = [&](HttpRequest& r) {
    r.headers = headers;
    if (t.s3) {
      r.headers.push_back("Host: " + t.host);
      if (!o.credentials.access_key_id.empty()) sign_s3(r, t, o);
    }
  };
  std::atomic<int64_t> count{0};
  HttpResponse response = perform_with_retries(*o.transport, request, o.retry, t.shown, count, prepare);
  retries.fetch_add(count.load());
  process_retries.fetch_add(count.load());
  return response;
}

// The S3 error code of an error document (<Code>NoSuchKey</Code>), "" if none.
std::string s3_error_code(const HttpResponse& r) {
  const size_t start = r.body.find("<Code>"), end = r.body.find("</Code>");
  if (start == std::string::npos || end == std::string::npos || end < start) return "";
  const std::string code = r.body.substr(start + 6, end - start - 6);
  return code.size() <= 64 && code.find_first_of("<>&\n") == std::string::npos ? " " + code : "";
}

// The error for a final response that is not a success: what it means and what to do. The
// request's headers (the signature) are never part of it.
[[noreturn]] void fail(const Target& t, const std::string& action, const HttpResponse& r, int attempts) {
  std::string why;
  if (r.status == 403) {
    why = "access denied (HTTP 403" + s3_error_code(r) + "); " +
          (t.s3 ? "check the credentials in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN), the "
                  "region (AWS_REGION) and the bucket's policy"
                : "the server refuses it; check the server's permissions");
  } else if (r.status == 404) {
    why = "no such object (HTTP 404" + s3_error_code(r) + "); check dataset.root" +
          std::string(t.s3 ? " and dataset.endpoint / AWS_ENDPOINT_URL" : "");
  } else if (r.status == 412) {
    why = "the object changed since it was opened (HTTP 412: its ETag no longer matches); rerun on data that "
          "stays unchanged during a run";
  } else if (r.status >= 300 && r.status < 400) {
    why = "a redirect (HTTP " + std::to_string(r.status) + ") to '" + r.header("location") +
          "'; blob storage does not follow redirects: set dataset.root to the final URL";
  } else if (is_retryable(r)) {
    const int made = std::max(1, attempts);  // as perform_with_retries counts them: 0 still makes one
    why = response_summary(r) + " after " + std::to_string(made) + " attempt(s) with backoff; check that the "
          "server is up and reachable";
  } else {
    why = "unexpected " + response_summary(r) + s3_error_code(r);
  }
  throw RuntimeError("data file " + t.shown + ": " + action + " failed: " + why);
}

// Reads [offset, offset + bytes) as ranges of `part` bytes, at most `parallel` in flight;
// the first failure is rethrown once all have ended.
template <class ReadRange>
void read_in_parts(int64_t offset, int64_t bytes, char* dst, int64_t part, int parallel, const ReadRange& read_range) {
  const int64_t parts = (bytes + part - 1) / part;
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (int64_t i = next++; i < parts; i = next++) {
      const int64_t begin = i * part, count = std::min(part, bytes - begin);
      try {
        read_range(offset + begin, count, dst + begin);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = parts;  // no new parts after a failure
      }
    }
  };
  std::vector<std::thread> threads;
  for (int64_t k = 1; k < std::min<int64_t>(parallel, parts); ++k) threads.emplace_back(worker);
  worker();  // the calling thread reads too
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

// "bytes A-B/TOTAL" of a 206 response, checked against the range asked for.
bool content_range_matches(const std::string& value, int64_t first, int64_t last, int64_t size) {
  return value == "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" + std::to_string(size);
}

class BlobFile final : public RandomAccessFile {
 public:
  BlobFile(std::shared_ptr<const BlobOptions> options, std::shared_ptr<std::atomic<int64_t>> retries, Target target,
           int64_t size, std::string etag)
      : options_(std::move(options)), retries_(std::move(retries)), target_(std::move(target)), size_(size),
        etag_(std::move(etag)) {}

  const std::string& path() const override { return target_.shown; }
  int64_t size() const override { return size_; }

  void read_at(int64_t offset, int64_t bytes, void* dst) const override {
    if (offset < 0 || bytes < 0 || offset + bytes > size_)
      throw RuntimeError("data file " + target_.shown + ": read of bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + bytes) + ") lies outside the object's " + std::to_string(size_) +
                         " bytes");
    if (bytes == 0) return;
    auto* out = static_cast<char*>(dst);
    const BlobOptions& o = *options_;
    if (bytes <= o.parallel_threshold) return read_range(offset, bytes, out);
    read_in_parts(offset, bytes, out, std::max<int64_t>(1, o.part_bytes), std::max(1, o.parallel_requests),
                  [this](int64_t at, int64_t count, char* to) { read_range(at, count, to); });
  }

 private:
  // One ranged GET of the object as it was opened: 206 with the asked Content-Range (or 200 for
  // the whole object), the same ETag and exactly `bytes` bytes.
  void read_range(int64_t offset, int64_t bytes, char* dst) const {
    const int64_t last = offset + bytes - 1;
    const std::string range = "bytes=" + std::to_string(offset) + "-" + std::to_string(last);
    std::vector<std::string> headers = {"Range: " + range};
    const bool strong_etag = !etag_.empty() && etag_.rfind("W/", 0) != 0;  // If-Match compares strong ETags only
    if (strong_etag) headers.push_back("If-Match: " + etag_);
    const HttpResponse r = send(*options_, *retries_, target_, "GET", headers, dst, bytes);
    const std::string action = "GET of bytes [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) + ")";
    if (r.status != 206 && !(r.status == 200 && offset == 0 && bytes == size_)) {
      if (r.status == 200)
        throw RuntimeError("data file " + target_.shown + ": " + action + ": the server ignored the Range header "
                           "(HTTP 200 with the whole object); blob storage needs a server that serves byte ranges");
      fail(target_, action, r, options_->retry.attempts);
    }
    std::string problem;
    if (r.status == 206 && !content_range_matches(r.header("content-range"), offset, last, size_))
      problem = "Content-Range '" + r.header("content-range") + "' instead of bytes " + range.substr(6) + "/" +
                std::to_string(size_);
    else if (r.body_bytes != bytes || r.body_overflow)
      problem = std::to_string(r.body_bytes) + " bytes instead of " + std::to_string(bytes);
    else if (!etag_.empty() && !r.header("etag").empty() && r.header("etag") != etag_)
      problem = "ETag " + r.header("etag") + " instead of " + etag_ + " (the object changed since it was opened)";
    if (!problem.empty()) throw RuntimeError("data file " + target_.shown + ": " + action + ": the server sent " + problem);
  }

  std::shared_ptr<const BlobOptions> options_;
  std::shared_ptr<std::atomic<int64_t>> retries_;
  Target target_;
  int64_t size_;
  std::string etag_;
};

}  // namespace

int64_t blob_retries_in_process() { return process_retries.load(); }

BlobOptions blob_options_from_environment(const std::string& endpoint) {
  BlobOptions o;
  o.endpoint = endpoint.empty() ? env_or("AWS_ENDPOINT_URL", "") : endpoint;
  if (!o.endpoint.empty()) {
    const BlobUrl url = parse_blob_url(o.endpoint, endpoint.empty() ? "AWS_ENDPOINT_URL" : "dataset.endpoint");
    if (url.scheme == "s3")
      throw ConfigError("dataset.endpoint '" + o.endpoint + "' must be an http:// or https:// URL (the S3 API's "
                        "address, e.g. http://127.0.0.1:9000), not an s3:// URL");
  }
  o.region = env_or("AWS_REGION", env_or("AWS_DEFAULT_REGION", "us-east-1"));
  o.credentials = {env_or("AWS_ACCESS_KEY_ID", ""), env_or("AWS_SECRET_ACCESS_KEY", ""),
                   env_or("AWS_SESSION_TOKEN", "")};
  return o;
}

BlobStorage::BlobStorage(BlobOptions options)
    : retries_(std::make_shared<std::atomic<int64_t>>(0)) {
  if (!options.transport) options.transport = curl_transport();
  options_ = std::make_shared<const BlobOptions>(std::move(options));
}

void BlobStorage::put(const std::string& path, const void* data, int64_t bytes) const {
  const Target t = target_of(*options_, path);
  const HttpResponse r = send(*options_, *retries_, t, "PUT", {"Content-Type: application/octet-stream"}, nullptr, 0,
                              static_cast<const char*>(data), bytes);
  if (r.status != 200 && r.status != 201 && r.status != 204) fail(t, "upload (PUT)", r, options_->retry.attempts);
}

void BlobStorage::remove(const std::string& path) const {
  const Target t = target_of(*options_, path);
  const HttpResponse r = send(*options_, *retries_, t, "DELETE", {});
  if (r.status != 200 && r.status != 202 && r.status != 204) fail(t, "delete", r, options_->retry.attempts);
}

std::unique_ptr<RandomAccessFile> BlobStorage::open(const std::string& path) const {
  const Target t = target_of(*options_, path);
  const HttpResponse r = send(*options_, *retries_, t, "HEAD", {});
  if (r.status != 200) fail(t, "HEAD (size and ETag)", r, options_->retry.attempts);
  const std::string length = r.header("content-length");
  char* end = nullptr;
  const long long size = std::strtoll(length.c_str(), &end, 10);
  if (length.empty() || *end != '\0' || size < 0)
    throw RuntimeError("data file " + path + ": the server's HEAD answer has no valid Content-Length ('" + length +
                       "'), so its size is unknown");
  return std::make_unique<BlobFile>(options_, retries_, t, size, r.header("etag"));
}

bool BlobStorage::exists(const std::string& path) const {
  const Target t = target_of(*options_, path);
  const std::string prefix = t.s3 ? s3_prefix_of(path) : "";
  if (!t.s3 || !prefix.empty()) {  // an object (the bucket itself has no key to HEAD)
    const HttpResponse r = send(*options_, *retries_, t, "HEAD", {});
    if (r.status == 200) return true;
    const bool redirect = r.status >= 300 && r.status < 400;  // nginx: "dir" redirects to "dir/"
    if (r.status != 404 && !(redirect && !t.s3)) fail(t, "HEAD", r, options_->retry.attempts);
  }
  if (t.s3) {  // a "directory": some key under the prefix
    Target listing = target_of(*options_, path, true);
    add_query(listing, {{"list-type", "2"}, {"prefix", prefix}, {"delimiter", "/"}, {"max-keys", "1"}});
    const HttpResponse page = send(*options_, *retries_, listing, "GET", {});
    if (page.status != 200) fail(listing, "ListObjectsV2", page, options_->retry.attempts);
    return page.body.find("<Contents>") != std::string::npos || page.body.find("<CommonPrefixes>") != std::string::npos;
  }
  const Target dir = target_of(*options_, join_storage_path(path, ""));  // nginx answers a directory at "path/"
  return send(*options_, *retries_, dir, "HEAD", {}).status == 200;
}

std::vector<StorageEntry> BlobStorage::list(const std::string& dir) const {
  std::vector<StorageEntry> entries;
  const Target t = target_of(*options_, dir);
  if (t.s3) {
    const std::string prefix = s3_prefix_of(dir);
    std::string token;
    do {
      stop_if_signalled_during_startup(
          [&] { return "listing " + dir + ", " + std::to_string(entries.size()) + " objects so far"; });
      Target listing = target_of(*options_, dir, true);
      std::vector<std::pair<std::string, std::string>> query = {{"list-type", "2"}, {"prefix", prefix}, {"delimiter", "/"}};
      if (!token.empty()) query.emplace_back("continuation-token", token);
      add_query(listing, query);
      const HttpResponse r = send(*options_, *retries_, listing, "GET", {});
      if (r.status != 200) fail(listing, "ListObjectsV2", r, options_->retry.attempts);
      S3ListPage page = parse_s3_list_page(r.body, prefix, dir);
      entries.insert(entries.end(), page.entries.begin(), page.entries.end());
      token = page.truncated ? page.next_token : "";
    } while (!token.empty());
  } else {
    const Target listing = target_of(*options_, join_storage_path(dir, ""));
    const HttpResponse r = send(*options_, *retries_, listing, "GET", {"Accept: application/json"});
    if (r.status != 200) fail(listing, "listing", r, options_->retry.attempts);
    if (r.header("content-type").find("json") == std::string::npos)
      throw RuntimeError("data directory " + dir + ": plain HTTP cannot list a directory unless the server sends a "
                         "JSON listing (nginx: `autoindex on; autoindex_format json;`), and this one sent '" +
                         r.header("content-type") + "'; formats that name their files need no listing (idx, "
                         "cifar_bin, records with an index, hdf5), or use an S3 endpoint (s3://BUCKET/PREFIX)");
    entries = parse_autoindex_json(r.body, dir);
  }
  std::sort(entries.begin(), entries.end(), [](const StorageEntry& a, const StorageEntry& b) { return a.name < b.name; });
  return entries;
}

}  // namespace ts
