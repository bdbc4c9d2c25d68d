// AWS Signature Version 4 (SigV4) for S3 requests of blob storage: the canonical request, the
// string to sign, the derived signing key and the Authorization header
// (docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html). Pure
// functions over the request's parts, so the AWS test-suite examples check them without a
// network (tests/cpp/test_s3_signing.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ts {

// The credentials of AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN. The secret
// never leaves this struct and the signature: no message, log or run file holds it.
struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none (long-term keys)
};

// One request to sign. Header names lower-case; every header listed here is signed (it must be
// sent exactly so); `host` and `x-amz-date` must be among them.
struct SigV4Request {
  std::string method;                                       // "GET", "HEAD"
  std::string canonical_uri;                                // the path, URI-encoded once ("/" at least)
  std::vector<std::pair<std::string, std::string>> query;   // decoded name, value (any order)
  std::vector<std::pair<std::string, std::string>> headers; // lower-case name, value (any order)
  std::string payload_sha256;                               // hex SHA-256 of the body ("" body: e3b0...)
};

struct SigV4Scope {
  std::string amz_date;  // "YYYYMMDDTHHMMSSZ" (UTC), the request's x-amz-date
  std::string region;    // "us-east-1"
  std::string service;   // "s3"
};

// The canonical request: method, URI, sorted encoded query, sorted headers (values trimmed),
// the signed header names and the payload hash, one per line.
std::string sigv4_canonical_request(const SigV4Request& request);
// "AWS4-HMAC-SHA256\n<date>\n<scope>\n<hex sha256 of the canonical request>".
std::string sigv4_string_to_sign(const SigV4Request& request, const SigV4Scope& scope);
// The value of the Authorization header for `request`.
std::string sigv4_authorization(const SigV4Request& request, const SigV4Scope& scope, const S3Credentials& credentials);

// "YYYYMMDDTHHMMSSZ" of a UNIX time (UTC).
std::string amz_date_of(long long unix_seconds);

}  // namespace ts
