// Blob storage without a network: URL parsing and encoding, the retry policy (which responses
// are retried, the backoff, the count), the listing parsers, and BlobStorage's checks over a
// fake transport that serves one object from memory and misbehaves on cue (5xx, refused
// connections, 403/404, a changed ETag, a server that ignores Range, short bodies). The real
// servers (moto's S3, nginx) are in tests/python/test_blob_storage.py.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/blob_listing.h"
#include "data/blob_retry.h"
#include "data/blob_storage.h"
#include "data/blob_url.h"

using namespace ts;

namespace {

template <class Error, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error";
  return "";
}

// One object at any URL; `failures` are answered first (status 0: a refused connection).
class FakeServer final : public HttpTransport {
 public:
  std::string object;
  std::string etag = "\"v1\"";
  bool ignore_range = false;   // answer 200 with the whole object
  int64_t short_by = 0;        // send this many bytes less than asked
  mutable std::deque<int> failures;
  mutable std::deque<std::string> listing_pages;  // answers to ListObjectsV2 requests, in order
  mutable std::mutex mutex;
  mutable std::vector<HttpRequest> seen;  // every request, as sent (headers included)

  HttpResponse perform(const HttpRequest& request) const override {
    std::lock_guard<std::mutex> lock(mutex);
    seen.push_back(request);
    HttpResponse r;
    if (!failures.empty()) {
      r.status = failures.front();
      failures.pop_front();
      if (r.status == 0) r.transport_error = "Connection refused";
      return r;
    }
    r.status = 200;
    if (request.url.find("list-type=2") != std::string::npos) {
      r.body = listing_pages.empty() ? "" : listing_pages.front();
      if (!listing_pages.empty()) listing_pages.pop_front();
      return r;
    }
    r.headers = {{"etag", etag}};
    if (request.method == "HEAD") {
      r.headers.emplace_back("content-length", std::to_string(object.size()));
      return r;
    }
    int64_t first = 0, last = static_cast<int64_t>(object.size()) - 1;
    for (const auto& h : request.headers) {
      if (h.rfind("If-Match: ", 0) == 0 && h.substr(10) != etag) return HttpResponse{412, "", {}, "", 0, false};
      if (h.rfind("Range: bytes=", 0) == 0 && !ignore_range) {
        first = std::stoll(h.substr(13));
        last = std::stoll(h.substr(h.find('-') + 1));
        r.status = 206;
        r.headers.emplace_back("content-range", "bytes " + std::to_string(first) + "-" + std::to_string(last) + "/" +
                                                    std::to_string(object.size()));
      }
    }
    const int64_t n = last - first + 1 - short_by;
    std::copy_n(object.data() + first, std::min(n, request.body_capacity), request.body_dst);
    r.body_bytes = n;
    r.body_overflow = n > request.body_capacity;
    return r;
  }
};

struct Fixture {
  std::shared_ptr<FakeServer> server = std::make_shared<FakeServer>();
  std::vector<double> sleeps;
  BlobOptions options() {
    BlobOptions o;
    o.transport = server;
    o.retry.sleep = [this](double s) { sleeps.push_back(s); };
    return o;
  }
};

std::string pattern(size_t bytes) {
  std::string s(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) s[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return s;
}

}  // namespace

TEST(BlobUrl, ParsesTheThreeForms) {
  const BlobUrl a = parse_blob_url("http://127.0.0.1:8080/data/fashion");
  EXPECT_EQ(a.scheme, "http");
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 8080);
  EXPECT_EQ(a.path, "/data/fashion");
  EXPECT_EQ(url_authority(a), "127.0.0.1:8080");
  const BlobUrl b = parse_blob_url("https://example.org");
  EXPECT_EQ(b.port, 443);
  EXPECT_EQ(b.path, "");
  EXPECT_EQ(url_authority(b), "example.org");
  const BlobUrl c = parse_blob_url("s3://bucket/prefix/train-images-idx3-ubyte");
  EXPECT_EQ(c.host, "bucket");
  EXPECT_EQ(c.path, "/prefix/train-images-idx3-ubyte");
  EXPECT_TRUE(is_blob_url("s3://b"));
  EXPECT_FALSE(is_blob_url("/usr/share/datasets"));
}

