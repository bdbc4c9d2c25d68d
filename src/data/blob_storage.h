// Object storage as a Storage (dataset.storage: blob): paths are URLs, `http(s)://HOST[:PORT]/KEY`
// (plain HTTP(S): HEAD for size and ETag, Range GETs) or `s3://BUCKET/KEY` (the S3 API,
// path-style, signed with SigV4: HeadObject, GetObject with Range, ListObjectsV2 with delimiter
// '/'). open() fixes the object's size and ETag; every read is a ranged GET that must return
// exactly its bytes of that same object (If-Match, Content-Range, byte count); large reads are
// split into parallel ranges; transport failures and 5xx are retried (blob_retry.h).
// docs/data.md "Storage: blob (HTTP and S3)".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "data/blob_retry.h"
#include "data/http_transport.h"
#include "data/s3_signing.h"
#include "data/storage.h"

namespace ts {

struct BlobOptions {
  // s3:// paths: the S3 API's base URL (http://127.0.0.1:9000); empty: https://s3.REGION.amazonaws.com.
  std::string endpoint;
  std::string region = "us-east-1";
  S3Credentials credentials;  // empty access key: unsigned (anonymous) requests
  RetryPolicy retry;
  int64_t parallel_threshold = 4 << 20;  // reads larger than this ...
  int64_t part_bytes = 4 << 20;          // ... are split into ranges of this size ...
  int parallel_requests = 4;             // ... with at most this many in flight per read
  std::shared_ptr<const HttpTransport> transport;  // null: curl_transport()
  // The request time for SigV4 (UNIX seconds); null: the system clock. Tests fix it.
  long long (*clock)() = nullptr;
};

// Options from the environment: endpoint = `endpoint` if not empty, else AWS_ENDPOINT_URL;
// region from AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1; credentials from
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN. Throws ConfigError for an
// endpoint that is not an http(s) URL.
BlobOptions blob_options_from_environment(const std::string& endpoint);

class BlobStorage final : public Storage {
 public:
  explicit BlobStorage(BlobOptions options);
  std::string name() const override { return "blob"; }
  bool exists(const std::string& path) const override;
  std::unique_ptr<RandomAccessFile> open(const std::string& path) const override;
  std::vector<StorageEntry> list(const std::string& dir) const override;
  // Object storage only (no Storage has it): writes `bytes` bytes as the object `path` (one PUT,
  // replacing any object there), and deletes it. RuntimeError naming the path and what the
  // server answered (access denied, no such bucket, ...) when it fails after the retries.
  void put(const std::string& path, const void* data, int64_t bytes) const;
  void remove(const std::string& path) const;
  // Retries of this storage and of the files it opened so far.
  int64_t retries() const { return retries_->load(); }

 private:
  std::shared_ptr<const BlobOptions> options_;
  std::shared_ptr<std::atomic<int64_t>> retries_;
};

// Retries of every blob storage request in this process so far (one process is one rank).
int64_t blob_retries_in_process();

}  // namespace ts
