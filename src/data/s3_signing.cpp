// SigV4 request signing (see s3_signing.h).
#include "data/s3_signing.h"

#include <algorithm>
#include <ctime>

#include "core/sha256.h"
#include "core/strings.h"
#include "data/blob_url.h"

namespace ts {
namespace {

std::vector<std::pair<std::string, std::string>> sorted_headers(const SigV4Request& request) {
  auto headers = request.headers;
  std::sort(headers.begin(), headers.end());
  return headers;
}

std::string signed_header_names(const SigV4Request& request) {
  std::string names;
  for (const auto& [name, value] : sorted_headers(request)) names += (names.empty() ? "" : ";") + name;
  return names;
}

std::string credential_scope(const SigV4Scope& scope) {
  return scope.amz_date.substr(0, 8) + "/" + scope.region + "/" + scope.service + "/aws4_request";
}

}  // namespace

std::string sigv4_canonical_request(const SigV4Request& request) {
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [name, value] : request.query) query.emplace_back(uri_encode(name, false), uri_encode(value, false));
  std::sort(query.begin(), query.end());
  std::string canonical_query;
  for (const auto& [name, value] : query) canonical_query += (canonical_query.empty() ? "" : "&") + name + "=" + value;
  std::string canonical_headers;
  for (const auto& [name, value] : sorted_headers(request)) canonical_headers += name + ":" + trim(value) + "\n";
  return request.method + "\n" + (request.canonical_uri.empty() ? "/" : request.canonical_uri) + "\n" +
         canonical_query + "\n" + canonical_headers + "\n" + signed_header_names(request) + "\n" +
         request.payload_sha256;
}

std::string sigv4_string_to_sign(const SigV4Request& request, const SigV4Scope& scope) {
  const std::string canonical = sigv4_canonical_request(request);
  return "AWS4-HMAC-SHA256\n" + scope.amz_date + "\n" + credential_scope(scope) + "\n" +
         sha256_hex(canonical.data(), canonical.size());
}

std::string sigv4_authorization(const SigV4Request& request, const SigV4Scope& scope, const S3Credentials& credentials) {
  // The signing key: the secret chained through date, region, service and "aws4_request".
  auto key = hmac_sha256("AWS4" + credentials.secret_access_key, scope.amz_date.substr(0, 8));
  for (const std::string& part : {scope.region, scope.service, std::string("aws4_request")})
    key = hmac_sha256(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()), part);
  const std::string signature =
      hex_of(hmac_sha256(std::string_view(reinterpret_cast<const char*>(key.data()), key.size()),
                         sigv4_string_to_sign(request, scope)));
  return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + credential_scope(scope) +
         ", SignedHeaders=" + signed_header_names(request) + ", Signature=" + signature;
}

std::string amz_date_of(long long unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[20];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

}  // namespace ts