TEST(BlobUrl, RefusesWhatItCannotRead) {
  for (const char* bad : {"/data", "ftp://host/x", "http://", "http://host:0/x", "http://host:99999/x",
                          "http://host:port/x", "s3:///key", "http://host/x?list=1"}) {
    const std::string msg = error_of<ConfigError>([&] { parse_blob_url(bad); });
    EXPECT_NE(msg.find(std::string("dataset.root '") + bad + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("accepted: http://HOST[:PORT]/PREFIX"), std::string::npos) << msg;
  }
}

TEST(BlobUrl, CredentialsInAUrlAreRefusedAndNotRepeated) {
  const std::string msg = error_of<ConfigError>([] { parse_blob_url("http://user:pa55word@host/x"); });
  EXPECT_NE(msg.find("'http://***@host/x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("user information"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("pa55word"), std::string::npos) << msg;
}

TEST(BlobUrl, UriEncodeAsSigV4Wants) {
  EXPECT_EQ(uri_encode("a b/c~d_e.f-g", true), "a%20b/c~d_e.f-g");
  EXPECT_EQ(uri_encode("a b/c", false), "a%20b%2Fc");
  EXPECT_EQ(uri_encode("\xc3\xa9+=", false), "%C3%A9%2B%3D");
}

TEST(BlobRetry, RetriesOnlyTransportFailuresAnd5xx) {
  EXPECT_TRUE(is_retryable(HttpResponse{0, "Connection refused"}));
  EXPECT_TRUE(is_retryable(HttpResponse{500}));
  EXPECT_TRUE(is_retryable(HttpResponse{503}));
  EXPECT_TRUE(is_retryable(HttpResponse{429}));
  for (int status : {200, 206, 403, 404, 412, 416}) EXPECT_FALSE(is_retryable(HttpResponse{status})) << status;
  HttpResponse untrusted{0, "SSL certificate problem: self-signed certificate"};
  untrusted.transport_permanent = true;
  EXPECT_FALSE(is_retryable(untrusted));
  RetryPolicy p;
  EXPECT_DOUBLE_EQ(backoff_delay(p, 1), 0.25);
  EXPECT_DOUBLE_EQ(backoff_delay(p, 2), 0.5);
  EXPECT_DOUBLE_EQ(backoff_delay(p, 5), 4.0);
  EXPECT_DOUBLE_EQ(backoff_delay(p, 9), 4.0);  // capped
}

TEST(BlobRetry, CountsRetriesAndStopsAtTheBound) {
  FakeServer server;
  server.object = "abc";
  server.failures = {500, 0};
  std::vector<double> sleeps;
  RetryPolicy policy;
  policy.sleep = [&](double s) { sleeps.push_back(s); };
  std::atomic<int64_t> retries{0};
  HttpRequest head;
  head.method = "HEAD";
  EXPECT_EQ(perform_with_retries(server, head, policy, "http://h/x", retries).status, 200);
  EXPECT_EQ(retries.load(), 2);
  EXPECT_EQ(sleeps, (std::vector<double>{0.25, 0.5}));
  server.failures = {403};
  EXPECT_EQ(perform_with_retries(server, head, policy, "http://h/x", retries).status, 403);
  EXPECT_EQ(retries.load(), 2);  // a 403 is final
  server.failures = {503, 503, 503, 503, 503, 503};
  EXPECT_EQ(perform_with_retries(server, head, policy, "http://h/x", retries).status, 503);
  EXPECT_EQ(retries.load(), 2 + 4);  // 5 attempts: 4 retries
  EXPECT_EQ(server.failures.size(), 1u);
}

TEST(BlobStorage, ReadsExactRangesAndSplitsLargeReads) {
  Fixture f;
  f.server->object = pattern(10000);
  BlobOptions o = f.options();
  o.parallel_threshold = 1000;
  o.part_bytes = 300;
  BlobStorage storage(o);
  auto file = storage.open("http://127.0.0.1:1/data/x.bin");
  EXPECT_EQ(file->size(), 10000);
  std::string small(100, '\0');
  file->read_at(17, 100, small.data());
  EXPECT_EQ(small, f.server->object.substr(17, 100));
  f.server->seen.clear();
  std::string large(9000, '\0');
  file->read_at(500, 9000, large.data());
  EXPECT_EQ(large, f.server->object.substr(500, 9000));
  EXPECT_EQ(f.server->seen.size(), 30u);  // 9000 bytes in ranges of 300
  for (const auto& r : f.server->seen) EXPECT_EQ(r.headers.back(), "If-Match: \"v1\"");
  file->read_at(0, 0, nullptr);
  EXPECT_NE(error_of<RuntimeError>([&] { file->read_at(9990, 11, small.data()); }).find("outside the object's 10000"),
            std::string::npos);
}

TEST(BlobStorage, RetriesAreCountedAndFailuresNameTheUrl) {
  Fixture f;
  f.server->object = pattern(64);
  BlobStorage storage(f.options());
  const std::string url = "http://127.0.0.1:1/data/x.bin";
  auto file = storage.open(url);
  f.server->failures = {500, 500};
  std::string got(64, '\0');
  file->read_at(0, 64, got.data());
  EXPECT_EQ(got, f.server->object);
  EXPECT_EQ(storage.retries(), 2);
  f.server->failures = {0, 0, 0, 0, 0};
  std::string msg = error_of<RuntimeError>([&] { file->read_at(0, 8, got.data()); });
  EXPECT_NE(msg.find(url), std::string::npos) << msg;
  EXPECT_NE(msg.find("after 5 attempt(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Connection refused"), std::string::npos) << msg;
  EXPECT_EQ(storage.retries(), 6);
  f.server->failures = {404};
  msg = error_of<RuntimeError>([&] { storage.open(url); });
  EXPECT_NE(msg.find(url + ": HEAD (size and ETag) failed: no such object (HTTP 404)"), std::string::npos) << msg;
  f.server->failures = {404, 404};
  EXPECT_FALSE(storage.exists(url));
  f.server->failures = {403};
  msg = error_of<RuntimeError>([&] { storage.exists(url); });
  EXPECT_NE(msg.find("access denied (HTTP 403)"), std::string::npos) << msg;
}

TEST(BlobStorage, RefusesAChangedOrMisbehavingObject) {
  Fixture f;
  f.server->object = pattern(64);
  BlobStorage storage(f.options());
  auto file = storage.open("http://h:1/x");
  std::string got(64, '\0');
  f.server->etag = "\"v2\"";  // replaced after open: If-Match fails
  EXPECT_NE(error_of<RuntimeError>([&] { file->read_at(0, 8, got.data()); }).find("changed since it was opened"),
            std::string::npos);
  f.server->etag = "\"v1\"";
  f.server->ignore_range = true;
  EXPECT_NE(error_of<RuntimeError>([&] { file->read_at(8, 8, got.data()); }).find("ignored the Range header"),
            std::string::npos);
  file->read_at(0, 64, got.data());  // the whole object: 200 is the right answer
  EXPECT_EQ(got, f.server->object);
  f.server->ignore_range = false;
  f.server->short_by = 3;
  EXPECT_NE(error_of<RuntimeError>([&] { file->read_at(8, 8, got.data()); }).find("sent 5 bytes instead of 8"),
            std::string::npos);
}

TEST(BlobStorage, SignsS3RequestsWithoutLeakingTheSecret) {
  Fixture f;
  f.server->object = pattern(10);
  BlobOptions o = f.options();
  o.endpoint = "http://127.0.0.1:9000";
  o.credentials = {"AKIDTEST", "sEcReT/never+shown", "token-1"};
  o.clock = [] { return 1440938160LL; };
  BlobStorage storage(o);
  f.server->failures = {403};
  const std::string msg = error_of<RuntimeError>([&] { storage.open("s3://bucket/pre fix/x.bin"); });
  EXPECT_NE(msg.find("s3://bucket/pre fix/x.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("sEcReT"), std::string::npos) << msg;
  const HttpRequest& sent = f.server->seen.back();
  EXPECT_EQ(sent.url, "http://127.0.0.1:9000/bucket/pre%20fix/x.bin");
  std::string headers;
  for (const auto& h : sent.headers) headers += h + "\n";
  EXPECT_NE(headers.find("Host: 127.0.0.1:9000\n"), std::string::npos) << headers;
  EXPECT_NE(headers.find("x-amz-date: 20150830T123600Z\n"), std::string::npos) << headers;
  EXPECT_NE(headers.find("x-amz-security-token: token-1\n"), std::string::npos) << headers;
  EXPECT_NE(headers.find("Authorization: AWS4-HMAC-SHA256 Credential=AKIDTEST/20150830/us-east-1/s3/aws4_request, "
                         "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="),
            std::string::npos)
      << headers;
  EXPECT_EQ(headers.find("sEcReT"), std::string::npos);
}

TEST(BlobStorage, S3ListingFollowsContinuationTokens) {
  Fixture f;
  BlobOptions o = f.options();
  o.endpoint = "http://127.0.0.1:9000";
  BlobStorage storage(o);
  const std::string head = "<ListBucketResult><Prefix>d/</Prefix>";
  f.server->listing_pages = {
      head + "<IsTruncated>true</IsTruncated><NextContinuationToken>next+1</NextContinuationToken>"
             "<Contents><Key>d/b.bin</Key><Size>2</Size></Contents></ListBucketResult>",
      head + "<IsTruncated>false</IsTruncated><Contents><Key>d/a.bin</Key><Size>1</Size></Contents>"
             "<CommonPrefixes><Prefix>d/c/</Prefix></CommonPrefixes></ListBucketResult>"};
  const auto entries = storage.list("s3://bucket/d");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "a.bin");  // sorted over both pages
  EXPECT_EQ(entries[1].name, "b.bin");
  EXPECT_EQ(entries[2].name, "c");
  EXPECT_TRUE(entries[2].directory);
  ASSERT_EQ(f.server->seen.size(), 2u);
  EXPECT_EQ(f.server->seen[0].url, "http://127.0.0.1:9000/bucket?delimiter=%2F&list-type=2&prefix=d%2F");
  EXPECT_EQ(f.server->seen[1].url,
            "http://127.0.0.1:9000/bucket?continuation-token=next%2B1&delimiter=%2F&list-type=2&prefix=d%2F");
  // The bucket itself: no HEAD of an empty key, one listing of the top level.
  f.server->seen.clear();
  f.server->listing_pages = {"<ListBucketResult><Contents><Key>x</Key></Contents></ListBucketResult>"};
  EXPECT_TRUE(storage.exists("s3://bucket"));
  ASSERT_EQ(f.server->seen.size(), 1u);
  EXPECT_EQ(f.server->seen[0].url, "http://127.0.0.1:9000/bucket?delimiter=%2F&list-type=2&max-keys=1&prefix=");
}

TEST(BlobListing, S3PagesGiveFilesAndDirectories) {
  const std::string xml =
      "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name><Prefix>d/</Prefix><IsTruncated>true</IsTruncated>"
      "<NextContinuationToken>t&amp;1</NextContinuationToken>"
      "<Contents><Key>d/</Key><Size>0</Size></Contents>"
      "<Contents><Key>d/a&amp;b.bin</Key><ETag>&quot;x&quot;</ETag><Size>12</Size></Contents>"
      "<CommonPrefixes><Prefix>d/sub/</Prefix></CommonPrefixes></ListBucketResult>";
  const S3ListPage page = parse_s3_list_page(xml, "d/", "s3://b/d");
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_token, "t&1");
  ASSERT_EQ(page.entries.size(), 2u);
  EXPECT_EQ(page.entries[0].name, "a&b.bin");
  EXPECT_EQ(page.entries[0].size, 12);
  EXPECT_FALSE(page.entries[0].directory);
  EXPECT_EQ(page.entries[1].name, "sub");
  EXPECT_TRUE(page.entries[1].directory);
  EXPECT_NE(error_of<RuntimeError>([] { parse_s3_list_page("<html/>", "", "s3://b/d"); }).find("s3://b/d"),
            std::string::npos);
}

// A <Size> that is not decimal digits (negative, signed, garbled: a fuzzed page's "-2</Si<eS>...")
// is a bad listing naming the object, not a number strtoll half-read.
TEST(BlobListing, S3SizesMustBeByteCounts) {
  for (const std::string size : {"-2", "+5", "1e3", "12abc", "", "99999999999999999999"}) {
    const std::string xml = "<ListBucketResult><Contents><Key>d/a.bin</Key><Size>" + size + "</Size></Contents></ListBucketResult>";
    const std::string message = error_of<RuntimeError>([&] { parse_s3_list_page(xml, "d/", "s3://b/d"); });
    EXPECT_NE(message.find("object 'd/a.bin' has size '" + size + "', not a byte count"), std::string::npos) << message;
  }
}

TEST(BlobListing, NginxAutoindexJson) {
  const std::string json =
      "[\n{ \"name\":\"train-images-idx3-ubyte\", \"type\":\"file\", \"mtime\":\"Mon, 23 Nov 2026 02:00:00 GMT\", "
      "\"size\":47040016 },\n{ \"name\":\"class \\\"0\\\"\", \"type\":\"directory\", \"mtime\":\"x\" },\n"
      "{ \"name\":\"dangling\", \"type\":\"other\", \"mtime\":\"x\" }\n]\n";
  const auto entries = parse_autoindex_json(json, "http://h/d");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "train-images-idx3-ubyte");
  EXPECT_EQ(entries[0].size, 47040016);
  EXPECT_EQ(entries[1].name, "class \"0\"");
  EXPECT_TRUE(entries[1].directory);
  EXPECT_TRUE(parse_autoindex_json(" [ ] ", "http://h/d").empty());
  for (const char* bad : {"", "<html>", "[{\"name\":\"a\",\"type\":\"file\"}", "[{\"name\":\"a/b\",\"type\":\"file\"}]",
                          "[{\"name\":\"a\",\"type\":\"file\",\"size\":-1}]", "[] x"}) {
    const std::string msg = error_of<RuntimeError>([&] { parse_autoindex_json(bad, "http://h/d"); });
    EXPECT_NE(msg.find("listing http://h/d: not an nginx autoindex JSON listing"), std::string::npos) << msg;
  }
}
